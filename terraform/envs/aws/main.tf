# Root configuration applied by `deploybench provision --backend aws` and by each attempt of
# `deploybench run --backend aws` (one state per deployment folder).
#
# Credentials and endpoints come only from the AWS standard chain (environment, shared files,
# SSO, instance role) and the standard AWS_ENDPOINT_URL* variables; nothing here names them, so
# they never reach the state, the variables file or a log.
provider "aws" {
  region = var.region
}

module "machines" {
  source = "../../modules/aws"

  run_id               = var.run_id
  name_prefix          = var.name_prefix
  machine_count        = var.machine_count
  image                = var.image
  gpu                  = var.gpu
  vcpus                = var.vcpus
  memory_gb            = var.memory_gb
  disk_gb              = var.disk_gb
  ssh_public_key       = var.ssh_public_key
  ssh_private_key_file = var.ssh_private_key_file
  owner                = var.owner
  tags                 = var.tags
  task_id              = var.task_id
  user_data            = var.user_data
  login_user           = var.login_user
  known_hosts_file     = var.known_hosts_file
  operator_cidr        = var.operator_cidr
  ami_id               = var.ami_id
  instance_type_cpu    = var.instance_type_cpu
  instance_type_gpu    = var.instance_type_gpu
  spot                 = var.spot
  subnet_id            = var.subnet_id
  vpc_id               = var.vpc_id
}

output "machines" {
  description = "Contract 1 (docs/design.md): name to {host, port, user, private_key_file, backend, image, gpu_type, gpu_count, vcpus, memory_gb}."
  value       = module.machines.machines
}

output "instance_ids" {
  description = "Machine name to EC2 instance id."
  value       = module.machines.instance_ids
}

output "ami_id" {
  description = "The image the machines boot."
  value       = module.machines.ami_id
}

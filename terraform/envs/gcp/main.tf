# Root configuration applied by `deploybench provision --backend gcp` and by each attempt of
# `deploybench run --backend gcp` (one state per deployment folder).
#
# Credentials come only from Google's standard chain (GOOGLE_APPLICATION_CREDENTIALS or the
# application-default credentials of `gcloud auth application-default login`); nothing here
# names them, so they never reach the state, the variables file or a log.
provider "google" {
  project = var.project
  zone    = var.zone
}

module "machines" {
  source = "../../modules/gcp"

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
  zone                 = var.zone
  operator_cidr        = var.operator_cidr
  network              = var.network
  machine_type_cpu     = var.machine_type_cpu
  machine_type_gpu     = var.machine_type_gpu
  spot                 = var.spot
}

output "machines" {
  description = "Contract 1 (docs/design.md): name to {host, port, user, private_key_file, backend, image, gpu_type, gpu_count, vcpus, memory_gb}."
  value       = module.machines.machines
}

output "instance_ids" {
  description = "Machine name to instance id."
  value       = module.machines.instance_ids
}

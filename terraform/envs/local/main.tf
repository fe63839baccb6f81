# Root configuration applied by `deploybench provision --backend local` (one state per deployment).
module "machines" {
  source = "../../modules/local"

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
  state_dir            = var.state_dir
  python               = var.python
  ssh_ports            = var.ssh_ports
  gpu_type             = var.gpu_type
  limit_memory_mb      = var.limit_memory_mb
  limit_processes      = var.limit_processes
  limit_disk_gb        = var.limit_disk_gb
  limit_cpu_ms         = var.limit_cpu_ms
  loopback_ports       = var.loopback_ports
  lower_layers         = var.lower_layers
}

output "machines" {
  description = "Contract 1 (docs/design.md): name to {host, port, user, private_key_file, backend, image, gpu_type, gpu_count, vcpus, memory_gb}."
  value       = module.machines.machines
}

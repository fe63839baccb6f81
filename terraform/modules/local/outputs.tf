output "machines" {
  description = "Contract 1: machine name to how to reach it and what it is."
  value = {
    for i, m in terraform_data.machine : local.names[i] => {
      host             = "127.0.0.1"
      port             = m.input.port
      user             = "vm"
      private_key_file = "${var.state_dir}/machines/${local.names[i]}/id_ed25519"
      known_hosts_file = "${var.state_dir}/machines/${local.names[i]}/known_hosts"
      backend          = "local"
      image            = var.image
      gpu_type         = var.gpu ? var.gpu_type : null
      gpu_count        = var.gpu ? 1 : 0
      vcpus            = var.vcpus
      memory_gb        = var.memory_gb
    }
  }
}

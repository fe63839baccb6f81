output "machines" {
  description = "Contract 1: machine name to how to reach it and what it is."
  value = {
    for i, m in google_compute_instance.machine : local.names[i] => {
      host             = try(m.network_interface[0].access_config[0].nat_ip, m.network_interface[0].network_ip)
      port             = 22
      user             = var.login_user
      private_key_file = var.ssh_private_key_file
      # The deployment's own host key when user_data installs it, else made unseen on the first boot.
      known_hosts_file = var.known_hosts_file
      backend          = "gcp"
      image            = var.image
      gpu_type         = var.gpu ? "L4" : null
      gpu_count        = var.gpu ? 1 : 0
      vcpus            = local.shape.vcpus
      memory_gb        = local.shape.memory_gb
    }
  }
}

output "instance_ids" {
  description = "Machine name to instance id."
  value       = { for i, m in google_compute_instance.machine : local.names[i] => m.instance_id }
}

output "image" {
  description = "The image the machines boot."
  value       = local.image
}

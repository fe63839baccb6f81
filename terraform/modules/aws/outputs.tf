output "machines" {
  description = "Contract 1: machine name to how to reach it and what it is."
  value = {
    for i, m in aws_instance.machine : local.names[i] => {
      host             = m.public_ip != "" ? m.public_ip : m.private_ip
      port             = 22
      user             = var.login_user
      private_key_file = var.ssh_private_key_file
      # The deployment's own host key when user_data installs it, else made unseen on the first boot.
      known_hosts_file = var.known_hosts_file
      backend          = "aws"
      image            = var.image
      gpu_type         = local.gpu_type
      gpu_count        = local.gpu_count
      vcpus            = local.type_vcpus
      memory_gb        = local.type_memory
    }
  }
}

output "instance_ids" {
  description = "Machine name to EC2 instance id."
  value       = { for i, m in aws_instance.machine : local.names[i] => m.id }
}

output "ami_id" {
  description = "The image the machines boot."
  value       = local.ami_id
}

output "security_group_id" {
  description = "The run's security group (SSH from operator_cidr only)."
  value       = aws_security_group.ssh.id
}

# --- The shared interface (INTERFACE.md): every backend module declares these the same way. ---

variable "run_id" {
  description = "Run the machines belong to; part of every name and tag so a sweep can find them."
  type        = string
  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,39}$", var.run_id))
    error_message = "run_id must be 1-40 characters of lower-case letters, digits and dashes."
  }
}

variable "name_prefix" {
  description = "Prefix of machine names; machine i is named <name_prefix>-<i>."
  type        = string
  default     = "db"
  validation {
    condition     = can(regex("^[a-z][a-z0-9-]{0,19}$", var.name_prefix))
    error_message = "name_prefix must start with a letter: lower-case letters, digits, dashes, at most 20."
  }
}

variable "machine_count" {
  description = "How many machines to make."
  type        = number
  validation {
    condition     = var.machine_count >= 1 && var.machine_count <= 256 && floor(var.machine_count) == var.machine_count
    error_message = "machine_count must be a whole number from 1 to 256."
  }
}

variable "image" {
  description = "Logical image name: aws offers ubuntu2204 (Canonical's Ubuntu 22.04 LTS)."
  type        = string
  default     = "ubuntu2204"
  validation {
    condition     = contains(["ubuntu2204"], var.image)
    error_message = "image must be ubuntu2204 (or pin any AMI with ami_id)."
  }
}

variable "gpu" {
  description = "Whether each machine gets one GPU."
  type        = bool
  default     = false
}

variable "vcpus" {
  description = "vCPUs per machine (the paper used 16)."
  type        = number
  default     = 16
}

variable "memory_gb" {
  description = "Memory per machine in GB (the paper used 64)."
  type        = number
  default     = 64
}

variable "disk_gb" {
  description = "Root disk per machine in GB."
  type        = number
  default     = 100
  validation {
    condition     = var.disk_gb >= 8 && var.disk_gb <= 4096
    error_message = "disk_gb must be between 8 and 4096."
  }
}

variable "ssh_public_key" {
  description = "OpenSSH public key of the run, installed for the ubuntu user."
  type        = string
  validation {
    condition     = can(regex("^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp256) ", var.ssh_public_key))
    error_message = "ssh_public_key must be an OpenSSH public key line."
  }
}

variable "ssh_private_key_file" {
  description = "Path of the private key matching ssh_public_key, reported in the machines output."
  type        = string
  validation {
    condition     = length(var.ssh_private_key_file) > 0
    error_message = "ssh_private_key_file must name the private key file of the run."
  }
}

variable "owner" {
  description = "Who made the machines; a tag, and what a sweep may filter on."
  type        = string
  default     = "deploybench"
}

variable "tags" {
  description = "Extra tags (labels) for every machine."
  type        = map(string)
  default     = {}
}

# --- AWS backend only. ---

variable "operator_cidr" {
  description = "The one address block allowed to reach the machines over SSH (the operator's address as a /32)."
  type        = string
  validation {
    condition     = can(cidrhost(var.operator_cidr, 0)) && var.operator_cidr != "0.0.0.0/0"
    error_message = "operator_cidr must be a CIDR block such as 203.0.113.7/32, and never 0.0.0.0/0."
  }
}

variable "ami_id" {
  description = "Pin an AMI instead of looking up Canonical's newest Ubuntu 22.04 (null: look it up)."
  type        = string
  default     = null
  validation {
    condition     = var.ami_id == null || can(regex("^ami-[0-9a-f]{8,17}$", var.ami_id))
    error_message = "ami_id must look like ami-0123456789abcdef0."
  }
}

variable "ami_owner" {
  description = "Account that publishes the looked-up image (Canonical's)."
  type        = string
  default     = "099720109477"
}

variable "ami_name_filter" {
  description = "Name pattern of the looked-up image (Canonical's Ubuntu 22.04, amd64, SSD-backed)."
  type        = string
  default     = "ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-amd64-server-*"
}

variable "instance_type_cpu" {
  description = "Instance type of CPU machines: 16 vCPU / 64 GB, like the paper's."
  type        = string
  default     = "m6i.4xlarge"
}

variable "instance_type_gpu" {
  description = "Instance type of GPU machines: one NVIDIA L4 with 16 vCPU / 64 GB (g6 family)."
  type        = string
  default     = "g6.4xlarge"
  validation {
    condition     = can(regex("^(g6|gr6)\\.", var.instance_type_gpu))
    error_message = "instance_type_gpu must be of the g6 family (one or more NVIDIA L4)."
  }
}

variable "spot" {
  description = "Ask for spot capacity (cheaper; the machine may be reclaimed, which a run records as an infra error)."
  type        = bool
  default     = false
}

variable "spot_max_price" {
  description = "Highest hourly spot price in USD (null: up to the on-demand price)."
  type        = string
  default     = null
}

variable "subnet_id" {
  description = "Subnet for the machines (null: the default VPC's default subnet of the first zone AWS picks)."
  type        = string
  default     = null
}

variable "vpc_id" {
  description = "VPC of subnet_id, for the security group (null: the default VPC)."
  type        = string
  default     = null
}

variable "associate_public_ip" {
  description = "Give each machine a public address (the controller reaches it over SSH from operator_cidr)."
  type        = bool
  default     = true
}

variable "task_id" {
  description = "Task the machines run, as a tag (\"none\" for plain provisioning)."
  type        = string
  default     = "none"
  validation {
    condition     = can(regex("^[a-z0-9_-]{1,64}$", var.task_id))
    error_message = "task_id must be 1-64 characters of lower-case letters, digits, '_' and '-'."
  }
}

variable "user_data" {
  description = "cloud-init user data (deploybench/verify/harness_login.py): the harness's own login user and the deployment's host key. Null: the image's defaults."
  type        = string
  default     = null
  sensitive   = true
}

variable "login_user" {
  description = "The user the harness logs in as (contract 1 `user`): its own when user_data makes it, else the image's default user."
  type        = string
  default     = "ubuntu"
}

variable "known_hosts_file" {
  description = "A known_hosts file holding the host key user_data installs (written by deploybench before any connection); null when the key is made on the first boot, unseen."
  type        = string
  default     = null
}

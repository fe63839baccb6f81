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
  description = "Logical image name: gcp offers ubuntu2204 (image family ubuntu-2204-lts)."
  type        = string
  default     = "ubuntu2204"
  validation {
    condition     = contains(["ubuntu2204"], var.image)
    error_message = "image must be ubuntu2204 (or pin an image with image_self_link)."
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
  description = "OpenSSH public key of the run, put in the ssh-keys metadata for the ubuntu user."
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

# --- GCP backend only. ---

variable "zone" {
  description = "Zone of the machines; it must offer the machine types (us-central1-a has both N2 and G2/L4)."
  type        = string
  default     = "us-central1-a"
}

variable "operator_cidr" {
  description = "The one address block allowed to reach the machines over SSH (the operator's address as a /32)."
  type        = string
  validation {
    condition     = can(cidrhost(var.operator_cidr, 0)) && var.operator_cidr != "0.0.0.0/0"
    error_message = "operator_cidr must be a CIDR block such as 203.0.113.7/32, and never 0.0.0.0/0."
  }
}

variable "network" {
  description = "VPC network of the machines and of the run's firewall rule."
  type        = string
  default     = "default"
}

variable "image_family" {
  description = "Image family looked up for the boot disk (Canonical's Ubuntu 22.04 LTS)."
  type        = string
  default     = "ubuntu-2204-lts"
}

variable "image_project" {
  description = "Project that publishes image_family."
  type        = string
  default     = "ubuntu-os-cloud"
}

variable "image_self_link" {
  description = "Pin an image instead of the newest of image_family (null: look it up)."
  type        = string
  default     = null
}

variable "machine_type_cpu" {
  description = "Machine type of CPU machines: 16 vCPU / 64 GB, the paper's."
  type        = string
  default     = "n2-standard-16"
}

variable "machine_type_gpu" {
  description = "Machine type of GPU machines: g2-standard-16 comes with one NVIDIA L4 attached."
  type        = string
  default     = "g2-standard-16"
  validation {
    condition     = can(regex("^g2-standard-", var.machine_type_gpu))
    error_message = "machine_type_gpu must be a G2 type (NVIDIA L4 attached)."
  }
}

variable "spot" {
  description = "Ask for Spot capacity (cheaper; the machine may be preempted, which a run records as an infra error)."
  type        = bool
  default     = false
}

variable "task_id" {
  description = "Task the machines run, as a label (\"none\" for plain provisioning)."
  type        = string
  default     = "none"
  validation {
    condition     = can(regex("^[a-z0-9_-]{1,63}$", var.task_id))
    error_message = "task_id must be 1-63 characters of lower-case letters, digits, '_' and '-'."
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

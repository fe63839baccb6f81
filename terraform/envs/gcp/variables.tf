# Passed through to the module, which validates them (see terraform/INTERFACE.md).
variable "project" {
  description = "Google Cloud project of the machines."
  type        = string
}
variable "zone" {
  description = "Zone of the machines."
  type        = string
  default     = "us-central1-a"
}
variable "run_id" {
  description = "Run the machines belong to."
  type        = string
}
variable "name_prefix" {
  description = "Prefix of machine names."
  type        = string
  default     = "db"
}
variable "machine_count" {
  description = "How many machines to make."
  type        = number
}
variable "image" {
  description = "ubuntu2204."
  type        = string
  default     = "ubuntu2204"
}
variable "gpu" {
  description = "One NVIDIA L4 per machine (g2-standard-16)."
  type        = bool
  default     = false
}
variable "vcpus" {
  description = "vCPUs per machine (checked against the machine type)."
  type        = number
  default     = 16
}
variable "memory_gb" {
  description = "Memory per machine in GB (checked against the machine type)."
  type        = number
  default     = 64
}
variable "disk_gb" {
  description = "Boot disk size in GB."
  type        = number
  default     = 100
}
variable "ssh_public_key" {
  description = "The run's OpenSSH public key."
  type        = string
}
variable "ssh_private_key_file" {
  description = "Path of the run's private key."
  type        = string
}
variable "owner" {
  description = "Who made the machines (label deploybench-owner; sweeps filter on it)."
  type        = string
  default     = "deploybench"
}
variable "tags" {
  description = "Extra labels."
  type        = map(string)
  default     = {}
}
variable "task_id" {
  description = "Task the machines run (label deploybench-task)."
  type        = string
  default     = "none"
}
variable "operator_cidr" {
  description = "The address block allowed to SSH in (the operator's /32)."
  type        = string
}
variable "network" {
  description = "VPC network."
  type        = string
  default     = "default"
}
variable "machine_type_cpu" {
  description = "Machine type of CPU machines."
  type        = string
  default     = "n2-standard-16"
}
variable "machine_type_gpu" {
  description = "Machine type of GPU machines."
  type        = string
  default     = "g2-standard-16"
}
variable "spot" {
  description = "Ask for Spot capacity."
  type        = bool
  default     = false
}

variable "user_data" {
  description = "cloud-init user data: the harness's login user and host key (see the module)."
  type        = string
  default     = null
  sensitive   = true
}

variable "login_user" {
  description = "The user the harness logs in as."
  type        = string
  default     = "ubuntu"
}

variable "known_hosts_file" {
  description = "known_hosts file with the host key user_data installs; null if none."
  type        = string
  default     = null
}

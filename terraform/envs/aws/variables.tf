# Passed through to the module, which validates them (see terraform/INTERFACE.md).
variable "region" {
  description = "AWS region of the machines."
  type        = string
  default     = "us-east-1"
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
  description = "One NVIDIA L4 per machine (g6 family)."
  type        = bool
  default     = false
}
variable "vcpus" {
  description = "vCPUs per machine (checked against the instance type)."
  type        = number
  default     = 16
}
variable "memory_gb" {
  description = "Memory per machine in GB (checked against the instance type)."
  type        = number
  default     = 64
}
variable "disk_gb" {
  description = "Root volume size in GB."
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
  description = "Who made the machines (tag deploybench:owner; sweeps filter on it)."
  type        = string
  default     = "deploybench"
}
variable "tags" {
  description = "Extra tags."
  type        = map(string)
  default     = {}
}
variable "task_id" {
  description = "Task the machines run (tag deploybench:task)."
  type        = string
  default     = "none"
}
variable "operator_cidr" {
  description = "The address block allowed to SSH in (the operator's /32)."
  type        = string
}
variable "ami_id" {
  description = "Pinned AMI (null: Canonical's newest Ubuntu 22.04)."
  type        = string
  default     = null
}
variable "instance_type_cpu" {
  description = "Instance type of CPU machines."
  type        = string
  default     = "m6i.4xlarge"
}
variable "instance_type_gpu" {
  description = "Instance type of GPU machines."
  type        = string
  default     = "g6.4xlarge"
}
variable "spot" {
  description = "Ask for spot capacity."
  type        = bool
  default     = false
}
variable "subnet_id" {
  description = "Subnet (null: the default VPC's)."
  type        = string
  default     = null
}
variable "vpc_id" {
  description = "VPC of subnet_id (null: the default VPC)."
  type        = string
  default     = null
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

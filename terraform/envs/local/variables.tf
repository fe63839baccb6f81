# Passed through to the module, which validates them (see terraform/INTERFACE.md).
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
  description = "debian12 or debian13."
  type        = string
  default     = "debian12"
}
variable "gpu" {
  description = "Pass the host's GPU device nodes into each machine."
  type        = bool
  default     = false
}
variable "vcpus" {
  description = "vCPUs reported per machine (the host's, which local machines share)."
  type        = number
  default     = 16
}
variable "memory_gb" {
  description = "Memory reported per machine (the host's, which local machines share)."
  type        = number
  default     = 64
}
variable "disk_gb" {
  description = "Unused by the local backend (machines share the host's disk)."
  type        = number
  default     = 100
}
variable "ssh_public_key" {
  description = "Unused by the local backend (one key per machine)."
  type        = string
  default     = ""
}
variable "ssh_private_key_file" {
  description = "Unused by the local backend (one key per machine)."
  type        = string
  default     = ""
}
variable "owner" {
  description = "Who made the machines."
  type        = string
  default     = "deploybench"
}
variable "tags" {
  description = "Extra tags."
  type        = map(string)
  default     = {}
}
variable "state_dir" {
  description = "Host folder of the machines' state."
  type        = string
}
variable "python" {
  description = "Interpreter with the deploybench package."
  type        = string
}
variable "ssh_ports" {
  description = "One free loopback port per machine."
  type        = list(number)
}
variable "limit_memory_mb" {
  type    = number
  default = 0
}

variable "limit_processes" {
  type    = number
  default = 0
}

variable "limit_disk_gb" {
  type    = number
  default = 0
}

variable "loopback_ports" {
  type    = list(number)
  default = []
}

variable "gpu_type" {
  description = "GPU model reported when gpu is true."
  type        = string
  default     = "host-gpu"
}

variable "limit_cpu_ms" {
  description = "CPU time each machine may use per 100 ms (its cgroup's CFS quota, in ms: 100 per CPU); 0 for none."
  type        = number
  default     = 0
}

variable "lower_layers" {
  type    = list(string)
  default = []
}

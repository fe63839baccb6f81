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
  description = "Logical image name; each backend lists the ones it offers."
  type        = string
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
  description = "Public key installed for the login user (the local backend makes one key per machine instead)."
  type        = string
  default     = ""
}

variable "ssh_private_key_file" {
  description = "Path of the private key matching ssh_public_key, reported in the machines output."
  type        = string
  default     = ""
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

# --- Local backend only. ---

variable "state_dir" {
  description = "Host folder where machines keep their overlay, keys and process ids."
  type        = string
}

variable "python" {
  description = "Python interpreter that has the deploybench package (runs deploybench.local.machine)."
  type        = string
}

variable "ssh_ports" {
  description = "Free loopback ports for each machine's sshd, one per machine, chosen by the caller."
  type        = list(number)
  validation {
    condition     = alltrue([for p in var.ssh_ports : p >= 1024 && p <= 65535])
    error_message = "ssh_ports must be unprivileged ports (1024-65535)."
  }
}

variable "limit_memory_mb" {
  description = "Memory each machine may use, in MiB (its cgroup's limit); 0 for none."
  type        = number
  default     = 0
}

variable "limit_processes" {
  description = "Processes and threads each machine may have at once (its cgroup's pids.max); 0 for none."
  type        = number
  default     = 0
}

variable "limit_disk_gb" {
  description = "Size of each machine's writable layer in GiB (a file system of that size); 0 for none."
  type        = number
  default     = 0
}

variable "loopback_ports" {
  description = "Ports of the host's loopback each machine reaches at its own 127.0.0.1 (the agent's model endpoint); no other port of the host's loopback is reachable."
  type        = list(number)
  default     = []
}

variable "gpu_type" {
  description = "GPU model reported for machines when gpu is true (the host's own GPU)."
  type        = string
  default     = "host-gpu"
}

variable "limit_cpu_ms" {
  description = "CPU time each machine may use per 100 ms (its cgroup's CFS quota, in ms: 100 per CPU); 0 for none."
  type        = number
  default     = 0
}

variable "lower_layers" {
  description = "Read-only host folders laid under each machine's own writable layer, over its image (an agent scaffold's cached prefix); the machine's writes to them stay in its own layer."
  type        = list(string)
  default     = []
}

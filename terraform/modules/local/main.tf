locals {
  names = [for i in range(var.machine_count) : "${var.name_prefix}-${var.run_id}-${i}"]
}

# One terraform_data per machine: creating it boots the machine, destroying it ends every
# process of the machine. The machine outlives Terraform; its state folder tracks it.
resource "terraform_data" "machine" {
  count = var.machine_count

  input = {
    name      = local.names[count.index]
    port      = var.ssh_ports[count.index]
    python    = var.python
    state_dir = var.state_dir
    image     = var.image
    gpu       = var.gpu
    memory_mb = var.limit_memory_mb
    processes = var.limit_processes
    disk_gb   = var.limit_disk_gb
    cpu_ms    = var.limit_cpu_ms
    loopback  = var.loopback_ports
    layers    = var.lower_layers
  }

  lifecycle {
    precondition {
      condition     = length(var.ssh_ports) == var.machine_count
      error_message = "ssh_ports must hold one port per machine."
    }
  }

  provisioner "local-exec" {
    command = join(" ", concat([
      self.input.python, "-m", "deploybench.local.machine", "up",
      "--state-dir", self.input.state_dir, "--name", self.input.name,
      "--port", tostring(self.input.port), "--image", self.input.image,
      self.input.gpu ? "--gpu" : "--no-gpu",
      "--memory-mb", tostring(self.input.memory_mb), "--max-processes", tostring(self.input.processes),
      "--disk-gb", tostring(self.input.disk_gb), "--cpu-ms", tostring(self.input.cpu_ms),
      "--tag", "run=${var.run_id}", "--tag", "owner=${var.owner}",
      ], [for p in self.input.loopback : "--loopback-port ${p}"],
    [for l in self.input.layers : "--lower-layer ${l}"]))
  }

  provisioner "local-exec" {
    when = destroy
    command = join(" ", [
      self.input.python, "-m", "deploybench.local.machine", "down",
      "--state-dir", self.input.state_dir, "--name", self.input.name,
    ])
  }
}

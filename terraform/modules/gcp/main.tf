locals {
  names        = [for i in range(var.machine_count) : "${var.name_prefix}-${var.run_id}-${i}"]
  machine_type = var.gpu ? var.machine_type_gpu : var.machine_type_cpu
  image        = var.image_self_link != null ? var.image_self_link : data.google_compute_image.ubuntu[0].self_link
  network_tag  = "${var.name_prefix}-${var.run_id}"

  # Shapes of the types this module knows; a type outside the table is reported as asked.
  shapes = {
    "n2-standard-16" = { vcpus = 16, memory_gb = 64, gpus = 0 }
    "g2-standard-16" = { vcpus = 16, memory_gb = 64, gpus = 1 }
  }
  shape = lookup(local.shapes, local.machine_type, { vcpus = var.vcpus, memory_gb = var.memory_gb, gpus = var.gpu ? 1 : 0 })

  # GCP label values allow only lower-case letters, digits, '_' and '-' (63 at most); a sweep
  # finds what a crashed run left by these labels.
  labels = merge(
    { for k, v in var.tags : lower(replace(k, "/[^a-zA-Z0-9_-]/", "_")) => substr(lower(replace(v, "/[^a-zA-Z0-9_-]/", "_")), 0, 63) },
    {
      "deploybench-run"   = var.run_id
      "deploybench-task"  = var.task_id
      "deploybench-owner" = substr(lower(replace(var.owner, "/[^a-zA-Z0-9_-]/", "_")), 0, 63)
    },
  )
}

# The newest image of Canonical's Ubuntu 22.04 LTS family, unless image_self_link pins one.
data "google_compute_image" "ubuntu" {
  count   = var.image_self_link == null ? 1 : 0
  family  = var.image_family
  project = var.image_project
}

resource "google_compute_firewall" "ssh" {
  name        = "${var.name_prefix}-${var.run_id}-ssh"
  network     = var.network
  description = "DeployBench run ${var.run_id}: SSH from the operator only"
  direction   = "INGRESS"

  allow {
    protocol = "tcp"
    ports    = ["22"]
  }

  source_ranges = [var.operator_cidr]
  target_tags   = [local.network_tag]
}

resource "google_compute_instance" "machine" {
  count = var.machine_count

  name         = local.names[count.index]
  zone         = var.zone
  machine_type = local.machine_type
  tags         = [local.network_tag]
  labels       = local.labels

  boot_disk {
    auto_delete = true
    initialize_params {
      image  = local.image
      size   = var.disk_gb
      type   = "pd-balanced"
      labels = local.labels
    }
  }

  network_interface {
    network = var.network
    access_config {} # an ephemeral public address; the firewall admits SSH from the operator only
  }

  # Only the run's key may log in; project-wide keys are not honoured on these machines.
  # user-data: the harness's own login user and the deployment's host key, for cloud-init
  # (deploybench/verify/harness_login.py).
  metadata = merge({
    ssh-keys               = "ubuntu:${var.ssh_public_key}"
    block-project-ssh-keys = "TRUE"
  }, var.user_data == null ? {} : { user-data = var.user_data })

  # Machines with a GPU cannot live-migrate: they must terminate on host maintenance.
  scheduling {
    on_host_maintenance = var.gpu || var.spot ? "TERMINATE" : "MIGRATE"
    automatic_restart   = !var.spot
    preemptible         = var.spot
    provisioning_model  = var.spot ? "SPOT" : "STANDARD"
  }

  # No service_account block: the machine gets no Google identity, so the agent running as
  # root on it can never obtain credentials of the operator's project.

  lifecycle {
    precondition {
      condition     = local.shape.vcpus == var.vcpus && local.shape.memory_gb == var.memory_gb
      error_message = "The machine type ${local.machine_type} does not have the vCPUs and memory asked for (vcpus, memory_gb)."
    }
    precondition {
      condition     = !var.gpu || local.shape.gpus == 1
      error_message = "A GPU machine must have exactly one GPU; ${local.machine_type} does not."
    }
  }
}

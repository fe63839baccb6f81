# `terraform test` for the aws module with a mocked provider: no cloud, no credentials.
# tests/test_terraform_interface.py runs it; tests/test_aws_backend.py runs the real provider
# against moto.

mock_provider "aws" {
  mock_data "aws_ami" {
    defaults = {
      id = "ami-0123456789abcdef0"
    }
  }
  mock_data "aws_ec2_instance_type" {
    defaults = {
      default_vcpus = 16
      memory_size   = 65536
      gpus          = []
    }
  }
  mock_resource "aws_instance" {
    defaults = {
      public_ip  = "198.51.100.10"
      private_ip = "10.0.0.10"
    }
  }
}

variables {
  run_id               = "t1"
  machine_count        = 2
  ssh_public_key       = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIE1s8bUVuPcqNR6Qc1q0y5cVg7jJxJ6a0cRU0pLqk9d0 test"
  ssh_private_key_file = "/tmp/id_ed25519"
  operator_cidr        = "203.0.113.7/32"
  owner                = "alice"
}

run "cpu_machines_follow_the_paper" {
  command = apply

  assert {
    condition     = alltrue([for m in aws_instance.machine : m.instance_type == "m6i.4xlarge"])
    error_message = "CPU machines must be m6i.4xlarge."
  }
  assert {
    condition     = length(output.machines) == 2 && output.machines["db-t1-0"].user == "ubuntu"
    error_message = "machines output must name every machine."
  }
  assert {
    condition     = output.machines["db-t1-1"].host == "198.51.100.10" && output.machines["db-t1-1"].gpu_count == 0
    error_message = "host must be the public address; CPU machines have no GPU."
  }
  assert {
    condition     = aws_instance.machine[0].root_block_device[0].volume_size == 100
    error_message = "root volume must have disk_gb."
  }
  assert {
    condition     = aws_instance.machine[0].tags["deploybench:owner"] == "alice" && aws_instance.machine[0].tags["deploybench:run"] == "t1" && aws_instance.machine[0].tags["Name"] == "db-t1-0"
    error_message = "instances must carry the run, task and owner tags."
  }
  assert {
    condition     = aws_instance.machine[0].ami == "ami-0123456789abcdef0"
    error_message = "the looked-up Canonical image must be used."
  }
  assert {
    condition     = length(aws_instance.machine[0].instance_market_options) == 0
    error_message = "on-demand unless spot is asked for."
  }
}

run "ssh_only_from_the_operator" {
  command = plan

  assert {
    condition     = length(aws_security_group.ssh.ingress) == 1
    error_message = "exactly one ingress rule."
  }
  assert {
    condition     = alltrue([for r in aws_security_group.ssh.ingress : r.from_port == 22 && r.to_port == 22 && r.protocol == "tcp" && length(r.cidr_blocks) == 1 && r.cidr_blocks[0] == "203.0.113.7/32"])
    error_message = "ingress must be SSH from operator_cidr only."
  }
}

run "gpu_machine_is_a_g6_with_one_l4" {
  command = apply

  variables {
    gpu     = true
    spot    = true
    disk_gb = 250
  }

  override_data {
    target = data.aws_ec2_instance_type.this
    values = {
      default_vcpus = 16
      memory_size   = 65536
      gpus          = [{ count = 1, manufacturer = "NVIDIA", memory_size = 22888, name = "L4" }]
    }
  }

  assert {
    condition     = aws_instance.machine[0].instance_type == "g6.4xlarge"
    error_message = "GPU machines must be g6.4xlarge."
  }
  assert {
    condition     = output.machines["db-t1-0"].gpu_type == "L4" && output.machines["db-t1-0"].gpu_count == 1
    error_message = "GPU machines report one L4."
  }
  assert {
    condition     = aws_instance.machine[0].instance_market_options[0].market_type == "spot"
    error_message = "spot = true must ask for spot capacity."
  }
  assert {
    condition     = aws_instance.machine[0].root_block_device[0].volume_size == 250
    error_message = "root volume must have disk_gb."
  }
}

run "pinned_ami_skips_the_lookup" {
  command = plan

  variables {
    ami_id = "ami-0fedcba9876543210"
  }

  assert {
    condition     = length(data.aws_ami.ubuntu) == 0 && aws_instance.machine[0].ami == "ami-0fedcba9876543210"
    error_message = "ami_id must pin the image."
  }
}

run "type_without_the_asked_shape_is_refused" {
  command = plan

  override_data {
    target = data.aws_ec2_instance_type.this
    values = {
      default_vcpus = 8
      memory_size   = 32768
      gpus          = []
    }
  }

  expect_failures = [aws_instance.machine]
}

run "ssh_open_to_the_world_is_refused" {
  command = plan

  variables {
    operator_cidr = "0.0.0.0/0"
  }

  expect_failures = [var.operator_cidr]
}

run "bad_run_id_is_refused" {
  command = plan

  variables {
    run_id = "Has_Capitals"
  }

  expect_failures = [var.run_id]
}

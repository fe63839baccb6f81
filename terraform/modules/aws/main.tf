locals {
  names         = [for i in range(var.machine_count) : "${var.name_prefix}-${var.run_id}-${i}"]
  instance_type = var.gpu ? var.instance_type_gpu : var.instance_type_cpu
  ami_id        = var.ami_id != null ? var.ami_id : data.aws_ami.ubuntu[0].id

  # A sweep finds what a crashed run left by these tags, so every resource carries them.
  tags = merge(var.tags, {
    "deploybench:run"   = var.run_id
    "deploybench:task"  = var.task_id
    "deploybench:owner" = var.owner
  })

  type_gpus   = try(data.aws_ec2_instance_type.this.gpus, [])
  gpu_count   = var.gpu ? sum(concat([0], [for g in local.type_gpus : g.count])) : 0
  gpu_type    = var.gpu && length(local.type_gpus) > 0 ? tolist(local.type_gpus)[0].name : null
  type_vcpus  = data.aws_ec2_instance_type.this.default_vcpus
  type_memory = data.aws_ec2_instance_type.this.memory_size / 1024
}

# Canonical's newest Ubuntu 22.04 image, unless ami_id pins one (e.g. for a reproducible run).
data "aws_ami" "ubuntu" {
  count       = var.ami_id == null ? 1 : 0
  most_recent = true
  owners      = [var.ami_owner]

  filter {
    name   = "name"
    values = [var.ami_name_filter]
  }

  filter {
    name   = "virtualization-type"
    values = ["hvm"]
  }

  filter {
    name   = "architecture"
    values = ["x86_64"]
  }
}

# What the chosen type really has, so the output reports it and a mismatch with the request
# fails before any machine is made.
data "aws_ec2_instance_type" "this" {
  instance_type = local.instance_type
}

resource "aws_key_pair" "run" {
  key_name   = "${var.name_prefix}-${var.run_id}"
  public_key = var.ssh_public_key
  tags       = merge(local.tags, { Name = "${var.name_prefix}-${var.run_id}" })
}

resource "aws_security_group" "ssh" {
  name        = "${var.name_prefix}-${var.run_id}-ssh"
  description = "DeployBench run ${var.run_id}: SSH from the operator only"
  vpc_id      = var.vpc_id

  ingress {
    description = "SSH from the operator address only"
    from_port   = 22
    to_port     = 22
    protocol    = "tcp"
    cidr_blocks = [var.operator_cidr]
  }

  # The agent installs drivers and packages, so the machine may reach out; nothing may reach in.
  egress {
    description = "Any outbound traffic (apt, pip, git, model APIs)"
    from_port   = 0
    to_port     = 0
    protocol    = "-1"
    cidr_blocks = ["0.0.0.0/0"]
  }

  tags = merge(local.tags, { Name = "${var.name_prefix}-${var.run_id}-ssh" })
}

resource "aws_instance" "machine" {
  count = var.machine_count

  ami                         = local.ami_id
  instance_type               = local.instance_type
  key_name                    = aws_key_pair.run.key_name
  vpc_security_group_ids      = [aws_security_group.ssh.id]
  subnet_id                   = var.subnet_id
  associate_public_ip_address = var.associate_public_ip
  # The harness's own login user and the deployment's host key (deploybench/verify/harness_login.py).
  user_data = var.user_data

  root_block_device {
    volume_size           = var.disk_gb
    volume_type           = "gp3"
    encrypted             = true
    delete_on_termination = true
    tags                  = merge(local.tags, { Name = local.names[count.index] })
  }

  dynamic "instance_market_options" {
    for_each = var.spot ? [1] : []
    content {
      market_type = "spot"
      spot_options {
        instance_interruption_behavior = "terminate"
        spot_instance_type             = "one-time"
        max_price                      = var.spot_max_price
      }
    }
  }

  # IMDSv2 only: the agent runs as root on this machine and must not lift role credentials
  # through a plain GET (the machine gets no instance role anyway).
  metadata_options {
    http_endpoint = "enabled"
    http_tokens   = "required"
  }

  tags = merge(local.tags, { Name = local.names[count.index] })

  lifecycle {
    precondition {
      condition     = local.type_vcpus == var.vcpus && local.type_memory == var.memory_gb
      error_message = "The instance type ${local.instance_type} does not have the vCPUs and memory asked for (vcpus, memory_gb)."
    }
    precondition {
      condition     = !var.gpu || local.gpu_count == 1
      error_message = "A GPU machine must have exactly one GPU; ${local.instance_type} does not."
    }
  }
}

"""A failed `terraform apply` is applied again from its state when the backend asks for it.

Runs the real Terraform binary on a small root whose one resource fails to create the first
time (a creation-time provisioner that fails once), like a cloud API's passing error."""

from __future__ import annotations

import pytest

from deploybench.backends import terraform
from deploybench.backends.terraform import Deployment
from deploybench.errors import InfraError

ROOT = """
variable "marker" {
  type = string
}

resource "terraform_data" "flaky" {
  input = var.marker

  # Fails on the first create only: the marker file is made by the failing try.
  provisioner "local-exec" {
    command = <<-EOT
      test -f ${var.marker} || { touch ${var.marker}; echo passing cloud error >&2; exit 1; }
    EOT
  }
}

output "made" {
  value = terraform_data.flaky.id
}
"""


@pytest.fixture
def flaky_root(tmp_path, state_home, monkeypatch):
    monkeypatch.setattr(terraform, "APPLY_RETRY_WAIT_S", 0)
    env = tmp_path / "env"
    env.mkdir()
    (env / "main.tf").write_text(ROOT)
    return env, {"marker": str(tmp_path / "failed-once")}


def test_a_second_apply_finishes_what_a_failed_one_began(flaky_root, tmp_path):
    env, variables = flaky_root
    folder = tmp_path / "deployment"
    outputs = Deployment(env, folder).apply(variables, attempts=2)
    assert outputs["made"]
    log = (folder / "terraform.log").read_text()
    assert "passing cloud error" in log
    assert "# apply 1 of 2 failed" in log
    # The tainted resource of the failed try was replaced, not kept beside a new one.
    assert log.count("Apply complete! Resources: 1 added") == 1
    Deployment(env, folder).destroy()


def test_with_one_attempt_the_first_failure_is_the_answer(flaky_root, tmp_path):
    env, variables = flaky_root
    folder = tmp_path / "deployment"
    with pytest.raises(InfraError, match="terraform apply failed"):
        Deployment(env, folder).apply(variables, attempts=1)
    assert "applying again" not in (folder / "terraform.log").read_text()

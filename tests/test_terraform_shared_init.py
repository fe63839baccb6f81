"""One `terraform init` per configuration, shared by every deployment of it.

Runs the real Terraform binary on a small root (one terraform_data resource, one local module):
deployments applied at once from a cold start init once between them, each keeps its own state,
and a change to the root or to its module is a new configuration with an init of its own."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from deploybench.backends import terraform
from deploybench.backends.terraform import Deployment

ROOT = """
variable "name" {
  type = string
}

module "echo" {
  source = "../mod"
  name   = var.name
}

output "name" {
  value = module.echo.name
}
"""

MODULE = """
variable "name" {
  type = string
}

resource "terraform_data" "this" {
  input = var.name
}

output "name" {
  value = terraform_data.this.output
}
"""


def _config(tmp_path):
    (tmp_path / "env").mkdir()
    (tmp_path / "mod").mkdir()
    (tmp_path / "env" / "main.tf").write_text(ROOT)
    (tmp_path / "mod" / "main.tf").write_text(MODULE)
    return tmp_path / "env"


def _inits(folders) -> int:
    return sum((f / "terraform.log").read_text().count("$ terraform init") for f in folders)


def test_deployments_applied_at_once_share_one_init_and_keep_their_own_state(tmp_path, state_home):
    env = _config(tmp_path)
    folders = [tmp_path / f"deployment{i}" for i in range(4)]

    def apply(i: int) -> dict:
        return Deployment(env, folders[i]).apply({"name": f"machine-{i}"})

    with ThreadPoolExecutor(4) as pool:
        outputs = list(pool.map(apply, range(4)))
    assert [o["name"] for o in outputs] == [f"machine-{i}" for i in range(4)]
    assert _inits(folders) == 1
    shared = terraform.shared_data_dir(env)
    assert shared.is_dir() and shared.parent == state_home / "terraform-data"
    assert [p.name for p in shared.parent.iterdir()] == [shared.name]  # no half-made one left
    # Nothing of a deployment lives in the shared folder: each state is its own.
    for i, folder in enumerate(folders):
        assert f"machine-{i}" in (folder / "terraform.tfstate").read_text()
        assert not (folder / ".terraform").exists()
    Deployment(env, folders[0]).destroy()
    assert Deployment(env, folders[1]).outputs()["name"] == "machine-1"
    for folder in folders[1:]:
        Deployment(env, folder).destroy()
    assert _inits(folders) == 1


def test_a_changed_root_or_module_gets_an_init_of_its_own(tmp_path, state_home):
    env = _config(tmp_path)
    first = terraform.shared_data_dir(env)
    Deployment(env, tmp_path / "d1").apply({"name": "a"})
    # A new module block in the root: the old data folder does not know it, so reusing it
    # would fail ("module not installed").
    (env / "more.tf").write_text('module "again" {\n  source = "../mod"\n  name = "b"\n}\n')
    second = terraform.shared_data_dir(env)
    assert second != first
    assert Deployment(env, tmp_path / "d2").apply({"name": "b"})["name"] == "b"
    assert _inits([tmp_path / "d2"]) == 1
    # A change inside the module only is a new configuration too.
    (tmp_path / "mod" / "main.tf").write_text(MODULE + "\n# changed\n")
    assert terraform.shared_data_dir(env) not in (first, second)
    Deployment(env, tmp_path / "d2").destroy()
    Deployment(env, tmp_path / "d1").destroy()


def test_an_init_killed_half_way_is_never_used(tmp_path, state_home):
    env = _config(tmp_path)
    shared = terraform.shared_data_dir(env)
    making = shared.with_name(f"{shared.name}.making")
    making.mkdir(parents=True)
    (making / "junk").write_text("an init that died here")
    folder = tmp_path / "d"
    assert Deployment(env, folder).apply({"name": "x"})["name"] == "x"
    assert _inits([folder]) == 1
    assert not making.exists() and not (shared / "junk").exists()
    Deployment(env, folder).destroy()

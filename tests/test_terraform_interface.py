"""Every module under terraform/modules against the shared interface (terraform/interface.json),
parsed with python-hcl2 so no provider is needed: this is the only check the gcp module gets
here (Google's provider cannot be installed on this workplace). Also `terraform fmt`, the
aws module's `terraform test` files (mocked provider), and the variables each backend passes
against its env's declarations."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import hcl2
import pytest

from deploybench import contracts
from deploybench.backends import MachineRequest, get_backend
from deploybench.backends.terraform import plugin_dir
from tests.conftest import require

REPO = Path(__file__).resolve().parent.parent
TF = REPO / "terraform"
INTERFACE = json.loads((TF / "interface.json").read_text())
MODULES = sorted(p for p in (TF / "modules").iterdir() if p.is_dir())


@pytest.fixture
def needs_terraform():
    require(shutil.which("terraform") is not None, "terraform on PATH")


def _unquote(name: str) -> str:
    return name.strip('"')


def _expr(value) -> str:
    """python-hcl2 wraps expressions as "${...}"; compare their bare text."""
    text = str(value)
    return text[2:-1] if text.startswith("${") and text.endswith("}") else text


def _load(folder: Path) -> dict[str, list]:
    merged: dict[str, list] = {}
    for tf in sorted(folder.glob("*.tf")):
        with open(tf) as fh:
            for key, blocks in hcl2.load(fh).items():
                if not key.startswith("__"):
                    merged.setdefault(key, []).extend(blocks)
    return merged


def _variables(folder: Path) -> dict[str, dict]:
    return {_unquote(k): v for block in _load(folder).get("variable", []) for k, v in block.items()}


def _outputs(folder: Path) -> dict[str, dict]:
    return {_unquote(k): v for block in _load(folder).get("output", []) for k, v in block.items()}


def test_every_backend_has_a_module_and_an_env():
    assert {m.name for m in MODULES} >= {"local", "aws", "gcp"}
    for module in MODULES:
        assert (TF / "envs" / module.name).is_dir(), f"terraform/envs/{module.name} missing"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_module_has_the_standard_files_and_no_provider_block(module):
    for name in INTERFACE["required_files"]:
        assert (module / name).is_file(), f"{module.name}: {name} missing"
    parsed = _load(module)
    assert "provider" not in parsed, f"{module.name}: a module must not hold a provider block"
    assert parsed.get("terraform"), f"{module.name}: versions.tf must pin required_version"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_module_declares_the_core_variables_with_their_types(module):
    variables = _variables(module)
    for name, want in INTERFACE["variables"].items():
        assert name in variables, f"{module.name}: variable {name} missing"
        assert _expr(variables[name].get("type")) == want, f"{module.name}: {name} type"
    for name, var in variables.items():
        assert "type" in var, f"{module.name}: variable {name} has no type"
        assert _unquote(str(var.get("description", ""))), f"{module.name}: {name} undescribed"


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_module_machines_output_has_contract_1_fields(module):
    outputs = _outputs(module)
    assert "machines" in outputs, f"{module.name}: output machines missing"
    value = _expr(outputs["machines"]["value"])
    # The output is a for-expression yielding one object per machine: its keys, exactly.
    body = value[value.index("=>") + 2 :]
    keys = re.findall(r"(?:\{|,)\s*([a-z_]+)\s*=(?!=)", body)
    # Contract 1 is written once, in deploybench/contracts.py: the modules follow that copy.
    assert sorted(keys) == sorted(contracts.MACHINE["required"]), f"{module.name}: {keys}"
    assert set(contracts.MACHINE["properties"]) == set(contracts.MACHINE["required"])


@pytest.mark.parametrize("module", MODULES, ids=lambda p: p.name)
def test_env_passes_every_core_variable_and_exposes_machines(module):
    env = TF / "envs" / module.name
    parsed = _load(env)
    (call,) = [v for block in parsed["module"] for v in block.values()]
    assert _unquote(call["source"]) == f"../../modules/{module.name}"
    for name in INTERFACE["variables"]:
        assert _expr(call.get(name)) == f"var.{name}", f"envs/{module.name}: {name} not passed"
    # Whatever the env passes, the module declares.
    module_vars = _variables(module)
    for name in call:
        if name not in ("source", "__is_block__"):
            assert name in module_vars, f"envs/{module.name} passes {name} the module lacks"
    assert _expr(_outputs(env)["machines"]["value"]) == "module.machines.machines"


@pytest.mark.parametrize("name", ["aws", "gcp"])
def test_cloud_env_holds_the_provider_block(name):
    (provider,) = _load(TF / "envs" / name)["provider"]
    assert {_unquote(k) for k in provider} == {{"aws": "aws", "gcp": "google"}[name]}
    body = json.dumps(provider)
    # Credentials come from the standard chains only; an env never names any.
    for word in ("access_key", "secret_key", "credentials", "token"):
        assert word not in body


def test_gcp_module_follows_the_paper():
    module = TF / "modules" / "gcp"
    variables = _variables(module)
    assert _unquote(variables["machine_type_cpu"]["default"]) == "n2-standard-16"
    assert _unquote(variables["machine_type_gpu"]["default"]) == "g2-standard-16"
    assert _unquote(variables["image_family"]["default"]) == "ubuntu-2204-lts"
    main = (module / "main.tf").read_text()
    assert 'on_host_maintenance = var.gpu || var.spot ? "TERMINATE" : "MIGRATE"' in main
    assert "source_ranges = [var.operator_cidr]" in main
    assert '"deploybench-owner"' in main and '"deploybench-run"' in main


def _declared(env: Path) -> set[str]:
    return set(_variables(env))


@pytest.mark.parametrize("name", ["aws", "gcp"])
def test_backend_passes_only_variables_its_env_declares(name, tmp_path, monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("DEPLOYBENCH_OPERATOR_CIDR", "203.0.113.7")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "demo-project")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    backend = get_backend(name)
    request = MachineRequest(run_id="r1", gpu=True, tags={"task": "gan_neurips14_gpu"})
    tfvars = backend.terraform_vars(request, tmp_path / "dep")
    env_vars = _variables(TF / "envs" / name)
    assert set(tfvars) <= set(env_vars)
    required = {k for k, v in env_vars.items() if "default" not in v}
    assert required <= set(tfvars)
    assert tfvars["operator_cidr"] == "203.0.113.7/32"
    assert tfvars["task_id"] == "gan_neurips14_gpu"
    assert tfvars["ssh_public_key"].startswith("ssh-ed25519 ")
    assert Path(tfvars["ssh_private_key_file"]).stat().st_mode & 0o077 == 0
    if name == "gcp":
        assert tfvars["project"] == "demo-project"
        assert tfvars["machine_type_gpu"] == "g2-standard-16"


def test_terraform_fmt_is_clean(needs_terraform):
    proc = subprocess.run(
        ["terraform", "fmt", "-check", "-recursive", "-diff", str(TF)],
        capture_output=True,
        text=True,
        env={"TF_CLI_CONFIG_FILE": "/dev/null", "PATH": "/usr/local/bin:/usr/bin:/bin"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.slow
def test_aws_module_terraform_test_files(tmp_path, needs_terraform):
    """`terraform test` on a copy of the module (init writes a lock file; the checkout stays
    clean), with the provider mocked: no endpoint, no credentials."""
    require(plugin_dir() is not None, "the AWS provider mirror (/opt/tf-plugins)")
    work = tmp_path / "aws"
    shutil.copytree(TF / "modules" / "aws", work)
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "TF_CLI_CONFIG_FILE": "/dev/null",
        "TF_DATA_DIR": str(tmp_path / ".terraform"),
        "TF_PLUGIN_CACHE_DIR": str(tmp_path / "cache"),
        "TF_IN_AUTOMATION": "1",
    }
    (tmp_path / "cache").mkdir()
    init = subprocess.run(
        ["terraform", "init", "-input=false", f"-plugin-dir={plugin_dir()}", "-no-color"],
        cwd=work, capture_output=True, text=True, env=env,
    )  # fmt: skip
    assert init.returncode == 0, init.stdout + init.stderr
    proc = subprocess.run(
        ["terraform", "test", "-no-color"], cwd=work, capture_output=True, text=True, env=env
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "7 passed, 0 failed" in proc.stdout

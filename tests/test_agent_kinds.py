"""Agents own their kind (deploybench/attempt/agents.py, KINDS): what each kind asks of a run."""

import pytest
import yaml

from deploybench.attempt import agents
from deploybench.attempt.ansible import Unsafe
from deploybench.errors import DeployBenchError
from tests.conftest import REPO, run_cli


def _spec(tmp_path, **fields):
    config = tmp_path / "agents.yaml"
    config.write_text(yaml.safe_dump({"mine": {"command": "run {prompt_file}", **fields}}))
    return agents.load_agent("mine", config)


def test_each_kind_says_what_it_needs(tmp_path):
    reference, nop = agents.load_agent("reference"), agents.load_agent("nop")
    command = _spec(tmp_path, model="m", max_steps=7)
    assert reference.behaviour.needs_reference_setup is True
    assert not nop.behaviour.needs_reference_setup and not command.behaviour.needs_reference_setup
    assert (command.behaviour.scaffold_memory_gb, command.behaviour.scaffold_cpus) == (4, 1)
    assert (nop.behaviour.scaffold_memory_gb, reference.behaviour.scaffold_cpus) == (0, 0)
    assert nop.extravars() == {"agent": "nop"}
    got = command.extravars()
    assert got["agent"] == "command" and got["agent_command_max_steps"] == 7
    assert isinstance(got["agent_command_line"], Unsafe)
    assert [agents.role_kind(a) for a in ("reference", "nop", "overclaim", "command")] == [
        "reference",
        "scripted",
        "scripted",
        "command",
    ]
    with pytest.raises(DeployBenchError, match="unknown agent 'mine'"):
        agents.role_kind("mine")


def test_a_spec_may_carry_its_own_budget(tmp_path):
    assert _spec(tmp_path, agent_seconds=90).agent_seconds == 90
    assert _spec(tmp_path).agent_seconds is None
    with pytest.raises(DeployBenchError, match="agent_seconds"):
        _spec(tmp_path, agent_seconds=0)


def test_an_unknown_converter_is_the_command_kinds_problem(tmp_path):
    spec = _spec(tmp_path)
    spec.converter = "nonesuch"
    (problem,) = spec.behaviour.problems(spec)
    assert "unknown converter 'nonesuch'" in problem
    assert agents.load_agent("nop").behaviour.problems(agents.load_agent("nop")) == []


@pytest.mark.parametrize(
    ("backend", "image", "says"),
    [
        ("local", None, "the image debian12 has 3.11: --image debian13 has it"),
        ("aws", "debian13", "the aws backend offers no image 'debian13'"),
        ("local", "ubuntu2204", "the local backend offers no image 'ubuntu2204'"),
    ],
)
def test_an_impossible_pairing_is_one_line_before_any_machine(runs, backend, image, says):
    spec = REPO / "agents" / "openhands.yaml"
    args = ["run", "--backend", backend, "--agent", "openhands", "--agent-config", spec]
    args += ["--tasks", "legacycalc_demo24", "--run-id", "preflight", "--yes"]
    proc = run_cli(*args, *(["--image", image] if image else []), check=False)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    assert says in line, line
    assert not (runs / "preflight").exists()


def test_a_cloud_machine_fetches_the_python_its_image_lacks_into_the_prefix():
    """Ubuntu 22.04 has Python 3.10; OpenHands needs 3.12+. A cloud machine reaches the internet,
    so the install's uv brings a Python into the scaffold's prefix: no refusal. A local
    machine is not assumed to reach uv's Python builds: refused, with the image that fits."""
    spec = agents.load_agent("openhands", REPO / "agents" / "openhands.yaml")
    assert "-p '>=3.12,<3.14'" in spec.install and "{prefix}/venv" in spec.install
    offered = {"ubuntu2204": "3.10"}
    assert agents.platform_problems([spec], "ubuntu2204", offered, fetches_python=True) == []
    [line] = agents.platform_problems([spec], "ubuntu2204", offered, fetches_python=False)
    assert "needs Python >=3.12,<3.14" in line
    from deploybench.backends import get_backend

    assert get_backend("aws").fetches_python and get_backend("gcp").fetches_python
    assert not get_backend("local").fetches_python


@pytest.mark.parametrize(("value", "says"), [(None, "unset"), ("", "empty")])
def test_a_key_the_controller_lacks_is_one_line_before_any_machine(
    runs, state_home, monkeypatch, value, says
):
    """An agent given no key would fail on its first model call, and the row would read as
    the model's FAIL: the run is refused before the cost prompt and any machine."""
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    spec = REPO / "agents" / "openhands.yaml"
    args = ["run", "--agent", "openhands", "--agent-config", spec, "--image", "debian13"]
    args += ["--tasks", "legacycalc_demo24", "--run-id", "nokey"]
    env = {} if value is None else {"OPENAI_API_KEY": value}
    proc = run_cli(*args, env=env, check=False)
    assert proc.returncode == 2, proc.stderr
    (line,) = proc.stderr.strip().splitlines()
    needs = "agent openhands needs OPENAI_API_KEY from the controller's environment"
    assert f"{needs}, which has it {says}" in line, line
    assert not (runs / "nokey").exists()
    assert not (state_home / "deployments").exists() or not any(
        (state_home / "deployments").iterdir()
    )

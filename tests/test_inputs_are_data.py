"""Inputs are data: agent specs and task files are checked before any machine is made (one
line naming file, field and reason), a spec's commands reach the machine as literal text, and
what the machine prints reaches the side door as literal text: never templated on the controller."""

import json

import pytest
import yaml

from deploybench import runfolder
from tests.conftest import REPO, run_cli

TASK = "legacycalc_demo24"
GOOD = {"command": "true"}


def _one_line_error(proc, *expected: str) -> str:
    assert proc.returncode != 0, proc.stdout
    err = proc.stderr.strip()
    assert "Traceback" not in err, err
    assert len(err.splitlines()) == 1, err
    for text in expected:
        assert text in err, err
    return err


def _nothing_made(runs, state_home) -> None:
    assert not runs.exists() or not any(runs.iterdir()), list(runs.iterdir())
    for sub in ("deployments", "machines"):
        folder = state_home / sub
        assert not folder.exists() or not any(folder.iterdir()), f"{sub}: {list(folder.iterdir())}"


BAD_SPECS = [
    # (file bytes, what the one line must name)
    (json.dumps({"a": {"command": "true", "max_steps": "ten"}}).encode(), ["a/max_steps", "ten"]),
    (
        json.dumps({"a": {"command": "true", "env_from_controller": "OPENAI_API_KEY"}}).encode(),
        ["a/env_from_controller", "not of type 'array'"],
    ),
    (
        json.dumps({"a": {"command": "true", "install_seconds": 0}}).encode(),
        ["a/install_seconds", "less than the minimum of 1"],
    ),
    (json.dumps({"a": {"command": 5}}).encode(), ["a/command", "not of type 'string'"]),
    (json.dumps({"a": ["command", "true"]}).encode(), ["field a", "not of type 'object'"]),
    (json.dumps([{"a": GOOD}]).encode(), ["(top level)", "not of type 'object'"]),
    (json.dumps({"a": {"command": "true", "comand": "x"}}).encode(), ["unknown field", "comand"]),
    (json.dumps({"a": {"command": "true", "converter": "nope"}}).encode(), ["unknown converter"]),
    (b"a:\n  command: true\n  command: false\n", ["given twice", "line 3"]),
    (b"a:\n  command: 'caf\xe9'\n", ["not UTF-8", "line 2"]),
    (b"a: {command: [unclosed\n", ["not valid YAML"]),
    (b"", ["(top level)"]),
]


@pytest.mark.parametrize("raw,expected", BAD_SPECS, ids=[str(i) for i in range(len(BAD_SPECS))])
def test_a_bad_agent_spec_is_one_line_and_makes_nothing(raw, expected, runs, state_home, tmp_path):
    config = tmp_path / "agents.yaml"
    config.write_bytes(raw)
    proc = run_cli(
        "run", "--agent", "a", "--agent-config", config, "--tasks", TASK, "--run-id", "bad",
        check=False,
    )  # fmt: skip
    _one_line_error(proc, "agents.yaml", *expected)
    _nothing_made(runs, state_home)


def _checkout(tmp_path, task_id: str, task_text: bytes | None, verifier: bool = True):
    """A checkout whose catalog is the shipped one plus task `task_id` with these bytes."""
    repo = tmp_path / "checkout"
    (repo / "tasks").mkdir(parents=True)
    for name in ("playbooks", "roles", "reference_setups", "terraform", "ansible.cfg", "agents"):
        (repo / name).symlink_to(REPO / name)
    (repo / "verifiers").mkdir()
    for entry in (REPO / "verifiers").iterdir():
        (repo / "verifiers" / entry.name).symlink_to(entry)
    for entry in (REPO / "tasks").iterdir():
        (repo / "tasks" / entry.name).symlink_to(entry)
    if task_text is not None:
        (repo / "tasks" / task_id).mkdir()
        (repo / "tasks" / task_id / "task.yaml").write_bytes(task_text)
    if verifier:
        (repo / "verifiers" / task_id).symlink_to(REPO / "verifiers" / TASK)
    return repo


def _task_text(**changes) -> str:
    task = yaml.safe_load((REPO / "tasks" / TASK / "task.yaml").read_text())
    task.update(id="other_demo24", **changes)
    task["repo"]["url"] = f"demo:tasks/{TASK}/artifact"
    return yaml.safe_dump(task, sort_keys=False)


BAD_TASKS = [
    (("id: other_demo24\n" + _task_text()).encode(), ["given twice", "line 2"]),
    (_task_text(title="cafe-MARK").encode().replace(b"cafe-MARK", b"caf\xe9"), ["not UTF-8"]),
    (_task_text(agent_minutes="ten").encode(), ["agent_minutes", "ten"]),
    (_task_text(languages="python").encode(), ["languages", "not of type 'array'"]),
    (b"- id: other_demo24\n", ["(top level)", "mapping"]),
    (b"id: [other\n", ["not valid YAML"]),
]


@pytest.mark.parametrize("raw,expected", BAD_TASKS, ids=[str(i) for i in range(len(BAD_TASKS))])
def test_a_bad_task_file_is_one_line_and_makes_nothing(raw, expected, runs, state_home, tmp_path):
    repo = _checkout(tmp_path, "other_demo24", raw)
    proc = run_cli(
        "run", "--agent", "nop", "--tasks", TASK, "--run-id", "bad",
        env={"DEPLOYBENCH_REPO": str(repo)}, check=False,
    )  # fmt: skip
    _one_line_error(proc, "other_demo24/task.yaml", *expected)
    _nothing_made(runs, state_home)


def test_a_task_without_a_verifier_is_refused_up_front(runs, state_home, tmp_path):
    repo = _checkout(tmp_path, "other_demo24", _task_text().encode(), verifier=False)
    proc = run_cli(
        "run", "--agent", "nop", "--tasks", "other_demo24", "--run-id", "bad",
        env={"DEPLOYBENCH_REPO": str(repo)}, check=False,
    )  # fmt: skip
    _one_line_error(proc, "other_demo24", "no verifier")
    _nothing_made(runs, state_home)


@pytest.mark.slow
@pytest.mark.privileged
def test_spec_text_reaches_the_machine_literally(root_host, runs, state_home, tmp_path):
    # Jinja that would run a command on the controller, bash that Jinja cannot parse, and a
    # model name that looks like a placeholder: all must arrive on the machine as written.
    pwned = tmp_path / "controller-ran-this"
    config = tmp_path / "agents.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "literal": {
                    "install": (
                        f"echo \"{{{{ lookup('pipe', 'touch {pwned}') }}}}\" > /root/install.txt"
                    ),
                    "command": (
                        f"# {{{{ lookup('pipe', 'id') }}}}\n"
                        f"# {{{{ lookup('pipe', 'touch {pwned}') }}}}\n"
                        'x=abcd; echo "LEN=${#x}"; echo "WD={workdir}"\n'
                        'echo "MODEL={model}"\n'
                        'echo "INSTALL=$(sudo cat /root/install.txt)"\n'
                        "echo \"SELF=$(tr '\\0' ' ' < /proc/$$/cmdline)\"\n"
                    ),
                    "model": "{workdir}{% raw %}",
                }
            }
        )
    )
    run_cli(
        "run", "--agent", "literal", "--agent-config", config, "--tasks", TASK,
        "--run-id", "literal", timeout=900,
    )  # fmt: skip
    attempt = runs / "literal" / TASK / "literal" / "1"
    log = (attempt / "agent.log").read_text()
    assert "LEN=4" in log, log
    assert f"WD=/home/vm/Desktop/{TASK}" in log, log
    assert "MODEL={workdir}{% raw %}" in log, log
    assert f"INSTALL={{{{ lookup('pipe', 'touch {pwned}') }}}}" in log, log
    assert "{{ lookup('pipe', 'id') }}" in log, log
    assert "uid=" not in log, log
    assert not pwned.exists(), "a lookup in the agent spec ran on the controller"


@pytest.mark.slow
@pytest.mark.privileged
def test_machine_output_reaches_the_side_door_literally(
    root_host, runs, state_home, tmp_path, monkeypatch
):
    # The agent (root) adds a line with Jinja in its path to a dpkg checksum list, so the tamper
    # scan prints that path; the scan's raw lines then travel as the side door action's
    # `evidence` argument. They must be judged as the text they are, never templated. That is
    # the path through the machine's login (cloud machines; local ones judge from the host,
    # where nothing passes through Ansible after the agent, and the scan reads the image's own
    # checksum lists, not the machine's).
    monkeypatch.setenv("DEPLOYBENCH_LOCAL_POST_AGENT", "machine")
    pwned = tmp_path / "controller-ran-this"
    path = f"usr/{{{{ lookup('pipe', 'touch {pwned}') }}}}"
    line = f"00000000000000000000000000000000  {path}"
    plant = f"echo {json.dumps(line)} | sudo tee -a /var/lib/dpkg/info/bash.md5sums"
    config = tmp_path / "agents.yaml"
    config.write_text(yaml.safe_dump({"planter": {"command": plant}}))
    run_cli(
        "run", "--agent", "planter", "--agent-config", config, "--tasks", TASK,
        "--run-id", "planted", timeout=900,
    )  # fmt: skip
    attempt = runs / "planted" / TASK / "planter" / "1"
    verdict = json.loads((attempt / "verdict.json").read_text())
    assert not pwned.exists(), "a lookup in the machine's output ran on the controller"
    assert verdict["passed"] is False, verdict
    assert f"MISSING bash /{path}" in verdict["machine"]["evidence"], verdict["machine"]
    scan = attempt / runfolder.VERIFIER_DIR / runfolder.TAMPER_SCAN
    assert f"MISSING bash /{path}" in scan.read_text()

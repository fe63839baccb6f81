"""What every catalog task's verifier, recorded final states and reference role must have, one
test each over the whole catalog (tasks/). What a task's verifier must catch in particular stays
in the test_verifiers_* file of that task."""

import json
import re

import pytest
import yaml

from deploybench import catalog
from deploybench.paths import ROLES_DIR
from deploybench.verify import verification
from tests.conftest import REPO
from tests.verifier_states import (
    FAILING,
    STATES,
    check_role_syntax,
    check_states_are_small_text,
    check_verifier_parts,
    failed,
    verdict,
)

CATALOG = catalog.catalog_tasks(catalog.load_tasks())
TASKS = sorted(CATALOG)
GPU_TASKS = sorted(t for t in TASKS if CATALOG[t]["gpu"])
COMMAND_MODULES = {"ansible.builtin.command", "ansible.builtin.shell", "ansible.builtin.script"}
# The reference roles whose runbook status depends on the run: hyena_icml23 writes PARTIAL on a
# CPU-only validation run (no GPU to train on), SUCCESS otherwise.
STATUS_BY_RUN = {"hyena_icml23"}


def test_the_catalog_is_all_there():
    # A catalog that failed to load would make every test below pass on nothing.
    assert len(TASKS) == 51
    assert len(GPU_TASKS) == 22


@pytest.mark.parametrize("task_id", TASKS)
def test_task_says_whether_it_runs_here(task_id):
    runs_here = CATALOG[task_id]["runs_here"]
    assert runs_here["local"] in {"yes", "with_changes", "no"}
    assert len(runs_here["why"]) > 40


@pytest.mark.parametrize("task_id", TASKS)
def test_verifier_parts(task_id):
    check_verifier_parts(task_id)


@pytest.mark.parametrize("task_id", TASKS)
def test_recorded_states_are_small_text_files(task_id):
    check_states_are_small_text(task_id)


@pytest.mark.parametrize("task_id", TASKS)
def test_recorded_pass_state_passes_both_layers(task_id):
    folder = STATES / task_id / "pass"
    assert (folder / "README.md").is_file(), f"{folder} says nowhere how it was made"
    result = verdict(task_id, folder)
    assert result["passed"] is True, failed(result["layer2"]["checks"]) or result["layer1"]


@pytest.mark.parametrize("state", FAILING)
@pytest.mark.parametrize("task_id", TASKS)
def test_recorded_failing_states_fail(task_id, state):
    folder = STATES / task_id / state
    assert (folder / "README.md").is_file(), f"{folder} says nowhere how it was made"
    result = verdict(task_id, folder)
    assert result["passed"] is False
    assert result["layer2"]["passed"] is False


@pytest.mark.parametrize("task_id", GPU_TASKS)
def test_every_gpu_task_demands_gpu_evidence(task_id):
    kinds = {c["name"]: c["kind"] for c in verification.load_checks(task_id)}
    assert kinds.get("gpu_used") == "gpu_used"
    assert "gpu_listed" in kinds


def _command_tasks(tasks):
    for task in tasks:
        if "block" in task:
            for part in ("block", "rescue", "always"):
                yield from _command_tasks(task.get(part, []))
        elif COMMAND_MODULES & set(task):
            yield task


def _idempotent(task):
    """A changed_when, or the command's own `creates` (in its arguments, not merely a word of
    its name or its script)."""
    if "changed_when" in task:
        return True
    (module,) = COMMAND_MODULES & set(task)
    args = task[module]
    if not isinstance(args, dict):  # the free form: `creates=PATH` among the words
        args = dict(word.split("=", 1) for word in str(args).split() if "=" in word)
    return "creates" in args or "creates" in (task.get("args") or {})


@pytest.mark.parametrize("task_id", TASKS)
def test_reference_role_parts(task_id):
    role = REPO / "reference_setups" / task_id
    for part in ("tasks/main.yml", "defaults/main.yml", "meta/main.yml", "meta/argument_specs.yml"):
        assert (role / part).is_file(), part
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text()) or {}
    assert all(name.startswith(f"{task_id}_") for name in defaults)
    spec = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())
    options = spec["argument_specs"]["main"]["options"]
    assert options[f"{task_id}_workdir"]["required"] is True
    assert set(defaults) <= set(options), set(defaults) - set(options)
    for name, value in defaults.items():
        assert options[name]["default"] == value, name
    status = (role / "templates" / "RUNBOOK.MD.j2").read_text().splitlines()[0]
    if task_id in STATUS_BY_RUN:
        assert status.startswith("STATUS: {{"), status
    else:
        assert status == "STATUS: SUCCESS", status
    tasks = yaml.safe_load((role / "tasks" / "main.yml").read_text())
    for task in _command_tasks(tasks):
        assert _idempotent(task), task["name"]
    # What the role does, without its comments (which may say why it needs no Docker).
    done = json.dumps(tasks)
    # The paper's rule: no Docker in a reference setup.
    assert not re.search(r"\bdocker\b", done, re.IGNORECASE)
    if CATALOG[task_id]["gpu"]:
        # The role refuses a machine without an NVIDIA GPU and installs the driver: through the
        # shared role, which does both.
        assert re.search(r'"name": "gpu_driver"', done), task_id
        shared = json.dumps(yaml.safe_load((ROLES_DIR / "gpu_driver/tasks/main.yml").read_text()))
        assert "lspci -d 10de:" in shared and "nvidia-smi" in shared


@pytest.mark.parametrize("task_id", TASKS)
def test_reference_role_passes_the_syntax_check(task_id, tmp_path):
    check_role_syntax(task_id, tmp_path)

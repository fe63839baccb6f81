"""Verifiers that cannot be faked cheaply, swept over every catalog task (issue 29, item 5).
Each test is parametrized by the catalog's task ids (tasks/*/task.yaml without `demo`), never
by a list of its own: a new task is in the sweep the day it is added, and fails here until its
verifier meets it or its checks.yaml says why it cannot (`hidden_inputs: none`, an input's
`not_load_bearing`, `repository_diff: not_pinned`; (a) has no way out).

- (a) the entry point stubbed: the task's fake that stands where the experiment's entry point
  is and prints the documented output (tests/test_verifier_fakes.py's entry_stub) is built on
  this host, the task's real machine side runs on it, and its real checks must fail it on a
  check that is not GPU evidence and says it defeats that fake.
- (b) every hidden input load-bearing: see test_hidden_input_is_load_bearing.
- (c) the repository diff judged: see test_a_changed_experiment_file_fails."""

import re

import pytest

from deploybench import catalog
from deploybench.catalog import checks as checks_mod
from deploybench.errors import DeployBenchError
from tests.test_verifier_fakes import entry_stub, play
from tests.verifier_states import STATES, copy_state, failed, verdict

CATALOG = sorted(catalog.catalog_tasks(catalog.load_tasks()))


def test_the_sweep_is_the_whole_catalog():
    # The 51 of the catalog, and any task added since.
    assert len(CATALOG) >= 51


@pytest.mark.parametrize("task_id", CATALOG)
def test_a_stub_at_the_entry_point_fails(task_id, tmp_path):
    fake = entry_stub(task_id)
    assert fake, f"{task_id}: no fake at its entry point (tests/fakes*.py: constant or stub_binary)"
    play(task_id, fake, tmp_path)


# What an experiment draws with: the kernel's random devices, the shell's, awk's, shuf.
DRAWS = re.compile(r"/dev/u?random|/proc/sys/kernel/random|\$RANDOM|\bsrand\(|\brand\(\)|\bshuf\b")


def _declaration(task_id):
    return checks_mod._load_file(catalog.verifier_dir(task_id) / "checks.yaml")


def changed(value):
    """Another value of the same form: each digit, hex letter or letter moved on by one."""
    out = []
    for c in value:
        if c.isdigit():
            out.append(str((int(c) + 1) % 10))
        elif c in "abcdef":
            out.append("abcdef"[("abcdef".index(c) + 1) % 6])
        elif c.isascii() and c.isalpha():
            base = 97 if c.islower() else 65
            out.append(chr((ord(c) - base + 1) % 26 + base))
        else:
            out.append(c)
    return "".join(out)


def change_recorded(folder, where):
    """Change the drawn value where the experiment recorded it (the last match of its pattern:
    the one checks read) and return it."""
    path = folder / where["file"]
    text = path.read_text()
    hits = list(re.finditer(where["pattern"], text, re.MULTILINE))
    assert hits, f"the pass state does not record it: {where['file']} {where['pattern']!r}"
    start, end = hits[-1].span(1)
    value = text[start:end]
    assert value and changed(value) != value, value
    path.write_text(text[:start] + changed(value) + text[end:])
    return value


@pytest.mark.parametrize("task_id", CATALOG)
def test_hidden_input_is_load_bearing(task_id, tmp_path):
    """Every input the verifier keeps from the agent weighs on the verdict. A drawn input's
    recorded value, changed in the task's recorded pass state (as if this run had drawn another
    and the program had answered an earlier one), makes a check fail that passed before. A
    bank variant's inputs must reach the experiment (VARIANT_<NAME> in experiment.sh) and its
    results are compared with the bank's (docs/verification.md). Inputs that cannot weigh say
    why in checks.yaml; an experiment that draws (DRAWS) cannot say it draws nothing."""
    data = _declaration(task_id)
    declared = data.get("hidden_inputs")
    assert declared is not None, f"{task_id}: checks.yaml declares no hidden_inputs"
    experiment = (catalog.verifier_dir(task_id) / "experiment.sh").read_text()
    variants = data.get("variants")
    if variants:
        for name in variants["inputs"]:
            uses = re.findall(rf"\$\{{?VARIANT_{name.upper()}\b", experiment)
            assert uses, f"{task_id}: variant input {name} never reaches the experiment"
    if isinstance(declared, dict):
        draws = DRAWS.findall(experiment)
        assert not draws, f"{task_id} draws ({draws[0]}), yet declares none"
        return
    checks = data["checks"]
    before = failed(checks_mod.judge_all(checks, STATES / task_id / "pass"))
    for where in declared:
        if "not_load_bearing" in where:
            continue
        state = copy_state(task_id, "pass", tmp_path / where["name"])
        change_recorded(state, where)
        now = failed(checks_mod.judge_all(checks, state))
        assert set(now) - set(before), f"{task_id}: changing {where['name']} fails no check"


def _checks_file(tmp_path, text):
    path = tmp_path / "checks.yaml"
    path.write_text(text)
    return path


DRAWN_CHECKS = """
checks:
  - name: named_by_the_draw
    kind: contains
    file: out.txt
    pattern: '^wrote r{drawn:nonce}\\.jpg$'
hidden_inputs:
  - name: nonce
    about: the name of the run's output
    file: drawn.txt
    pattern: '^([0-9a-f]+)$'
"""


def test_a_drawn_reference_is_the_recorded_value_escaped(tmp_path):
    checks = checks_mod.load(_checks_file(tmp_path, DRAWN_CHECKS))
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "out.txt").write_text("wrote rab12.jpg\n")
    (logs / "drawn.txt").write_text("ab12\n")
    assert checks_mod.judge_all(checks, logs)[0]["passed"]
    (logs / "drawn.txt").write_text("ab13\n")
    assert not checks_mod.judge_all(checks, logs)[0]["passed"]
    (logs / "drawn.txt").unlink()
    result = checks_mod.judge_all(checks, logs)[0]
    assert not result["passed"] and "not recorded" in result["detail"]


def test_a_drawn_reference_must_be_declared_and_recorded(tmp_path):
    undeclared = DRAWN_CHECKS.replace("{drawn:nonce}", "{drawn:seed}")
    with pytest.raises(DeployBenchError, match=r"\{drawn:seed\} not declared"):
        checks_mod.load(_checks_file(tmp_path, undeclared))
    unrecorded = DRAWN_CHECKS.replace(
        "    file: drawn.txt\n    pattern: '^([0-9a-f]+)$'\n",
        "    not_load_bearing: a reason long enough to pass the schema\n",
    )
    with pytest.raises(DeployBenchError, match="not declared"):
        checks_mod.load(_checks_file(tmp_path, unrecorded))
    with pytest.raises(DeployBenchError, match="hidden_inputs"):
        checks_mod.load(_checks_file(tmp_path, "checks: []\nhidden_inputs: {}\n"))


def _experiment_files(task_id, folder):
    """The verdict's account of the experiment's files, from the real verdict code."""
    result = verdict(task_id, folder)
    return result["layer2"].get("experiment_files"), {
        c["name"] for c in result["layer2"]["checks"] if not c["passed"]
    }


@pytest.mark.parametrize("task_id", CATALOG)
def test_a_changed_experiment_file_fails(task_id, tmp_path):
    """The repository diff where the experiment's own files changed: each repository file the
    experiment executes is pinned to its blob at the task's commit (pinned.txt). Changing any
    one of them in the recorded pass state fails a check that passed before, and the verdict
    records it (layer2.experiment_files: path, the pinned blob, the blob found, not accepted).
    A declared compatibility repair (a second blob its check accepts, as the reference's port
    leaves the file) passes and is recorded as accepted. A verifier that pins no file says why
    in checks.yaml (`repository_diff: not_pinned`)."""
    data = _declaration(task_id)
    checks = data["checks"]
    blobs = checks_mod.pinned_blobs(checks)
    if not blobs:
        assert data.get("repository_diff"), f"{task_id} pins nothing and does not say why"
        return
    assert "repository_diff" not in data, f"{task_id} pins files, yet says it does not"
    files, before = _experiment_files(task_id, STATES / task_id / "pass")
    assert files["pinned"] == len(blobs)
    assert all(c["accepted"] for c in files["changed"]), files
    pinned_checks = {c["name"] for c in checks if c["file"] == checks_mod.PINNED_FILE}
    assert not pinned_checks & before, before
    lines = (STATES / task_id / "pass" / "pinned.txt").read_text().splitlines()
    assert sorted(line.rpartition(" ")[0] for line in lines) == sorted(blobs)
    for i, line in enumerate(lines):
        path, _, blob = line.rpartition(" ")
        for now, accepted in [(changed(blobs[path][0]), False)] + [
            (repair, True) for repair in blobs[path][1:]
        ]:
            state = tmp_path / f"{i}-{now}"
            copy_state(task_id, "pass", state)
            edited = [*lines[:i], f"{path} {now}", *lines[i + 1 :]]
            (state / "pinned.txt").write_text("\n".join(edited) + "\n")
            files, failing = _experiment_files(task_id, state)
            shown = [c for c in files["changed"] if c["path"] == path]
            assert shown == [
                {"path": path, "pinned": blobs[path][0], "now": now, "accepted": accepted}
            ]
            if accepted:
                assert not pinned_checks & failing, f"{task_id}: a declared repair of {path} fails"
            else:
                assert failing - before, f"{task_id}: a change of {path} fails no check"

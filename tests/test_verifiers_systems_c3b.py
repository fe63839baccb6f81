"""Verifiers of karousos_eurosys24 and qsym_usenixsec18, which cannot run here as a whole: their
checks judged on recorded final states (tests/fixtures/verifier_states/<id>/{pass,untouched,
shallow}/, each README saying how it was made), cheat edits of the pass states, the machine side run
on this host against stand-ins (what every verifier and reference role must have is tested in
test_verifiers_all.py)."""

import pytest
import yaml

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO
from tests.verifier_states import (
    FAILING,
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["karousos_eurosys24", "qsym_usenixsec18"]
# What a verifier cut down to "the entry point exists" would still ask.
ENTRY_POINT_EXISTS = {
    "karousos_eurosys24": {"file": "binary.txt", "pattern": "^magic: 7f454c46$"},
    "qsym_usenixsec18": {"file": "binary.txt", "pattern": "^magic: 7f454c46$"},
}
UNTOUCHED_FAILS_ON = {
    "karousos_eurosys24": ["drawn_requests_served", "mysql_8_0_19_built", "verifier_passed"],
    "qsym_usenixsec18": ["drawn_branches_solved", "pintool_built", "python27_environment"],
}
SHALLOW_FAILS_ON = {
    "karousos_eurosys24": [
        "drawn_requests_served",
        "mysqld_holds_source_strings",
        "node_12_16_1",
        "node_holds_runtime_strings",
        "node_vouched",
        "pinned_sources",
        "trace_of_the_drawn_messages",
        "trace_tampered",
        "verifier_passed",
    ],
    "qsym_usenixsec18": ["drawn_branches_solved", "target_took_branch_a", "target_took_branch_b"],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_recorded_states_say_how_they_were_made(task_id):
    assert "MADE BY HAND" in (STATES / task_id / "pass" / "README.md").read_text()
    for state in FAILING:
        assert "real" in (STATES / task_id / state / "README.md").read_text()


@pytest.mark.parametrize("task_id", TASKS)
def test_untouched_states_fail_on_the_missing_build(task_id):
    assert set(UNTOUCHED_FAILS_ON[task_id]) <= set(
        failed(judged(task_id, STATES / task_id / "untouched"))
    )


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_states_fail_on_what_makes_them_shallow(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS_ON[task_id]


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_exists_pass_the_shallow_state(task_id):
    weak = [{"name": "entry_point_exists", "kind": "contains", **ENTRY_POINT_EXISTS[task_id]}]
    for state in ("shallow", "pass"):
        assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / state))
    verdict = verification.verdict_from_logs(STATES / task_id / "shallow", 1.0, weak)
    assert verdict["layer2"]["passed"] is True


def test_karousos_judges_the_audit_and_the_tampered_trace(tmp_path):
    # A "verifier" that accepts anything: it also passes the trace with a changed response.
    lax = copy_state("karousos_eurosys24", "pass", tmp_path / "lax")
    (lax / "tamper.txt").write_text((lax / "verifier.txt").read_text())
    assert failed(judged("karousos_eurosys24", lax)) == ["tampered_trace_rejected"]
    # A server that lost one drawn post (or answered reads from elsewhere).
    lost = copy_state("karousos_eurosys24", "pass", tmp_path / "lost")
    edit(lost / "seen.txt", "read_back: 5", "read_back: 4")
    assert failed(judged("karousos_eurosys24", lost)) == ["drawn_requests_served"]
    # A stock MySQL of another release and the distribution's Node.
    other = copy_state("karousos_eurosys24", "pass", tmp_path / "other")
    edit(other / "binary.txt", "Ver 8.0.19 ", "Ver 8.0.36 ")
    edit(other / "binary.txt", "node: v12.16.1", "node: v12.22.9")
    assert failed(judged("karousos_eurosys24", other)) == ["mysql_8_0_19_built", "node_12_16_1"]


def test_qsym_judges_the_drawn_branches(tmp_path):
    # Test cases that hit one drawn branch only (e.g. a fuzzer's lucky byte flip).
    half = copy_state("qsym_usenixsec18", "pass", tmp_path / "half")
    edit(half / "solved.txt", "branch_b: solved", "branch_b: unsolved")
    edit(half / "target.txt", "branch B\n", "")
    assert failed(judged("qsym_usenixsec18", half)) == [
        "drawn_branches_solved",
        "target_took_branch_b",
    ]
    # The right output printed by a planted target, with nothing solved.
    printed = copy_state("qsym_usenixsec18", "pass", tmp_path / "printed")
    edit(printed / "solved.txt", "branch_a: solved", "branch_a: unsolved")
    assert failed(judged("qsym_usenixsec18", printed)) == ["drawn_branches_solved"]
    # Python 3 in the environment, and no Pin command in the executor's log.
    py3 = copy_state("qsym_usenixsec18", "pass", tmp_path / "py3")
    edit(py3 / "binary.txt", "version: 2.7", "version: 3.11")
    (py3 / "qsym.txt").write_text("Traceback (most recent call last):\n")
    assert failed(judged("qsym_usenixsec18", py3)) == ["pin_ran_the_tool", "python27_environment"]


def test_qsym_seed_copier_fails_on_this_host(tmp_path):
    # A stand-in run_qsym that writes the seed back with a few bytes flipped, run for real here:
    # the experiment compiles its own target and finds that no test case solves a drawn branch.
    wd = tmp_path / "wd"
    (wd / "bin").mkdir(parents=True)
    (wd / "bin" / "run_qsym.py").write_text("")
    py = wd / "env" / "bin" / "python"
    py.parent.mkdir(parents=True)
    py.write_text(
        '#!/bin/sh\n[ "$1" = -c ] && { echo 2.7; exit 0; }\nmkdir -p "$5/qsym-last"\n'
        'for i in 0 1 2; do { printf "$i$i$i$i"; tail -c +5 "$3"; } >"$5/qsym-last/00000$i"; done\n'
    )
    py.chmod(0o755)
    verdict = run_experiment("qsym_usenixsec18", wd, tmp_path / "logs")
    assert verdict["passed"] is False
    assert (tmp_path / "logs" / "testcases.txt").read_text() == "testcases: 3\n"
    assert "drawn_branches_solved" in failed(verdict["layer2"]["checks"])
    # The target was really built and run on each case (it prints a header per case).
    assert (tmp_path / "logs" / "target.txt").read_text().count("== 00000") == 3
    assert not list((tmp_path / "logs-scratch").rglob("*.c"))


@pytest.mark.parametrize("task_id", TASKS)
def test_task_says_it_cannot_run_here_and_what_its_reference_role_follows(task_id):
    task = yaml.safe_load((REPO / "tasks" / task_id / "task.yaml").read_text())
    assert task["runs_here"]["local"] == "no"
    assert "reference role" in task["runs_here"]["why"]


def test_qsym_role_changes_only_the_abi_gate_of_the_pintool():
    tasks = (REPO / "reference_setups" / "qsym_usenixsec18" / "tasks" / "main.yml").read_text()
    replaces = [t for t in yaml.safe_load(tasks) if "ansible.builtin.replace" in t]
    assert len(replaces) == 1
    assert replaces[0]["ansible.builtin.replace"]["path"].endswith("qsym/pintool/makefile.rules")
    assert "16\\.04" in replaces[0]["ansible.builtin.replace"]["regexp"]

"""Verifiers of the systems tasks of issue C3 that cannot run here as a whole (TASKS below): their
checks judged on recorded final states (tests/fixtures/verifier_states/<id>/{pass,
untouched,shallow}/, each with a README saying how it was made), cheat edits of the pass states, the
machine side run on this host (what every verifier and reference role must have is tested in
test_verifiers_all.py)."""

import re

import pytest
import yaml

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.conftest import REPO
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["polyjuice_osdi21", "k9db_osdi23"]
# What a verifier cut down to "the entry point exists" would still ask.
ENTRY_POINT_EXISTS = {
    "polyjuice_osdi21": {"file": "binary.txt", "pattern": "^regular: yes$"},
    "k9db_osdi23": {"file": "binary.txt", "pattern": "^regular: yes$"},
}
UNTOUCHED_FAILS_ON = {
    "polyjuice_osdi21": ["binary_built"],
    "k9db_osdi23": ["binary_built", "listener_is_the_build", "ownership_tracked"],
}
SHALLOW_FAILS_ON = {
    "polyjuice_osdi21": ["binary_holds_source_strings", "drawn_scale_loaded"],
    "k9db_osdi23": [
        "gdpr_get_answered",
        "listener_is_the_build",
        "ownership_tracked",
        "schema_loaded",
        "show_memory_answered",
    ],
}


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
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))
    verdict = verification.verdict_from_logs(STATES / task_id / "shallow", 1.0, weak)
    assert verdict["layer2"]["passed"] is True


def test_polyjuice_judges_the_drawn_scale_and_the_engine(tmp_path):
    # The README's run (1 warehouse) replayed: dbtest reports a scale the verifier did not draw.
    other = copy_state("polyjuice_osdi21", "pass", tmp_path / "other")
    drawn = (other / "drawn.txt").read_text()
    sf = int(re.search(r"^scale: (\d+)$", drawn, re.M).group(1))
    (other / "loaded.txt").write_text("scale: 1\nruntime: 30\nwarehouse_0: 1\nstock_0: 100000\n")
    assert failed(judged("polyjuice_osdi21", other)) == ["drawn_scale_loaded"]
    # Silo's OCC engine instead of Polyjuice's.
    silo = copy_state("polyjuice_osdi21", "pass", tmp_path / "silo")
    edit(silo / "stderr.txt", "  db-type     : ndb-ic3", "  db-type     : ndb-proto2")
    assert failed(judged("polyjuice_osdi21", silo)) == ["polyjuice_cc"]
    # A run that committed no NewOrder transaction.
    idle = copy_state("polyjuice_osdi21", "pass", tmp_path / "idle")
    text = (idle / "stderr.txt").read_text()
    text = re.sub(r"(?m)^(table oorder_0 size \d+) \(\+\d+ records\)$", r"\1 (+0 records)", text)
    (idle / "stderr.txt").write_text(text)
    assert failed(judged("polyjuice_osdi21", idle)) == ["new_orders_inserted"]
    assert sf >= 2


def test_k9db_judges_ownership_and_the_listener(tmp_path):
    # GDPR GET that returns every row of the table, not only the drawn subject's.
    leaky = copy_state("k9db_osdi23", "pass", tmp_path / "leaky")
    edit(leaky / "seen.txt", "get_other: 0", "get_other: 3")
    assert failed(judged("k9db_osdi23", leaky)) == ["ownership_tracked"]
    # FORGET that deletes nothing (a plain MySQL would not know the owner).
    kept = copy_state("k9db_osdi23", "pass", tmp_path / "kept")
    text = (kept / "seen.txt").read_text()
    (kept / "seen.txt").write_text(re.sub(r"(?m)^forgotten_own: 0$", "forgotten_own: 6", text))
    assert failed(judged("k9db_osdi23", kept)) == ["ownership_tracked"]
    # Another server (MariaDB, say) answering on the port.
    other = copy_state("k9db_osdi23", "pass", tmp_path / "other")
    (other / "listener_exe.txt").write_text("exe: /usr/sbin/mariadbd\n")
    assert failed(judged("k9db_osdi23", other)) == ["listener_is_the_build"]


def test_k9db_script_server_fails_on_this_host(tmp_path):
    # A shell script planted as the server and the harness: not an ELF build, so nothing runs.
    for rel in ("bazel-bin/k9db/proxy/proxy", "experiments/lobsters/bazel-bin/lobsters-harness"):
        path = tmp_path / "wd" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("#!/bin/sh\necho '# generated ops/s: 14.52'\n")
        path.chmod(0o755)
    (tmp_path / "wd" / "bazel-bin" / "k9db" / "proxy" / "proxy.runfiles").mkdir()
    verdict = run_experiment("k9db_osdi23", tmp_path / "wd", tmp_path / "logs")
    assert verdict["passed"] is False
    assert "binary_built" in failed(verdict["layer2"]["checks"])
    assert not (tmp_path / "logs" / "lobsters.txt").exists()


def test_polyjuice_role_takes_gcc8_from_focal_below_the_release():
    # The focal source must be pinned below 500, so it never replaces the machine's own packages.
    tasks = (REPO / "reference_setups" / "polyjuice_osdi21" / "tasks" / "main.yml").read_text()
    assert "Pin: release n=focal" in tasks and "Pin-Priority: 100" in tasks
    defaults = yaml.safe_load(
        (REPO / "reference_setups" / "polyjuice_osdi21" / "defaults" / "main.yml").read_text()
    )
    assert "CXX=g++-8" in defaults["polyjuice_osdi21_make_vars"]
    assert re.fullmatch(r"[0-9a-f]{64}", defaults["polyjuice_osdi21_keyring_sha256"])

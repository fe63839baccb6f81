"""Agents that break the harness's way in to dodge a verdict. An infrastructure error is never
counted against an agent, so an agent that cannot pass would like its attempt to end as one.
Three ways of trying, played for real on local machines (deploybench/attempt/stage_failures.py):

- cutting its own session mid-run (killing the sshd processes of its user): the harness
  connects again, waits for the agent's run to end, and judges the machine as usual;
- leaving a process that keeps killing every SSH session: the machine still answers, so the
  attempt is judged machine_broken (layer 0), not an infrastructure error;
- mounting a read-only /tmp, where the stop stage keeps the state it collects: the stage fails
  on the machine the agent left, machine_broken too.

These are attacks on the path through the machine's login (cloud machines), run on local
machines with DEPLOYBENCH_LOCAL_POST_AGENT=machine; on local machines' own path nothing enters
the machine after the agent (tests/test_post_agent_from_host.py plays them there)."""

import json

import pytest
import yaml

from tests.conftest import machine_processes, run_cli, run_results

pytestmark = [pytest.mark.slow, pytest.mark.privileged]

TASK = "legacycalc_demo24"
AGENTS = {
    "cutter": {
        "command": (
            "echo cutting my own connection\n"
            "sudo pkill -KILL -u vm -x sshd; sleep 3; echo still here; exit 3\n"
        )
    },
    "session_killer": {
        "command": (
            "sudo setsid nohup bash -c 'while true; do pkill -KILL -u vm -x sshd;"
            ' pkill -KILL -f "^sshd: root"; sleep 0.2; done\''
            " >/dev/null 2>&1 < /dev/null &\n"
            "sleep 2; exit 0\n"
        )
    },
    "readonly_tmp": {"command": "sudo mount -t tmpfs -o ro tmpfs /tmp && echo read-only /tmp\n"},
}


@pytest.fixture(autouse=True)
def _through_the_machine(monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_LOCAL_POST_AGENT", "machine")


def test_cutting_the_connection_is_judged_never_an_infrastructure_error(
    root_host, runs, state_home, tmp_path
):
    config = tmp_path / "agents.yaml"
    config.write_text(yaml.safe_dump(AGENTS))
    run_cli(
        "run", "--agent", "cutter,session_killer,readonly_tmp", "--agent-config", config,
        "--tasks", TASK, "--parallel", "3", "--run-id", "cut", timeout=900,
    )  # fmt: skip
    rows = {r["agent"]: r for r in run_results(runs / "cut")}
    assert not (runs / "cut" / "infra_errors.jsonl").exists()
    assert {r["status"] for r in rows.values()} == {"completed"}
    assert not any(r["passed"] for r in rows.values())

    # The cutter's run went on after its session died, and was waited for to its end.
    cutter = runs / "cut" / TASK / "cutter" / "1"
    stop = json.loads((cutter / "stop.json").read_text())
    assert stop["agent_rc"] == 3 and stop["agent_seconds"] >= 3, stop
    assert "still here" in (cutter / "agent.log").read_text()
    assert rows["cutter"]["failure_layer"] != 0  # judged on its machine, like any agent
    timed = [
        json.loads(p.read_text())["event_data"]["res"]
        for p in cutter.glob("ansible/artifacts/*/job_events/*.json")
        if '"reattached"' in p.read_text()
    ]
    assert [t["reattached"] for t in timed] == [True]

    # The session killer broke the machine for everyone: machine_broken, with the reason.
    killer = rows["session_killer"]
    assert (killer["failure_layer"], killer["failure_category"]) == (0, "machine_broken")
    verdict = json.loads(
        (runs / "cut" / TASK / "session_killer" / "1" / "verdict.json").read_text()
    )
    assert any("sessions were cut" in line for line in verdict["machine"]["evidence"])

    # The stop stage could not keep the state on the read-only /tmp: the agent's doing.
    readonly = rows["readonly_tmp"]
    assert (readonly["failure_layer"], readonly["failure_category"]) == (0, "machine_broken")
    verdict = json.loads((runs / "cut" / TASK / "readonly_tmp" / "1" / "verdict.json").read_text())
    (line,) = verdict["machine"]["evidence"]
    assert "a harness stage failed on the machine the agent left" in line
    assert "Read-only file system" in line, line
    assert not machine_processes(state_home)

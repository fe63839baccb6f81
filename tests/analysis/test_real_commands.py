"""The phase and recovery rules on real agents' commands: the OpenHands trajectories in
tests/fixtures/openhands/ (OpenHands 1.x on the demo tasks) and the mini-swe-agent ones in
tests/fixtures/mini_swe_agent/, converted by the harness's own converters exactly as a run
converts them. Every sub-command is classified; the ones a reader of Table 5 would expect in
a phase must be there, and what falls to Other is pinned (docs/report.md lists it and why), so
a rule change that moves any of them shows here."""

from collections import Counter
from pathlib import Path

import pytest

from deploybench import trajectories
from deploybench.analysis import recovery
from deploybench.analysis.phases import OTHER, classify
from deploybench.analysis.shell_split import split_subcommands

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SOURCES = [
    ("openhands", FIXTURES / "openhands" / "finish.traj.json"),
    ("openhands", FIXTURES / "openhands" / "legacycalc_machine.traj.json"),
    ("openhands", FIXTURES / "openhands" / "max_iterations.traj.json"),
    ("mini-swe-agent", FIXTURES / "mini_swe_agent" / "limit.traj.json"),
    ("mini-swe-agent", FIXTURES / "mini_swe_agent" / "ok.traj.json"),
]


def events_of(converter: str, path: Path) -> list[dict]:
    return trajectories.CONVERTERS[converter](trajectories.read_native(path))


def all_subcommands() -> list[tuple[str, str]]:
    out = []
    for converter, path in SOURCES:
        for e in events_of(converter, path):
            if e["kind"] == "command":
                out += [(path.name, s) for s in split_subcommands(e.get("command"))]
    return out


# What must be recognised: each of these real sub-commands and its phase.
MUST = {
    "ls -la": "Explore",
    "ls": "Explore",
    "cat hello.py": "FileRead",
    "cat README.md": "FileRead",
    "cat Makefile": "FileRead",
    "python3 nope.py": "Run/Test",
    "sudo apt-get update -qq": "Install",
    "sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq g++ make > /tmp/apt.log 2>&1": (
        "Install"
    ),
    "g++ --version": "Env. Inspect",
    "make": "Build",
    "make clean": "Build",
    'make legacycalc CXXFLAGS="-O2 -Wall -std=gnu++11"': "Build",
    "./legacycalc < examples/formulas.txt": "Run/Test",
    'make check CXXFLAGS="-O2 -Wall -std=gnu++11"': "Run/Test",
}
# What falls to Other, with its count over these trajectories (docs/report.md says why).
OTHERS = {
    "sleep 40": 1,
    "sleep 45": 1,
    "# input to the running command: C-c": 1,
    "echo apt=$?": 1,
    "echo waited": 1,
    "false": 1,
    "echo nope": 1,
}


def test_real_trajectories_hold_the_commands_counted():
    subs = all_subcommands()
    assert len(subs) == 28  # 18 commands of 5 real trajectories
    assert {name for name, _ in subs} == {p.name for _, p in SOURCES}


@pytest.mark.parametrize("sub,phase", sorted(MUST.items()))
def test_real_subcommand_gets_its_phase(sub, phase):
    seen = {s for _, s in all_subcommands()}
    assert sub in seen  # it really is in a real trajectory
    assert classify(sub) == phase


def test_what_falls_to_other_is_exactly_the_known_list():
    others = Counter(s for _, s in all_subcommands() if classify(s) == OTHER)
    assert dict(others) == OTHERS


def labels_of(converter: str, path: Path) -> list[tuple[str, int, str]]:
    actions = [
        recovery.Action(
            e["kind"],
            e.get("command"),
            e.get("exit_code"),
            e.get("soft_timeout") is True,
            e.get("path"),
        )
        for e in events_of(converter, path)
        if e["kind"] in recovery.ACTION_KINDS
    ]
    return [(actions[i].command, rule, label) for i, rule, label in recovery.label_attempt(actions)]


def test_recovery_labels_of_real_failures():
    oh = FIXTURES / "openhands"
    # make fails (C++17 rejects the code), the agent reads the Makefile: Inspect
    assert labels_of("openhands", oh / "legacycalc_machine.traj.json") == [("make", 4, "Inspect")]
    # a soft-timed-out sleep, then ls: Inspect (ls reads); the same ls again: Other (rule 3);
    # the last failed command with nothing after it: Abort
    assert labels_of("openhands", oh / "max_iterations.traj.json") == [
        ("sleep 45; echo waited", 4, "Inspect"),
        ("ls", 3, "Other"),
        ("ls", 1, "Abort"),
    ]
    # a sleep cut off (exit 2), then Ctrl-C sent to it, which fails too: Loop (rule 8);
    # after the Ctrl-C the agent writes the runbook: Abort
    assert labels_of("openhands", oh / "finish.traj.json") == [
        ("sleep 40; echo done", 8, "Loop"),
        ("# input to the running command: C-c", 1, "Abort"),
    ]
    # mini-swe-agent's runs: no command failed (`false; echo nope` exits 0)
    mini = FIXTURES / "mini_swe_agent"
    assert labels_of("mini-swe-agent", mini / "ok.traj.json") == []
    assert labels_of("mini-swe-agent", mini / "limit.traj.json") == []

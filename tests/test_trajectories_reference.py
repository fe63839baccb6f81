import shlex

from deploybench import contracts, trajectories


def event(kind, role, created, **res):
    return {
        "event": kind,
        "created": created,
        "event_data": {"role": role, "task": "Build it", "task_action": "command", "res": res},
    }


def test_reference_trajectory_from_ansible_events():
    events = [
        event("runner_on_start", "demo_x", "2026-01-01T00:00:00+00:00"),
        event(
            "runner_on_ok",
            "demo_x",
            "2026-01-01T00:00:02.5+00:00",
            cmd=["make"],
            rc=0,
            stdout="built",
        ),
        event("runner_on_ok", "agent_stop", "2026-01-01T00:00:03+00:00", cmd="ps", rc=0),
        event(
            "runner_on_failed",
            "demo_x",
            "2026-01-01T00:00:04+00:00",
            cmd="./run",
            rc=2,
            stderr="boom",
        ),
        event("runner_on_ok", "demo_x", "2026-01-01T00:00:05+00:00", msg="All assertions passed"),
    ]
    out = trajectories.from_ansible_events(events, "demo_x")
    for e in out:
        contracts.check(contracts.TRAJECTORY_EVENT, e, "event")
    assert [(e["kind"], e.get("command"), e.get("exit_code"), e["t"]) for e in out] == [
        ("command", "make", 0, 2.5),
        ("command", "./run", 2, 4.0),
        ("command", "# ansible command: Build it", 0, 5.0),
        ("finish", None, None, 5.0),
    ]
    assert out[1]["output"] == "boom"


def test_an_argv_is_joined_with_the_quotes_a_shell_needs():
    # Ansible's command module records argv as a list; joined by spaces alone, the `;` inside
    # the -c argument read as a separator and the `<` as a redirect.
    argv = ["env/bin/python", "-c", "import sys, numpy; print(numpy.__version__)"]
    pip = ["env/bin/pip", "install", "numpy<2", "cython<3.1"]
    events = [
        event("runner_on_ok", "demo_x", "2026-01-01T00:00:01+00:00", cmd=argv, rc=0),
        event("runner_on_ok", "demo_x", "2026-01-01T00:00:02+00:00", cmd=pip, rc=0),
        event("runner_on_ok", "demo_x", "2026-01-01T00:00:03+00:00", cmd="make && ls", rc=0),
    ]
    out = trajectories.from_ansible_events(events, "demo_x")
    assert [e.get("command") for e in out[:3]] == [
        "env/bin/python -c 'import sys, numpy; print(numpy.__version__)'",
        "env/bin/pip install 'numpy<2' 'cython<3.1'",
        "make && ls",  # the shell module's string is kept as written
    ]
    from deploybench.analysis.shell_split import split_subcommands

    assert len(split_subcommands(out[0]["command"])) == 1
    assert shlex.split(out[1]["command"]) == pip

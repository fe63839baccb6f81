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

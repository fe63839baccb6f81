"""The trajectory fast path (msgspec parses and checks in C) against the full one (json, then
the column checks): whenever the fast path accepts a file, the columns are the ones the full
path gives; whatever it refuses goes to the full path, which decides as it always did."""

import json

import pytest

from deploybench.analysis import load

GOOD = {"step": 1, "t": 2.5, "kind": "command", "command": "ls", "exit_code": 0}


def full_path(raw: bytes):
    events = json.loads("[" + raw.decode().rstrip().replace("\n", ",") + "]")
    return load._columns(events)


CASES = [
    [GOOD],
    [GOOD, {"step": 2, "t": 3, "kind": "finish"}],  # an int t
    [{**GOOD, "soft_timeout": True, "exit_code": -1}, {**GOOD, "soft_timeout": None}],
    [{**GOOD, "output": "x", "tokens_in": 3, "tokens_out": 4, "cost_usd": 1}],
    [{**GOOD, "extra": {"nested": [1, 2]}, "path": "a/b"}],  # other keys are ignored
    [{**GOOD, "command": None, "exit_code": None}],
    # refused by both (the first six are accepted by both)
    [{**GOOD, "step": True}],  # a bool is no int
    [{**GOOD, "step": 1.0}],  # nor is 1.0
    [{**GOOD, "step": -1}],
    [{**GOOD, "t": True}],
    [{**GOOD, "t": "5"}],
    [{**GOOD, "kind": "dance"}],
    [{**GOOD, "exit_code": 1.5}],
    [{**GOOD, "exit_code": False}],
    [{**GOOD, "soft_timeout": 1}],
    [{**GOOD, "command": 3}],
    [{**GOOD, "output": None}, {**GOOD, "output": 7}],
    [{**GOOD, "tokens_in": 2.0}],
    [{**GOOD, "cost_usd": "1"}],
    [{"t": 1, "kind": "finish"}],  # no step
    [{"step": 1, "kind": "finish"}],  # no t
    [{"step": 1, "t": 1}],  # no kind
    [[1, 2]],
    [],
]


@pytest.mark.parametrize("events", CASES)
def test_fast_path_accepts_only_what_the_full_path_accepts_and_agrees(events):
    raw = "".join(json.dumps(e) + "\n" for e in events).encode()
    fast, full = load._columns_fast(raw), full_path(raw)
    if fast is not None:
        assert full is not None
        assert fast.keys() == full.keys()
        for key in fast:  # t may be 3 on one side and 3.0 on the other: the frame is float
            assert [float(v) if key == "t" else v for v in fast[key]] == [
                float(v) if key == "t" else v for v in full[key]
            ], key
    # the well-formed files the fast path is for (compared as JSON: True == 1 in Python)
    common = {json.dumps(e) for case in CASES[:6] for e in case}
    if events and all(json.dumps(e) in common for e in events):
        assert fast is not None


def test_refused_files_take_the_full_path(tmp_path):
    # NaN (json reads it, msgspec does not), CRLF line ends and a blank line in the middle
    path = tmp_path / "trajectory.jsonl"
    text = '{"step": 1, "t": NaN, "kind": "message"}\r\n\n{"step": 2, "t": 1, "kind": "finish"}\n'
    path.write_bytes(text.encode())
    assert load._columns_fast(path.read_bytes()) is None
    assert [e["step"] for e in load.read_trajectory(path)] == [1, 2]

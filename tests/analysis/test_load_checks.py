"""The fast checks of load.py against the contracts' JSON Schemas: a fast "valid" must be
final (jsonschema agrees), so every mutation of a real row that jsonschema rejects must fail the
fast check too; and the real rows of the demo run pass the fast check (else it saves nothing)."""

import copy
import json
from pathlib import Path

import pytest

from deploybench import contracts, runfolder
from deploybench.analysis import load
from deploybench.errors import DeployBenchError

DEMO = Path(__file__).parent / "fixtures" / "demo_run"
ODD_VALUES = [None, True, False, 0, -1, 1.0, 1.5, "", "x", [], {}, ["x"], {"a": 1}, float("nan")]


def demo_rows():
    return load.read_results(DEMO)


def demo_verdicts():
    return [
        json.loads((runfolder.attempt_of(DEMO, r) / "verdict.json").read_text())
        for r in demo_rows()
    ]


def mutations(value, depth=0):
    """Copies of value with one field replaced by an odd value or removed, at any depth."""
    if isinstance(value, dict):
        for key in value:
            for odd in ODD_VALUES:
                yield {**value, key: odd}
            yield {k: v for k, v in value.items() if k != key}
            if depth < 3:
                for inner in mutations(value[key], depth + 1):
                    yield {**value, key: inner}
    elif isinstance(value, list) and value:
        for odd in ODD_VALUES:
            yield [odd, *value[1:]]
        if depth < 3:
            for inner in mutations(value[0], depth + 1):
                yield [inner, *value[1:]]


@pytest.mark.parametrize(("name", "samples"), [("RESULT", demo_rows), ("VERDICT", demo_verdicts)])
def test_fast_valid_is_final(name, samples):
    fast, slow = load._compiled(name), load._validator(name)
    checked = 0
    for sample in samples():
        assert fast(sample)  # real rows take the fast path
        for changed in mutations(copy.deepcopy(sample)):
            if fast(changed):
                assert slow.is_valid(changed), changed
            checked += 1
    assert checked > 500


def test_an_unknown_keyword_sends_everything_to_jsonschema():
    assert load._compile({"type": "object", "additionalProperties": False})({}) is False


def test_invalid_rows_still_get_the_one_line_message(tmp_path):
    rows = (DEMO / "results.jsonl").read_text().splitlines()
    bad = json.loads(rows[0])
    bad["attempt"] = True  # a bool is no integer
    (tmp_path / "results.jsonl").write_text("\n".join([rows[1], json.dumps(bad)]) + "\n")
    with pytest.raises(DeployBenchError, match=r"results.jsonl:2: field attempt: True is not"):
        load.read_results(tmp_path)
    assert contracts.RESULT["properties"]["attempt"]["type"] == "integer"

"""Every verifier meets the four fakes issue 33 names (a stub binary, a stub interpreter, an
echo of its drawn inputs, a published constant): its tests play a fake of each kind against its
real machine side (tests/test_verifier_fakes.py's CASES), or its checks.yaml says, in
`fakes_not_applicable`, why that kind cannot apply to it. The reasons live there alone; the
tests below hold what of them can be told from the verifier itself, and docs/verification.md's
table of the counts is the one these tests compute."""

import re

import pytest

from deploybench.catalog import checks as checks_mod
from deploybench.errors import DeployBenchError
from deploybench.verify import bank, verification
from tests.conftest import REPO
from tests.test_verifier_fakes import CASES

VERIFIERS = sorted(p.parent.name for p in (REPO / "verifiers").glob("*/checks.yaml"))
KINDS = checks_mod.KINDS_PLAYED
DOC = REPO / "docs" / "verification.md"


def not_applicable(task_id):
    return checks_mod.load_fakes_not_applicable(REPO / "verifiers" / task_id / "checks.yaml")


def played(task_id):
    """kind -> how many of the tests' fakes of that kind meet this verifier."""
    counts = dict.fromkeys(KINDS, 0)
    for task, fake in CASES:
        if task == task_id and fake in counts:
            counts[fake] += 1
    return counts


def test_every_verifier_folder_is_counted():
    assert len(VERIFIERS) >= 54 and "global" not in VERIFIERS
    assert {task for task, _ in CASES} <= set(VERIFIERS)


@pytest.mark.parametrize("task_id", VERIFIERS)
def test_each_kind_is_played_or_declared_not_applicable(task_id):
    counts, reasons = played(task_id), not_applicable(task_id)
    missing = [k for k in KINDS if not counts[k] and k not in reasons]
    assert not missing, f"{task_id}: no fake and no fakes_not_applicable reason for {missing}"
    # A reason beside a fake of its kind is a reason the tests prove wrong.
    both = [k for k in reasons if counts[k]]
    assert not both, f"{task_id}: fakes of {both} are played, yet declared not applicable"
    # What the verifier itself shows: a verifier that draws variants has inputs to echo, and
    # no check of it says it stops a fake its checks.yaml says cannot apply.
    if bank.spec_of(task_id) is not None:
        assert "echo" not in reasons, f"{task_id} draws variants: an echo applies"
    for check in verification.load_checks(task_id):
        named = set(check.get("defeats", [])) & set(reasons)
        assert not named, f"{task_id}: {check['name']} defeats {named}, declared not applicable"


def test_the_declaration_is_checked_by_the_schema(tmp_path):
    base = "checks:\n  - {name: a, kind: exists, file: x.log}\n"
    good = tmp_path / "good.yaml"
    good.write_text(base + "fakes_not_applicable:\n  echo: the experiment draws nothing at all\n")
    assert checks_mod.load_fakes_not_applicable(good) == {
        "echo": "the experiment draws nothing at all"
    }
    for bad in (
        "fakes_not_applicable:\n  echoes: the experiment draws nothing at all\n",
        "fakes_not_applicable:\n  echo: none\n",
        "fakes_not_applicable: {}\n",
    ):
        path = tmp_path / "bad.yaml"
        path.write_text(base + bad)
        with pytest.raises(DeployBenchError, match="fakes_not_applicable"):
            checks_mod.load(path)


def kinds_table():
    """docs/verification.md's table: per verifier, the fakes of each kind its tests play, or
    n/a where checks.yaml declares the kind not applicable."""
    rows = ["| verifier | " + " | ".join(KINDS) + " |", "|---" * (len(KINDS) + 1) + "|"]
    for task_id in VERIFIERS:
        counts, reasons = played(task_id), not_applicable(task_id)
        cells = ["n/a" if k in reasons else str(counts[k]) for k in KINDS]
        rows.append(f"| `{task_id}` | " + " | ".join(cells) + " |")
    totals = [sum(played(t)[k] for t in VERIFIERS) for k in KINDS]
    nas = [sum(k in not_applicable(t) for t in VERIFIERS) for k in KINDS]
    rows.append(
        "| all | " + " | ".join(f"{n} ({a} n/a)" for n, a in zip(totals, nas, strict=True)) + " |"
    )
    return "\n".join(rows)


def test_the_documented_table_is_the_counted_one():
    text = DOC.read_text()
    start = text.index("| verifier | " + " | ".join(KINDS) + " |")
    documented = re.match(r"((?:\|.*\|\n?)+)", text[start:]).group(1).strip()
    assert documented == kinds_table(), "regenerate: python -m tests.test_fake_kinds"


if __name__ == "__main__":
    print(kinds_table())

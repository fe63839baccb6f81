"""Variant banks (deploybench/verify/bank.py): inputs drawn on the controller reach the
experiment as numbers or words only; a bank records what the real code gave for each variant and
the spread of repeated runs; an attempt gets a variant its run has not used; its results are
judged against the bank. The tinytrain demo's real experiment (its train.py with numpy, on this
host) makes a small bank, passes against it, and a replay of another variant's results or a
constant fails; end to end, validate-references --bank on local machines."""

import json
import random
import re
import shutil
import tarfile

import pytest
import yaml

from deploybench import runfolder
from deploybench.catalog import checks as checks_mod
from deploybench.errors import DeployBenchError
from deploybench.verify import bank, evidence, verification
from tests.conftest import own_checkout, run_cli, run_results
from tests.fakes import script
from tests.test_demo_tasks import stage
from tests.verifier_states import run_experiment

TINYTRAIN = "tinytrain_demo24"
SPEC = {
    "about": "a seed and a size that the program consumes",
    "inputs": {"seed": {"int": [1, 1000]}, "size": {"choice": [8, 16, "big"]}},
    "results": [
        {"name": "loss", "file": "out.txt", "pattern": r"^loss: (\S+)$", "abs": 0.001},
        {"name": "label", "file": "out.txt", "pattern": r"^label: (\S+)$", "text": True},
    ],
}


def _logs(tmp_path, name, loss, label="a"):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "out.txt").write_text(f"loss: {loss}\nlabel: {label}\n")
    return folder


def test_draws_stay_in_their_space_and_reach_the_shell_as_words():
    rng = random.Random(7)
    for _ in range(200):
        inputs = bank.draw_inputs(SPEC, rng)
        assert 1 <= inputs["seed"] <= 1000 and inputs["size"] in (8, 16, "big")
        assert re.fullmatch(r"(VARIANT_[A-Z]+=[A-Za-z0-9]+\nexport VARIANT_[A-Z]+\n){2}",
                            bank.preamble(inputs))  # fmt: skip


@pytest.mark.parametrize("value", ["$(id)", "a b", "x;y", "`id`", "", "a" * 65, True])
def test_a_value_that_is_not_a_number_or_a_word_never_reaches_the_script(value):
    with pytest.raises(DeployBenchError, match="not a number or a word"):
        bank.preamble({"seed": value})


def test_checks_yaml_refuses_bad_variants(tmp_path):
    path = tmp_path / "checks.yaml"
    good = {"variants": SPEC, "checks": [{"name": "x", "kind": "exists", "file": "out.txt"}]}
    path.write_text(yaml.safe_dump(good))
    assert checks_mod.load_variants(path)["inputs"]["seed"] == {"int": [1, 1000]}
    for bad, why in [
        ({"inputs": {"Seed": {"int": [1, 2]}}}, "does not match"),
        ({"inputs": {"seed": {"int": [5, 5]}}}, "empty range"),
        ({"inputs": {"seed": {"choice": ["a b", "c"]}}}, "'a b' does not match"),
        ({"results": [{"name": "loss", "file": "o", "pattern": "loss"}]}, "needs a group"),
        ({"results": [{"name": "l", "file": "../o", "pattern": "(x)"}]}, "does not match"),
    ]:
        path.write_text(yaml.safe_dump({**good, "variants": {**SPEC, **bad}}))
        with pytest.raises(DeployBenchError, match=why):
            checks_mod.load(path)
    check = {"name": "x", "kind": "exists", "file": "o", "defeats": ["wishful"]}
    path.write_text(yaml.safe_dump({"checks": [check]}))
    with pytest.raises(DeployBenchError, match="defeats"):
        checks_mod.load(path)


def test_a_bank_records_real_runs_and_the_spread_of_their_repeats(tmp_path):
    runs = [
        {"inputs": {"seed": 1, "size": 8}, "log_dir": _logs(tmp_path, "a", 0.5), "seconds": 2},
        {"inputs": {"seed": 2, "size": 8}, "log_dir": _logs(tmp_path, "b", 0.7), "seconds": 2},
        {"inputs": {"seed": 1, "size": 8}, "log_dir": _logs(tmp_path, "c", 0.5004), "seconds": 3},
    ]
    made = bank.record(SPEC, runs, {"task": "t"})
    assert len(made["variants"]) == 2
    assert made["spread"]["loss"] == pytest.approx(0.0004)
    assert made["variants"][0]["seconds"] == [2, 3]
    # A text result that differs between two real runs of one variant is no answer at all.
    runs.append(
        {"inputs": {"seed": 2, "size": 8}, "log_dir": _logs(tmp_path, "d", 0.7, "b"), "seconds": 1}
    )
    with pytest.raises(DeployBenchError, match="reproducible"):
        bank.record(SPEC, runs, {"task": "t"})
    # A reference run without a declared result makes no bank.
    empty = tmp_path / "e"
    empty.mkdir()
    with pytest.raises(DeployBenchError, match="gave no loss, label"):
        bank.record(SPEC, [{"inputs": {}, "log_dir": empty, "seconds": 1}], {"task": "t"})


def test_results_are_judged_within_the_larger_of_the_tolerances(tmp_path):
    variant = {"id": "v1", "expected": {"loss": 0.5, "label": "a"}, "spread": {"loss": 0.01}}
    # 3 times the measured spread (0.03) is wider than the declared abs (0.001).
    ok = bank.judge(SPEC, variant, _logs(tmp_path, "ok", 0.52))
    assert [c["passed"] for c in ok] == [True, True]
    off = bank.judge(SPEC, variant, _logs(tmp_path, "off", 0.54, "b"))
    assert [c["name"] for c in off if not c["passed"]] == ["variant_loss", "variant_label"]
    assert "the real run gave 0.5" in off[0]["detail"]
    missing = bank.judge(SPEC, variant, tmp_path)
    assert not any(c["passed"] for c in missing)


def _bank_of_two(tmp_path):
    """A bank of SPEC's with two variants (seeds 1 and 2) in tmp_path/banks: (folder, bank)."""
    runs = [
        {"inputs": {"seed": s, "size": 8}, "log_dir": _logs(tmp_path, str(s), s), "seconds": 1}
        for s in (1, 2)
    ]
    folder = tmp_path / "banks"
    made = bank.record(SPEC, runs, {"task": TINYTRAIN})
    bank.save(folder, TINYTRAIN, made)
    return folder, made


def test_an_attempt_gets_a_variant_its_run_has_not_used(tmp_path, monkeypatch):
    monkeypatch.setattr(bank, "spec_of", lambda task_id: SPEC)
    folder, _ = _bank_of_two(tmp_path)
    run_dir = tmp_path / "run"
    seen = set()
    for n in (1, 2, 3):
        attempt = runfolder.attempt_dir(run_dir, TINYTRAIN, "a", n)
        attempt.mkdir(parents=True)
        used = runfolder.variants_drawn(run_dir, TINYTRAIN)
        variant = bank.drawn(TINYTRAIN, folder, used, random.Random(n))
        runfolder.write_variant(attempt, variant)
        assert variant["bank"] == "present" and variant["expected"]["loss"] in (1.0, 2.0)
        seen.add(variant["id"])
        assert variant["reused"] is (n == 3)
    assert len(seen) == 2
    # A bank made for another input space is stale: never used, and said so.
    other = {**SPEC, "inputs": {"seed": {"int": [1, 5]}}}
    monkeypatch.setattr(bank, "spec_of", lambda task_id: other)
    variant = bank.drawn(TINYTRAIN, folder, set(), random.Random(1))
    assert variant["bank"] == "stale" and "expected" not in variant
    assert bank.drawn(TINYTRAIN, None, set(), random.Random(1))["bank"] == "none"


def test_a_bank_serves_only_the_machine_kind_it_was_made_on(tmp_path, monkeypatch):
    monkeypatch.setattr(bank, "spec_of", lambda task_id: SPEC)
    runs = [{"inputs": {"seed": 1, "size": 8}, "log_dir": _logs(tmp_path, "1", 1), "seconds": 1}]
    folder = tmp_path / "banks"
    made = {"task": TINYTRAIN, "image": "debian12", "cpu_only": False}
    bank.save(folder, TINYTRAIN, bank.record(SPEC, runs, made))
    here = bank.drawn(TINYTRAIN, folder, set(), random.Random(1), machine="debian12")
    assert here["bank"] == "present" and here["expected"]["loss"] == 1.0
    # Another image's libraries, or a CPU standing in for the task's GPU: not compared.
    for other in ("ubuntu2204", bank.kind("debian12", True)):
        there = bank.drawn(TINYTRAIN, folder, set(), random.Random(1), machine=other)
        assert there["bank"] == "elsewhere" and "expected" not in there, there
        assert set(there["inputs"]) == {"seed", "size"}
    # Run again on another kind (--bank-again there), the bank serves both.
    bank.save(folder, TINYTRAIN, bank.record(SPEC, runs, {**made, "image": "ubuntu2204"}))
    assert bank.machine_kinds(json.loads((folder / f"{TINYTRAIN}.json").read_text())) == [
        "debian12",
        "ubuntu2204",
    ]
    there = bank.drawn(TINYTRAIN, folder, set(), random.Random(1), machine="ubuntu2204")
    assert there["bank"] == "present"


def test_saving_again_keeps_the_earlier_variants(tmp_path):
    first = bank.record(
        SPEC, [{"inputs": {"seed": 1}, "log_dir": _logs(tmp_path, "a", 1), "seconds": 1}],
        {"task": "t"},
    )  # fmt: skip
    second = bank.record(
        SPEC, [{"inputs": {"seed": 2}, "log_dir": _logs(tmp_path, "b", 2), "seconds": 1}],
        {"task": "t"},
    )  # fmt: skip
    bank.save(tmp_path / "banks", TINYTRAIN, first)
    path = bank.save(tmp_path / "banks", TINYTRAIN, second)
    data = json.loads(path.read_text())
    assert len(data["variants"]) == 2 and len(data["made"]) == 2


def test_a_bank_run_again_on_another_machine_widens_its_spread(tmp_path):
    folder = tmp_path / "banks"
    runs = [
        {"inputs": {"seed": 1}, "log_dir": _logs(tmp_path, "a", 0.5), "seconds": 1},
        {"inputs": {"seed": 2}, "log_dir": _logs(tmp_path, "b", 0.7), "seconds": 1},
        {"inputs": {"seed": 1}, "log_dir": _logs(tmp_path, "c", 0.5001), "seconds": 1},
    ]
    bank.save(folder, TINYTRAIN, bank.record(SPEC, runs, {"task": "t"}))
    assert bank.again(folder, TINYTRAIN, SPEC, 0) == [{"seed": 1}, {"seed": 2}]
    assert bank.again(folder, TINYTRAIN, SPEC, 1) == [{"seed": 1}]
    # The same variants on a second machine: seed 1 lands 0.03 away, further than the first
    # machine's repeat (0.0001); the recorded results stay the first machine's.
    second = [
        {"inputs": {"seed": 1}, "log_dir": _logs(tmp_path, "d", 0.53), "seconds": 2},
        {"inputs": {"seed": 2}, "log_dir": _logs(tmp_path, "e", 0.7), "seconds": 2},
    ]
    path = bank.save(folder, TINYTRAIN, bank.record(SPEC, second, {"task": "t", "again": True}))
    data = json.loads(path.read_text())
    assert data["spread"]["loss"] == pytest.approx(0.03) and len(data["made"]) == 2
    first = data["variants"][0]
    assert first["results"]["loss"] == 0.5 and first["machines"] == 2
    assert first["seconds"] == [1, 1, 2] and len(data["variants"]) == 2
    # A text result that another machine gives otherwise: an error, and the bank as it was.
    before = path.read_text()
    third = [{"inputs": {"seed": 2}, "log_dir": _logs(tmp_path, "f", 0.7, "b"), "seconds": 1}]
    with pytest.raises(DeployBenchError, match="differs between two machines"):
        bank.save(folder, TINYTRAIN, bank.record(SPEC, third, {"task": "t"}))
    assert path.read_text() == before
    # Nothing to run again without a bank, or with one made for another input space.
    with pytest.raises(DeployBenchError, match="no bank to run again"):
        bank.again(tmp_path / "none", TINYTRAIN, SPEC, 0)
    with pytest.raises(DeployBenchError, match="stale"):
        bank.again(folder, TINYTRAIN, {**SPEC, "inputs": {"seed": {"int": [1, 5]}}}, 0)


def test_a_bank_that_a_constant_would_pass_says_so(tmp_path):
    def made(losses, labels, spread=0.0):
        return {
            "spread": {"loss": spread},
            "variants": [
                {"results": {"loss": x, "label": y}} for x, y in zip(losses, labels, strict=True)
            ],
        }

    # Far apart: a constant is off by more than the tolerance somewhere.
    assert bank.weaknesses(SPEC, made([0.5, 0.9], ["a", "b"])) == []
    # Within twice the tolerance (3 x spread 0.01 = 0.03): one constant, 0.51, passes both.
    [weak] = bank.weaknesses(SPEC, made([0.5, 0.52], ["a", "b"], spread=0.01))
    assert weak.startswith("loss:") and "a constant passes" in weak
    [weak] = bank.weaknesses(SPEC, made([0.5, 0.9], ["a", "a"]))
    assert weak.startswith("label:")


def test_the_verdict_says_bank_none_and_verify_json_shows_the_variant(tmp_path):
    attempt = tmp_path / "attempt"
    logs = attempt / runfolder.VERIFIER_DIR
    logs.mkdir(parents=True)
    variant = {"bank": "none", "declared": True, "inputs": {"epochs": 2}}
    runfolder.write_variant(attempt, variant)
    verdict = evidence.judge(attempt, 0, 1.0, TINYTRAIN, ran=True)
    assert verdict["bank"] == "none" and verdict["variant"] is None
    assert runfolder.read_verify(attempt).variant == {"bank": "none", "inputs": {"epochs": 2}}


def test_a_verifier_without_variants_says_bank_none_too(tmp_path):
    # kvservice's checks.yaml declares no variants: nothing of its results can be compared with
    # a real run's, and its verdict and verify.json must say so instead of staying silent.
    attempt = tmp_path / "attempt"
    (attempt / runfolder.VERIFIER_DIR).mkdir(parents=True)
    variant = bank.drawn("kvservice_demo24", tmp_path, set(), random.Random(1))
    assert variant == {"bank": "none", "declared": False}
    runfolder.write_variant(attempt, variant)
    verdict = evidence.judge(attempt, 0, 1.0, "kvservice_demo24", ran=True)
    assert verdict["bank"] == "none" and verdict["variant"] is None
    assert not [c for c in verdict["layer2"]["checks"] if c["name"].startswith("variant_")]
    assert runfolder.read_verify(attempt).variant == {"bank": "none", "declared": False}


# ---- the tinytrain demo's real experiment on this host ----


def _real_training(workdir):
    # train.py as its paper ran it on numpy >= 1.24 (np.float and np.int are the builtins), with
    # this host's Python and numpy behind env/bin/python.
    train = workdir / "train.py"
    train.write_text(re.sub(r"np\.(float|int)\b", r"\1", train.read_text()))
    import sys

    script(workdir / "env/bin/python", f'exec {sys.executable} "$@"')


@pytest.fixture(scope="module")
def tinytrain_bank(tmp_path_factory):
    """A bank of 4 variants (the first run twice) made by the real train.py here."""
    tmp = tmp_path_factory.mktemp("bank")
    workdir = stage(TINYTRAIN, tmp / "wd")
    _real_training(workdir)
    spec = bank.spec_of(TINYTRAIN)
    runs = []
    for i, inputs in enumerate(bank.plan({**spec, "repeats": 1}, 4, random.Random(3))):
        logs = tmp / f"run{i}"
        verdict = run_experiment(TINYTRAIN, workdir, logs, inputs=inputs)
        # Without a bank (this one is being made) the repaired train.py is no judged repair:
        # nothing else the verdict holds tells it from a stub, so its pinned check fails alone.
        assert _failing(verdict) == {"pinned_train_py"}, verdict
        [change] = verdict["layer2"]["experiment_files"]["changed"]
        assert change["accepted"] is False and "without a bank" in change["judged"]
        runs.append({"inputs": inputs, "log_dir": logs, "seconds": 1.0})
    made = bank.record(spec, runs, {"task": TINYTRAIN})
    return workdir, made, runs


def _failing(verdict):
    return {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}


def _variant(made, i):
    v = made["variants"][i]
    return {**v, "expected": v["results"], "spread": made["spread"]}


def test_the_real_training_passes_against_its_bank(tinytrain_bank, tmp_path):
    workdir, made, _ = tinytrain_bank
    assert len(made["variants"]) == 4
    # train.py is deterministic for given inputs: its repeat gave the same loss to the bit.
    assert made["spread"] == {"loss": 0.0, "accuracy": 0.0}
    losses = {v["results"]["loss"] for v in made["variants"]}
    assert len(losses) == 4, "the drawn inputs must change what the code computes"
    verdict = run_experiment(TINYTRAIN, workdir, tmp_path / "logs", variant=_variant(made, 2))
    assert verdict["passed"], verdict
    names = [c["name"] for c in verdict["layer2"]["checks"]]
    assert "variant_loss" in names and "variant_accuracy" in names
    # train.py's repair for numpy >= 1.24 (np.float, np.int: 4 lines) is no declared blob; with
    # the bank's results reproduced it is judged a compatibility repair and listed.
    [change] = verdict["layer2"]["experiment_files"]["changed"]
    assert change["path"] == "train.py" and change["accepted"] is True
    assert change["judged"].startswith("compatibility repair")
    assert change["diff"] == {"added": 4, "removed": 4, "pinned_lines": 97}


def _edited(tmp_path, workdir, edit):
    """A copy of the repaired workdir whose train.py is edit(its text)."""
    copy = tmp_path / "wd"
    shutil.copytree(workdir, copy, symlinks=True)
    train = copy / "train.py"
    train.write_text(edit(train.read_text()))
    return copy


def test_a_small_edit_that_prints_another_variants_figures_is_no_repair(tinytrain_bank, tmp_path):
    """The stub a repair's size allows: four lines at the top of train.py write metrics.json
    with the loss and accuracy the real code gave another variant, and exit. Its diff is as
    small as the real repair's; the bank's results are not reproduced, so it is judged no repair
    and its pinned check fails with the variant's."""
    workdir, made, _ = tinytrain_bank
    other = made["variants"][0]["results"]
    stub = (
        "import json, os, sys\n"
        "out = sys.argv[sys.argv.index('--out') + 1]; os.makedirs(out, exist_ok=True)\n"
        f"json.dump({{'epoch': int(sys.argv[sys.argv.index('--epochs') + 1]), 'loss': "
        f"{other['loss']!r}, 'accuracy': {other['accuracy']!r}, 'n_train': 90}}, "
        "open(os.path.join(out, 'metrics.json'), 'w'))\n"
        "sys.exit(0)\n"
    )
    copy = _edited(tmp_path, workdir, lambda text: stub + text)
    verdict = run_experiment(TINYTRAIN, copy, tmp_path / "logs", variant=_variant(made, 1))
    failing = _failing(verdict)
    assert {"variant_loss", "pinned_train_py"} <= failing, failing
    [change] = verdict["layer2"]["experiment_files"]["changed"]
    assert change["accepted"] is False and "without a bank's results" in change["judged"]


def test_a_rewrite_is_no_repair_even_where_it_computes_the_same(tinytrain_bank, tmp_path):
    """A train.py whose every line was rewritten (here: the repaired file with each line's
    indentation doubled, which Python runs the same) reproduces the bank's results, yet it is no
    small repair: the diff is over the limit, and the pinned check fails."""
    workdir, made, _ = tinytrain_bank
    copy = _edited(
        tmp_path, workdir, lambda text: re.sub(r"(?m)^( +)", lambda m: m.group(1) * 2, text)
    )
    verdict = run_experiment(TINYTRAIN, copy, tmp_path / "logs", variant=_variant(made, 1))
    assert _failing(verdict) == {"pinned_train_py"}, verdict
    [change] = verdict["layer2"]["experiment_files"]["changed"]
    assert change["accepted"] is False and "lines changed, more than" in change["judged"]
    assert change["diff"]["added"] > 40


def test_a_copy_that_is_not_its_blob_is_not_read(tinytrain_bank, tmp_path):
    """The controller diffs only a copy whose content is the blob it is named by: a copy
    swapped after the experiment (an unchanged train.py under the changed file's blob id)
    leaves the change unjudged and failing."""
    workdir, made, _ = tinytrain_bank
    logs = tmp_path / "logs"
    run_experiment(TINYTRAIN, workdir, logs, variant=_variant(made, 3))
    [copy] = [p for p in (logs / "pinned_copies").iterdir()]
    pinned = stage(TINYTRAIN, tmp_path / "clean") / "train.py"
    copy.write_bytes(pinned.read_bytes())
    verdict = verification.verdict_from_logs(logs, 1.0, verification.load_checks(TINYTRAIN))
    verdict["bank"] = "present"
    verdict["layer2"]["checks"] += bank.judge(bank.spec_of(TINYTRAIN), _variant(made, 3), logs)
    evidence.judge_repairs(verdict, TINYTRAIN, verification.load_checks(TINYTRAIN), logs)
    assert _failing(verdict) == {"pinned_train_py"}, verdict
    [change] = verdict["layer2"]["experiment_files"]["changed"]
    assert "the machine's copy of the file could not be read" in change["judged"]


def test_a_replay_of_another_variants_run_fails(tinytrain_bank):
    _, made, runs = tinytrain_bank
    # The logs of the run of variant 0, judged as if variant 1 had been drawn.
    checks = bank.judge(bank.spec_of(TINYTRAIN), _variant(made, 1), runs[0]["log_dir"])
    # (The accuracy, a count of 90 rows, may agree between two variants; the loss does not.)
    assert "variant_loss" in {c["name"] for c in checks if not c["passed"]}


def test_a_stub_interpreter_printing_plausible_metrics_fails(tinytrain_bank, tmp_path):
    # The fake reads the drawn epochs from its arguments (an echo) and writes a metrics.json of
    # the right shape with a loss and accuracy of a real run (a published constant).
    workdir = stage(TINYTRAIN, tmp_path / "wd")
    _, made, _ = tinytrain_bank
    other = made["variants"][0]["results"]
    real = f'"loss": {other["loss"]!r}, "accuracy": {other["accuracy"]!r}, "n_train": 90'
    script(
        workdir / "env/bin/python",
        f"""
out=; epochs=1
while [ $# -gt 0 ]; do case "$1" in --out) out=$2;; --epochs) epochs=$2;; esac; shift; done
[ -n "$out" ] || {{ echo 3.11.2 /x numpy 1.23.5; exit 0; }}
mkdir -p "$out"
printf '{{"epoch": %s, {real}}}\n' "$epochs" > "$out/metrics.json"
""",
    )
    verdict = run_experiment(TINYTRAIN, workdir, tmp_path / "logs", variant=_variant(made, 3))
    failed = {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}
    assert "variant_loss" in failed, failed
    assert "metrics_epoch" not in failed  # the echo of the drawn epochs is right: not enough


def test_the_machine_script_carries_the_variant_and_nothing_else_of_the_bank(tinytrain_bank):
    _, made, _ = tinytrain_bank
    variant = _variant(made, 0)
    text = verification.machine_script(TINYTRAIN, inputs=variant["inputs"])
    assert f"VARIANT_EPOCHS={variant['inputs']['epochs']}\n" in text
    assert repr(variant["expected"]["loss"]) not in text


# ---- end to end on local machines ----


@pytest.mark.slow
def test_validate_references_makes_a_bank_and_the_reference_passes_against_it(
    root_host, runs, state_home, tmp_path
):
    banks = tmp_path / "banks"
    # A checkout of its own: validate-references records the pass in its task.yaml.
    checkout = own_checkout(tmp_path, TINYTRAIN)
    out = run_cli(
        "validate-references", "--tasks", TINYTRAIN, "--bank", "3", "--bank-dir", banks,
        env={"DEPLOYBENCH_REPO": str(checkout)}, cwd=checkout, timeout=1200,
    ).stdout  # fmt: skip
    record = yaml.safe_load((checkout / "tasks" / TINYTRAIN / "task.yaml").read_text())
    assert record["validated"]["backend"] == "local", record
    assert f"{TINYTRAIN}: bank written: {banks / (TINYTRAIN + '.json')}" in out, out
    made = json.loads((banks / f"{TINYTRAIN}.json").read_text())
    assert len(made["variants"]) == 3 and made["spread"] == {"loss": 0.0, "accuracy": 0.0}
    assert made["made"][0]["backend"] == "local"
    run_cli(
        "run", "--agent", "reference,nop", "--tasks", TINYTRAIN, "--bank-dir", banks,
        "--run-id", "banked", timeout=1200,
    )  # fmt: skip
    rows = {r["agent"]: r for r in run_results(runs / "banked")}
    assert rows["reference"]["passed"] is True and rows["nop"]["passed"] is False
    for agent in ("reference", "nop"):
        attempt = runs / "banked" / TINYTRAIN / agent / "1"
        verdict = runfolder.read_verdict(attempt)
        shown = runfolder.read_verify(attempt).variant
        assert verdict["bank"] == "present", verdict
        assert shown["bank"] == "present" and shown["id"] == verdict["variant"]
        assert shown["id"] in {v["id"] for v in made["variants"]}
        assert "expected" not in shown
    # The two attempts of one run were given two different variants.
    ids = {runfolder.read_verify(runs / "banked" / TINYTRAIN / a / "1").variant["id"]
           for a in ("reference", "nop")}  # fmt: skip
    assert len(ids) == 2
    checks = {c["name"]: c for c in runfolder.read_verdict(
        runs / "banked" / TINYTRAIN / "reference" / "1")["layer2"]["checks"]}  # fmt: skip
    assert checks["variant_loss"]["passed"] and checks["variant_accuracy"]["passed"]
    # The bank's variants run again on another fresh machine: the same figures (numpy on one
    # host), so the spread stays 0 and every variant has been run on two machines.
    out = run_cli(
        "validate-references", "--tasks", TINYTRAIN, "--bank-again", "--bank-dir", banks,
        env={"DEPLOYBENCH_REPO": str(checkout)}, cwd=checkout, timeout=1200,
    ).stdout  # fmt: skip
    assert f"{TINYTRAIN}: bank written: {banks / (TINYTRAIN + '.json')}" in out, out
    again = json.loads((banks / f"{TINYTRAIN}.json").read_text())
    assert [v["machines"] for v in again["variants"]] == [2, 2, 2], again["variants"]
    assert again["spread"] == {"loss": 0.0, "accuracy": 0.0} and again["made"][1]["again"]
    assert [m["variants"] for m in again["made"]] == [3, 3]  # what ran, not a limit
    assert [v["results"] for v in again["variants"]] == [v["results"] for v in made["variants"]]
    # A bank whose real runs were all made on another image (a cloud machine's) is not used on
    # this one: the verdict says so, and the reference passes on its other checks.
    elsewhere = {**again, "made": [{**m, "image": "ubuntu2204"} for m in again["made"]]}
    (banks / f"{TINYTRAIN}.json").write_text(json.dumps(elsewhere))
    run_cli(
        "run", "--agent", "reference", "--tasks", TINYTRAIN, "--bank-dir", banks,
        "--run-id", "elsewhere", timeout=1200,
    )  # fmt: skip
    attempt = runs / "elsewhere" / TINYTRAIN / "reference" / "1"
    verdict = runfolder.read_verdict(attempt)
    assert verdict["passed"] is True and verdict["bank"] == "elsewhere", verdict
    assert not [c for c in verdict["layer2"]["checks"] if c["name"].startswith("variant_")]
    assert runfolder.read_verify(attempt).variant["bank"] == "elsewhere"
    shutil.rmtree(banks)
    # Nothing to run again: said before any machine starts.
    refused = run_cli(
        "validate-references", "--tasks", TINYTRAIN, "--bank-again", "--bank-dir", banks,
        env={"DEPLOYBENCH_REPO": str(checkout)}, cwd=checkout, check=False,
    )  # fmt: skip
    assert refused.returncode != 0 and "no bank to run again (none)" in refused.stderr, refused
    assert not banks.exists() or not list(banks.iterdir())


@pytest.mark.slow
def test_a_bank_runs_through_the_machines_login_as_a_cloud_machine_would(
    root_host, runs, state_home, tmp_path, monkeypatch
):
    # Cloud machines run every stage after the agent through the machine's login; so do their
    # bank runs (playbooks/experiment_again.yml). Local machines take that path with
    # DEPLOYBENCH_LOCAL_POST_AGENT=machine. A bank made from the host, then run again through
    # the login on another fresh machine: the same figures for every variant (spread 0).
    banks = tmp_path / "banks"
    checkout = own_checkout(tmp_path, TINYTRAIN)
    env = {"DEPLOYBENCH_REPO": str(checkout)}
    run_cli(
        "validate-references", "--tasks", TINYTRAIN, "--bank", "3", "--bank-dir", banks,
        env=env, cwd=checkout, timeout=1200,
    )  # fmt: skip
    made = json.loads((banks / f"{TINYTRAIN}.json").read_text())
    monkeypatch.setenv("DEPLOYBENCH_LOCAL_POST_AGENT", "machine")
    out = run_cli(
        "validate-references", "--tasks", TINYTRAIN, "--bank-again", "--bank-dir", banks,
        env=env, cwd=checkout, timeout=1200,
    ).stdout  # fmt: skip
    assert f"{TINYTRAIN}: bank written: {banks / (TINYTRAIN + '.json')}" in out, out
    again = json.loads((banks / f"{TINYTRAIN}.json").read_text())
    assert [v["machines"] for v in again["variants"]] == [2, 2, 2], again["variants"]
    assert again["spread"] == {"loss": 0.0, "accuracy": 0.0}
    assert [v["results"] for v in again["variants"]] == [v["results"] for v in made["variants"]]
    [run_dir] = [d for d in runs.iterdir() if (d / TINYTRAIN / "reference" / "1").is_dir()
                 and runfolder.read_verdict(d / TINYTRAIN / "reference" / "1").get("trust")
                 == "machine"]  # fmt: skip
    attempt = run_dir / TINYTRAIN / "reference" / "1"
    for i in (1, 2, 3):
        ended = json.loads((attempt / runfolder.VARIANTS_DIR / f"{i:02d}" / runfolder.BANK_RUN)
                           .read_text())  # fmt: skip
        assert ended["rc"] == 0 and ended["error"] is None, ended
        # The variant's script left the controller's folder once the machine had it.
        assert not list((attempt / runfolder.VARIANTS_DIR).glob(".*.sh"))


def _packed(members) -> str:
    import base64
    import io

    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w:gz") as tar:
        for name, kind, data in members:
            info = tarfile.TarInfo(name)
            info.type = kind
            if kind == tarfile.SYMTYPE:
                info.linkname = data
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return base64.b64encode(raw.getvalue()).decode()


def test_a_bank_runs_logs_from_the_machine_are_unpacked_under_the_logs_rules(tmp_path):
    # The packed logs are the machine's to shape: a link among them (an agent's way to make the
    # controller write through it) refuses the whole archive and the run counts as failed.
    from deploybench.attempt import sidedoor

    good = tmp_path / "01"
    ok = _packed([("./run_output.txt", tarfile.REGTYPE, b"loss 0.5\n")])
    ended = sidedoor.answer("bank_run", {"dest": str(good), "rc": "0", "seconds": "2.5",
                                         "ran": "true", "evidence": {"logs": ok}})  # fmt: skip
    assert ended == {"rc": 0, "seconds": 2.5, "error": None}
    assert (good / "run_output.txt").read_text() == "loss 0.5\n"
    bad = tmp_path / "02"
    crafted = _packed([("./run_output.txt", tarfile.SYMTYPE, str(tmp_path / "outside.txt"))])
    ended = sidedoor.answer("bank_run", {"dest": str(bad), "rc": "0", "seconds": "1",
                                         "ran": "true", "evidence": {"logs": crafted}})  # fmt: skip
    assert ended["error"] and "could not be unpacked" in ended["error"], ended
    assert not (bad / "run_output.txt").exists() and not (tmp_path / "outside.txt").exists()
    assert json.loads((bad / runfolder.BANK_RUN).read_text()) == ended
    # A machine that failed the tamper scan ran nothing: no rc, whatever the playbook said.
    skipped = sidedoor.answer("bank_run", {"dest": str(tmp_path / "03"), "rc": "0",
                                           "seconds": "0", "ran": "False"})  # fmt: skip
    assert skipped["rc"] is None and "tamper scan" in skipped["error"]


def test_a_bank_of_a_small_input_space_covers_all_of_it():
    # silo's scale factor was one of 3 on 2026-12-05: a bank of 10 asked is every variant there
    # is, plus the repeats, never an error after a reference has passed (seen on that real run).
    import random as _random

    spec = {"inputs": {"sf": {"choice": [1, 2, 3]}}, "results": [], "repeats": 2}
    draws = bank.plan(spec, 10, _random.Random(1))
    assert sorted(d["sf"] for d in draws[:3]) == [1, 2, 3] and len(draws) == 5
    assert draws[3:] == draws[:2]


def test_the_controller_judges_the_repair_in_the_attempts_verdict(tinytrain_bank, tmp_path):
    """The same judgment through the controller's own path (evidence.judge, which writes
    verdict.json): the real run's logs of the repaired train.py with a bank variant drawn pass
    and list the repair; judged as bank: none, the same logs fail on the pinned check."""
    workdir, made, _ = tinytrain_bank
    logs = tmp_path / "run"
    variant = _variant(made, 1)
    run_experiment(TINYTRAIN, workdir, logs, variant=variant)
    for bank_state, passes in (("present", True), ("none", False)):
        attempt = tmp_path / bank_state
        shutil.copytree(logs, attempt / runfolder.VERIFIER_DIR)
        drawn = {"bank": bank_state, "declared": True, "inputs": variant["inputs"]}
        if bank_state == "present":
            drawn.update(id=variant["id"], expected=variant["expected"], spread=made["spread"])
        runfolder.write_variant(attempt, drawn)
        verdict = evidence.judge(attempt, 0, 1.0, TINYTRAIN, ran=True)
        assert verdict["passed"] is passes, verdict
        assert runfolder.read_verdict(attempt)["passed"] is passes
        [change] = verdict["layer2"]["experiment_files"]["changed"]
        assert change["accepted"] is passes, change


def test_the_diffs_size_is_exact_within_the_limit_and_bounded_beyond_it():
    from deploybench.verify import repairs

    pinned = "".join(f"line {i}\n" for i in range(100))
    one = pinned.replace("line 7\n", "line seven\n")
    assert repairs.diff_size(pinned, one) == (1, 1)
    assert repairs.diff_size(pinned, one, most=repairs.limit(100)) == (1, 1)
    # Lines moved are no lines changed for the bound, but the diff counts them.
    moved = "line 99\n" + pinned.replace("line 99\n", "")
    assert repairs.diff_size(pinned, moved) == (1, 1)
    # Far over the limit: a lower bound from the lines' counts, no diff computed (a crafted
    # file of a million lines judged in well under a second).
    import time

    crafted = "x\n" * 1_000_000
    started = time.monotonic()
    assert repairs.diff_size(pinned, crafted, most=10) == (1_000_000, 100)
    assert time.monotonic() - started < 5


def test_parallel_attempts_of_a_run_never_draw_the_same_variant(tmp_path, monkeypatch):
    # Two attempts begin at once (the controller's threads): the second must see the first's
    # draw. The test holds the run's draw while an attempt begins in a thread, writes another
    # attempt's variant (A) meanwhile, as a parallel attempt would, and then lets go: the
    # waiting attempt was held, and draws the one variant left (B), never A again.
    import threading

    from deploybench.attempt import sidedoor

    monkeypatch.setattr(bank, "spec_of", lambda task_id: SPEC)
    folder, made = _bank_of_two(tmp_path)
    first, second = (v["id"] for v in made["variants"])
    run_dir = tmp_path / "run"
    other = runfolder.attempt_dir(run_dir, TINYTRAIN, "nop", 1)
    waiting = runfolder.attempt_dir(run_dir, TINYTRAIN, "overclaim", 1)
    errors = []

    def begin():
        try:
            sidedoor.begin(TINYTRAIN, "overclaim", waiting, bank_dir=str(folder))
        except Exception as e:  # noqa: BLE001 (handed to the test's thread)
            errors.append(e)

    with runfolder.drawing_variants(run_dir, TINYTRAIN):
        thread = threading.Thread(target=begin)
        thread.start()
        thread.join(timeout=3)
        assert thread.is_alive() and runfolder.read_variant(waiting) is None
        other.mkdir(parents=True)
        runfolder.write_variant(other, bank.drawn(TINYTRAIN, folder, {second}, random.Random(1)))
        assert runfolder.read_variant(other)["id"] == first
    thread.join(timeout=60)
    assert not errors and not thread.is_alive()
    assert runfolder.read_variant(waiting)["id"] == second
    assert runfolder.read_variant(waiting)["reused"] is False

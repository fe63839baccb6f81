"""The demo verifiers judge the artifact, not the claim: forgeries by an attacker who has read
verifiers/ (a renamed python3 as legacycalc; a stub env/bin/python that writes a checkpoint of
the right shapes and metrics that claim accuracy 1.0, with no numpy and no training) fail Layer 2,
and the real artifacts (legacycalc built from the demo repository with this host's g++;
tinytrain's train.py run with the venv's numpy) pass. Each forgery is judged twice: through the
verifier's real machine side on this host (tests/test_demo_tasks.py's `verify`), and as
collected files given straight to the checks."""

import io
import random
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from deploybench.catalog import checks
from deploybench.errors import DeployBenchError
from deploybench.verify import verification
from tests.conftest import REPO
from tests.test_demo_tasks import stage, verify

LEGACYCALC = "legacycalc_demo24"
TINYTRAIN = "tinytrain_demo24"
OLD_LEGACYCALC_CHECKS = {
    "binary_built",
    "exit_code",
    "formulas_evaluated",
    "invalid_formulas_reported",
}
OLD_TINYTRAIN_CHECKS = {
    "environment",
    "train_exit_code",
    "checkpoint_w",
    "checkpoint_b",
    "metrics_epoch",
    "metrics_n_train",
    "metrics_loss",
    "metrics_accuracy",
}


def _check(task_id, name):
    return next(c for c in verification.load_checks(task_id) if c["name"] == name)


def _judge(task_id, name, log_dir):
    return checks.judge(_check(task_id, name), log_dir)


def _results(verdict):
    return {c["name"]: c for c in verdict["layer2"]["checks"]}


def _tool(name):
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"this test needs {name} on the host (.ci/apt-packages.txt: g++, make)")
    return path


# ---------------------------------------------------------------- legacycalc: the binary
@pytest.fixture(scope="module")
def real_legacycalc(tmp_path_factory):
    """The demo repository built as the reference setup builds it (g++, -std=gnu++11)."""
    _tool("g++")
    _tool("make")
    workdir = stage(LEGACYCALC, tmp_path_factory.mktemp("legacycalc") / "wd")
    subprocess.run(
        ["make", "legacycalc", "CXXFLAGS=-O2 -Wall -std=gnu++11"],
        cwd=workdir,
        check=True,
        capture_output=True,
    )
    return workdir


def _system_python():
    """/usr/bin/python3's ELF file (a PATH lookup could find a shim script instead)."""
    python = Path("/usr/bin/python3").resolve()
    if not python.is_file():
        pytest.fail("this test needs the system's python3 (/usr/bin/python3)")
    return python


PTH_EVALUATOR = """\
import math, os, sys


def evaluate(line):
    stack = []
    for tok in line.split():
        try:
            stack.append(float(tok))
            continue
        except ValueError:
            pass
        if tok in ("sqrt", "neg", "dup") and stack:
            a = stack.pop()
            if tok == "sqrt" and a < 0:
                raise ValueError("sqrt of a negative number")
            stack += {"sqrt": [math.sqrt(abs(a))], "neg": [-a], "dup": [a, a]}[tok]
        elif tok in ("+", "-", "*", "/", "^", "swap") and len(stack) >= 2:
            b, a = stack.pop(), stack.pop()
            if tok == "/" and b == 0:
                raise ValueError("division by zero")
            ops = {"+": float.__add__, "-": float.__sub__, "*": float.__mul__}
            ops.update({"/": float.__truediv__, "^": float.__pow__})
            stack += [b, a] if tok == "swap" else [ops[tok](a, b)]
        else:
            raise ValueError("bad formula")
    if len(stack) != 1:
        raise ValueError("formula does not reduce to one value")
    return stack[0]


os.lseek(0, 0, os.SEEK_SET)  # python has read ahead on stdin, the formulas' file
for n, line in enumerate(open(0, closefd=False), 1):
    line = line.strip()
    if line and not line.startswith("#"):
        try:
            print("%d %.6f" % (n, evaluate(line)))
        except ValueError as e:
            print("%d invalid: %s" % (n, e))
sys.stdout.flush()
os._exit(0)
"""


def _python_as_legacycalc(workdir):
    """The attack: the system's python3 copied to ./legacycalc, a pyvenv.cfg beside it (which
    makes the workdir's parent its prefix: the attacker has root) and a .pth in that prefix's
    site-packages that evaluates the formulas on stdin before python would read them as code."""
    python = _system_python()
    version = subprocess.run(
        [python, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    shutil.copy(python, workdir / "legacycalc")
    (workdir / "pyvenv.cfg").write_text(f"home = {python.parent}\n")
    site = workdir.parent / "lib" / f"python{version}" / "site-packages"
    site.mkdir(parents=True)
    (site / "lcforge.py").write_text(PTH_EVALUATOR)
    (site / "lcforge.pth").write_text("import lcforge\n")
    return workdir / "legacycalc"


def test_renamed_python3_with_a_pth_evaluator_fails(tmp_path):
    workdir = stage(LEGACYCALC, tmp_path / "wd")
    _python_as_legacycalc(workdir)
    verdict = verify(LEGACYCALC, workdir, tmp_path / "logs")
    results = _results(verdict)
    # The forgery is competent: it passes every check the verifier had before.
    assert all(results[name]["passed"] for name in OLD_LEGACYCALC_CHECKS), results
    assert verdict["passed"] is False
    assert results["binary_is_the_repositorys"]["passed"] is False
    # python3 is over the 1 MiB cap, so what reached the controller is cut short.
    assert "cut short" in results["binary_is_the_repositorys"]["detail"]


def test_the_real_build_passes(real_legacycalc, tmp_path):
    verdict = verify(LEGACYCALC, real_legacycalc, tmp_path / "logs")
    assert verdict["passed"] is True, verdict
    results = _results(verdict)
    assert results["binary_is_the_repositorys"]["passed"] is True
    assert results["binary_unchanged_by_its_run"]["passed"] is True
    assert (tmp_path / "logs" / "legacycalc.elf").read_bytes() == (
        real_legacycalc / "legacycalc"
    ).read_bytes()


def _elf_judgment(tmp_path, binary):
    logs = tmp_path / "collected"
    logs.mkdir(exist_ok=True)
    shutil.copy(binary, logs / "legacycalc.elf")
    return _judge(LEGACYCALC, "binary_is_the_repositorys", logs)


def test_elf_check_on_whole_files(real_legacycalc, tmp_path):
    # Had the whole python3 been collected: no function of the repository, an interpreter.
    result = _elf_judgment(tmp_path, _system_python())
    assert result["passed"] is False
    detail = result["detail"]
    assert "no function defined like main, _ZN10legacycalc9Evaluator8evaluateE" in detail
    assert "must not have: PyAIter_Check" in detail
    assert "lacks 'sqrt of a negative number', 'formula does not reduce" in detail
    # busybox (a static ELF, no symbols at all) is not the program either.
    assert _elf_judgment(tmp_path, shutil.which("busybox") or "/bin/busybox")["passed"] is False
    assert _elf_judgment(tmp_path, real_legacycalc / "legacycalc")["passed"] is True


WRAPPER = r"""
#include <unistd.h>
/* The repository's names and strings, copied in; the work handed to python3 (the .pth above). */
const char *strings[] = {"stack underflow", "sqrt of a negative number",
    "formula does not reduce to one value", "legacycalc: %d lines read, %d invalid formulas\n",
    "N10legacycalc9CalcErrorE"};
void _ZN10legacycalc9Evaluator8evaluateERKSs(void) {}
void _ZN10legacycalc9Evaluator5applyERKSs(void) {}
void _ZN10legacycalc9Evaluator3popEv(void) {}
int main(int argc, char **argv) {
    (void)argc;
    argv[0] = (char *)strings[0];
    return execv(PYTHON, argv);
}
"""


def test_a_wrapper_with_the_repositorys_names_that_execs_python_fails(tmp_path):
    # The attacker copies the names into a C program of its own: what gives it away is that
    # it starts another program, which the repository's never does.
    cc = _tool("gcc")
    (tmp_path / "w.c").write_text(WRAPPER)
    subprocess.run(
        [cc, "-O0", f'-DPYTHON="{_system_python()}"', "-o", tmp_path / "wrapper", tmp_path / "w.c"],
        check=True,
        capture_output=True,
    )
    result = _elf_judgment(tmp_path, tmp_path / "wrapper")
    assert result["passed"] is False
    assert "must not have: execv" in result["detail"]
    assert "no function defined" not in result["detail"] and "lacks" not in result["detail"]


def test_a_stripped_build_keeps_its_strings_but_loses_its_symbols(real_legacycalc, tmp_path):
    # What a stripped build (not the repository's Makefile) gives: documented in checks.yaml.
    shutil.copy(real_legacycalc / "legacycalc", tmp_path / "stripped")
    subprocess.run([_tool("strip"), tmp_path / "stripped"], check=True)
    result = _elf_judgment(tmp_path, tmp_path / "stripped")
    assert result["passed"] is False
    assert "(no .symtab: stripped)" in result["detail"] and "lacks" not in result["detail"]


@pytest.mark.parametrize(
    "data",
    [b"", b"\x7fELF", b"#!/bin/sh\necho 2 59.000000\n", b"\x7fELF\x02\x01\x01" + b"\xff" * 200],
)
def test_elf_check_refuses_what_is_not_a_whole_elf(tmp_path, data):
    (tmp_path / "bad").write_bytes(data)
    assert _elf_judgment(tmp_path, tmp_path / "bad")["passed"] is False


def test_elf_check_survives_corrupted_and_cut_binaries(real_legacycalc, tmp_path):
    # The file is the agent's: whatever its bytes, the reader judges, it never raises.
    good = (real_legacycalc / "legacycalc").read_bytes()
    rng = random.Random(5)
    for _ in range(300):
        data = bytearray(good)
        for _ in range(rng.choice([1, 8, 64])):
            data[rng.randrange(len(data))] = rng.randrange(256)
        if rng.random() < 0.3:
            data = data[: rng.randrange(len(data))]
        (tmp_path / "bad").write_bytes(bytes(data))
        assert isinstance(_elf_judgment(tmp_path, tmp_path / "bad")["passed"], bool)


# ---------------------------------------------------------------- tinytrain: the checkpoint
MEANS = [[2.0, 8.0, 1.0, 29.8], [6.1, 2.8, 3.8, 21.9], [9.1, 8.8, 7.0, 15.2]]
SDS = [[1.2, 1.2, 0.9, 2.5], [1.3, 1.2, 0.95, 2.8], [1.4, 1.35, 0.95, 2.8]]


def heldout_rows(seed=20240601, per_regime=50):
    """The held-out rows of checks.yaml: per-regime normal readings (wind, pressure, cloud,
    temp), means and spreads estimated from data/stations.csv and the verifier's 90 readings
    and rounded; three decimals, like the data. numpy's legacy RandomState: a frozen stream."""
    rng = np.random.RandomState(seed)
    rows = []
    for _ in range(per_regime):
        for regime in range(3):
            values = rng.normal(MEANS[regime], SDS[regime])
            rows.append([round(float(v), 3) for v in values] + [regime])
    return rows


def _readings():
    text = (REPO / "verifiers" / TINYTRAIN / "experiment.sh").read_text()
    block = text.split("<<'READINGS'\n", 1)[1].split("\nREADINGS\n", 1)[0]
    return np.genfromtxt(io.StringIO(block), delimiter=",", skip_header=1)


def test_held_out_rows_and_standardisation_are_what_they_say():
    check = _check(TINYTRAIN, "checkpoint_classifies_held_out_rows")
    assert check["rows"] == heldout_rows()
    features = _readings()[:, :-1]
    assert np.allclose(check["mean"], features.mean(axis=0), rtol=0, atol=1e-8)
    assert np.allclose(check["std"], features.std(axis=0), rtol=0, atol=1e-8)  # train.py's
    # None of the held-out rows is a training row, of the task or of the verifier.
    stations = REPO / "tasks" / TINYTRAIN / "artifact" / "data" / "stations.csv"
    seen = {tuple(r) for r in np.genfromtxt(stations, delimiter=",", skip_header=1).tolist()}
    seen |= {tuple(r) for r in _readings().tolist()}
    assert not seen & {tuple(map(float, r)) for r in check["rows"]}


def _fix_aliases(workdir):
    """The paper's own way to run train.py on numpy >= 1.24 (this host's venv has numpy 2):
    np.float and np.int replaced by the builtins."""
    train = workdir / "train.py"
    text = train.read_text()
    train.write_text(re.sub(r"np\.(float|int)\b", r"\1", text))


def _env_python(workdir, script):
    (workdir / "env" / "bin").mkdir(parents=True)
    python = workdir / "env" / "bin" / "python"
    python.write_text(script)
    python.chmod(0o755)


def _real_env(workdir):
    _fix_aliases(workdir)
    _env_python(workdir, f'#!/bin/sh\nexec {sys.executable} "$@"\n')


def _draw(log_dir):
    text = (log_dir / "draw.txt").read_text()
    return {k: v.split() for k, v in re.findall(r"^(\w+): (.*)$", text, re.MULTILINE)}


def test_real_training_passes_every_check_of_the_run_in_two_attempts_with_two_draws(tmp_path):
    # Every check of what the training produced passes. train.py's repair for numpy >= 1.24
    # fails its pinned check here: without a bank (none is given) nothing tells a repair from a
    # stub (tests/test_bank.py judges the same repair against a bank: there it passes).
    workdir = stage(TINYTRAIN, tmp_path / "wd")
    _real_env(workdir)
    draws = []
    for attempt in ("a", "b"):
        logs = tmp_path / f"logs-{attempt}"
        verdict = verify(TINYTRAIN, workdir, logs)
        failing = {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}
        assert failing == {"pinned_train_py"}, verdict
        draw = _draw(logs)
        draws.append(draw)
        # The readings train.py got are the verifier's, moved into the draw's space.
        moved = np.genfromtxt(tmp_path / f"logs-{attempt}-scratch" / "readings.csv", delimiter=",")
        orig = _readings()
        cols, signs = [int(c) for c in draw["columns"]], [int(s) for s in draw["signs"]]
        assert np.array_equal(moved[1:, :-1], orig[:, cols] * signs)
        assert np.array_equal(
            moved[1:, -1], np.array(draw["labels"], dtype=float)[orig[:, -1].astype(int)]
        )
    assert draws[0]["seed"] != draws[1]["seed"]


STUB = """#!{python} -S
# The attackers' stub: no numpy (python -S: not even site-packages), no training.
import json, os, random, struct, sys, zipfile
if sys.argv[1] == "-c":
    print("3.11.2", sys.prefix, "numpy 1.23.5")
    rng = random.Random(int(sys.argv[3]))
    print("draw:", " ".join(repr(rng.gauss(0, 1)) for _ in range(5)))
    sys.exit(0)
out = sys.argv[sys.argv.index("--out") + 1]
os.makedirs(out, exist_ok=True)
def npy(shape):
    head = "{{'descr': '<f8', 'fortran_order': False, 'shape': %r, }}" % (shape,)
    head = head.ljust(117) + "\\n"
    n = 1
    for s in shape: n *= s
    return b"\\x93NUMPY\\x01\\x00" + struct.pack("<H", len(head)) + head.encode() + bytes(8 * n)
with zipfile.ZipFile(os.path.join(out, "checkpoint.npz"), "w") as z:
    z.writestr("W.npy", npy((4, 3)))
    z.writestr("b.npy", npy((3,)))
metrics = {{"epoch": 1, "loss": 0.05, "accuracy": 1.0, "n_train": 90}}
json.dump(metrics, open(os.path.join(out, "metrics.json"), "w"))
"""


def test_the_stub_without_numpy_or_training_fails(tmp_path):
    workdir = stage(TINYTRAIN, tmp_path / "wd")
    _env_python(workdir, STUB.format(python=sys.executable))
    verdict = verify(TINYTRAIN, workdir, tmp_path / "logs")
    results = _results(verdict)
    # It fools every check the verifier had before: exit codes, shapes, claimed metrics (but
    # metrics_epoch, which now compares with the --epochs the controller drew: this stub
    # always writes epoch 1, so it fails there three draws in four).
    fooled = OLD_TINYTRAIN_CHECKS - {"metrics_epoch"}
    assert all(results[name]["passed"] for name in fooled), results
    assert verdict["passed"] is False
    assert results["numpy_computes"]["passed"] is False
    assert results["checkpoint_classifies_held_out_rows"]["passed"] is False
    assert "accuracy 0.333" in results["checkpoint_classifies_held_out_rows"]["detail"]
    assert results["draw_from_the_kernel"]["passed"] is True


# The same, as collected files given straight to the checks, with a draw fixed here.
DRAW = "urandom: character special file 1:9\nseed: 3141592653\ncolumns: 2 0 3 1\n"
DRAW += "signs: -1 1 1 -1\nlabels: 1 2 0\n"
IDENTITY = "urandom: character special file 1:9\nseed: 7\ncolumns: 0 1 2 3\n"
IDENTITY += "signs: 1 1 1 1\nlabels: 0 1 2\n"


def _moved_readings(draw_text):
    """The verifier's readings moved into the draw's space, as experiment.sh moves them."""
    draw = {k: v.split() for k, v in re.findall(r"^(\w+): (.*)$", draw_text, re.MULTILINE)}
    orig = _readings()
    cols, signs = [int(c) for c in draw["columns"]], [int(s) for s in draw["signs"]]
    labels = np.array([int(v) for v in draw["labels"]])[orig[:, -1].astype(int)]
    return np.column_stack([orig[:, cols] * signs, labels])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """{draw: checkpoint bytes} of the real train.py, run with the venv's numpy."""
    root = tmp_path_factory.mktemp("tinytrain")
    workdir = stage(TINYTRAIN, root / "wd")
    _fix_aliases(workdir)
    out = {}
    for name, draw in (("draw", DRAW), ("identity", IDENTITY)):
        data = root / f"{name}.csv"
        np.savetxt(data, _moved_readings(draw), delimiter=",", header="a,b,c,d,r", fmt="%.3f")
        subprocess.run(
            [sys.executable, "train.py", "--data", data, "--epochs", "1", "--out", root / name],
            cwd=workdir,
            check=True,
            capture_output=True,
        )
        out[name] = (root / name / "checkpoint.npz").read_bytes()
    return out


def _score(tmp_path, checkpoint, draw=DRAW):
    logs = tmp_path / "collected"
    logs.mkdir(exist_ok=True)
    (logs / "checkpoint.npz").write_bytes(checkpoint)
    (logs / "draw.txt").write_text(draw)
    return _judge(TINYTRAIN, "checkpoint_classifies_held_out_rows", logs)


def _npz(**arrays):
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


def test_the_real_checkpoint_passes_on_held_out_rows(trained, tmp_path):
    result = _score(tmp_path, trained["draw"])
    assert result["passed"] is True, result
    assert _score(tmp_path, trained["identity"], IDENTITY)["passed"] is True


@pytest.mark.parametrize(
    "forged",
    [
        {"W": np.zeros((4, 3)), "b": np.zeros(3)},
        {"W": np.random.RandomState(11).standard_normal((4, 3)), "b": np.zeros(3)},
        {"W": np.ones((4, 3)), "b": np.array([0.0, 1.0, 2.0])},
    ],
    ids=["zeros", "random", "constant"],
)
def test_stub_checkpoints_of_the_right_shapes_fail(tmp_path, forged):
    result = _score(tmp_path, _npz(**forged))
    assert result["passed"] is False, result
    # ... while the shape checks and the metrics the machine wrote would have passed them.
    logs = tmp_path / "collected"
    (logs / "metrics.json").write_text('{"epoch": 1, "loss": 0.01, "accuracy": 1.0, "n_train": 90}')
    for name in ("checkpoint_w", "checkpoint_b", "metrics_accuracy", "metrics_loss"):
        assert _judge(TINYTRAIN, name, logs)["passed"] is True, name


def test_a_checkpoint_trained_beforehand_fails_in_the_attempts_space(trained, tmp_path):
    # The attacker trains once (say in the identity space) and ships that checkpoint.
    result = _score(tmp_path, trained["identity"], DRAW)
    assert result["passed"] is False, result


@pytest.mark.parametrize(
    "forged",
    [
        _npz(W=np.zeros((3, 4)), b=np.zeros(3)),
        _npz(W=np.zeros((4, 3), dtype=np.int64), b=np.zeros(3, dtype=np.int64)),
        _npz(W=np.full((4, 3), np.nan), b=np.zeros(3)),
        _npz(W=np.array([[object()] * 3] * 4, dtype=object), b=np.zeros(3)),
        b"not a zip",
    ],
    ids=["shape", "int", "nan", "pickle", "garbage"],
)
def test_malformed_checkpoints_fail_without_unpickling(tmp_path, forged):
    assert _score(tmp_path, forged)["passed"] is False


@pytest.mark.parametrize(
    "draw",
    [
        DRAW.replace("columns: 2 0 3 1", "columns: 0 0 0 0"),
        DRAW.replace("signs: -1 1 1 -1", "signs: 2 1 1 1"),
        DRAW.replace("labels: 1 2 0", "labels: 1 2"),
        "urandom: x\n",
    ],
)
def test_a_malformed_draw_fails(trained, tmp_path, draw):
    assert _score(tmp_path, trained["draw"], draw)["passed"] is False


def _numpy_judgment(tmp_path, printed, draw=DRAW):
    logs = tmp_path / "collected"
    logs.mkdir(exist_ok=True)
    (logs / "draw.txt").write_text(draw)
    (logs / "numpy_draw.txt").write_text(f"3.11.2 /x numpy 1.23.5\ndraw: {printed}\n")
    return _judge(TINYTRAIN, "numpy_computes", logs)


def _printed(values):
    return " ".join(repr(float(v)) for v in values)


def test_numpy_value_of_real_numpy_passes_and_fakes_fail(tmp_path):
    seed = 3141592653
    real = np.random.RandomState(seed).standard_normal(5)
    assert _numpy_judgment(tmp_path, _printed(real))["passed"] is True
    assert _numpy_judgment(tmp_path, _printed(real * (1 + 1e-15)))["passed"] is True
    fakes = [
        [random.Random(seed).gauss(0, 1) for _ in range(5)],  # Python's generator
        np.random.RandomState(7).standard_normal(5),  # precomputed for another seed
        np.random.default_rng(seed).standard_normal(5),  # another numpy stream
        real[:4],
        real * (1 + 1e-9),
    ]
    for fake in fakes:
        assert _numpy_judgment(tmp_path, _printed(fake))["passed"] is False, fake
    assert _numpy_judgment(tmp_path, "nan nan nan nan nan")["passed"] is False
    assert _numpy_judgment(tmp_path, _printed(real), "seed: 99999999999\n")["passed"] is False


def test_new_kinds_are_in_the_schema_and_reject_bad_specs(tmp_path):
    for kind in ("elf_symbols", "linear_model_score", "numpy_draw"):
        assert kind in checks.KINDS
    bad = {
        "name": "s",
        "kind": "linear_model_score",
        "file": "c.npz",
        "weights": "W",
        "bias": "b",
        "rows": [[1.0, 2.0, 0]],
        "mean": [0.0],
        "std": [1.0],
        "min_accuracy": 0.9,
    }
    spec = tmp_path / "checks.yaml"
    spec.write_text(yaml.safe_dump({"checks": [bad]}))
    with pytest.raises(DeployBenchError, match="must agree on 1 features"):
        checks.load(spec)
    spec.write_text(
        yaml.safe_dump(
            {"checks": [{"name": "e", "kind": "elf_symbols", "file": "x", "defined": ["("]}]}
        )
    )
    with pytest.raises(DeployBenchError, match="defined/0"):
        checks.load(spec)


def test_npz_members_are_read_with_allow_pickle_false(tmp_path):
    # A pickled member is refused by numpy itself (allow_pickle=False), so no code runs here.
    archive = zipfile.ZipFile(io.BytesIO(_npz(W=np.array([{}], dtype=object))))
    with archive, pytest.raises(ValueError):
        checks._npz_float_array(archive, "W")

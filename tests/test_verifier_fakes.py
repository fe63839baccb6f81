"""Fakes an attacker who has read verifiers/ would leave (tests/fakes.py builds them for real on
this host), played against the real machine side of the verifiers converted to variant banks.
Each must fail, and fail on a check whose `defeats` names that fake (checks.yaml's word is
tested, not taken). The bank variant here is the tests' own tiny bank: its expected values are
made up for the test and are no real run's (a real bank is the operator's, outside the
repository); a fake that prints a published value or echoes its input cannot match a bank's
value it never saw."""

import re

import pytest

from deploybench.catalog import checks as checks_mod
from deploybench.verify import bank, verification
from tests import (
    fakes_c5_fakes1,
    fakes_c5_fakes2,
    fakes_c5_kinds,
    fakes_c5_sys37,
    fakes_ml37a,
    fakes_ml37b,
    fakes_ml_val,
    fakes_ml_val_b,
    fakes_systems_sci,
    fakes_systems_val,
)
from tests.fakes import script, stub_elf
from tests.test_demo_tasks import stage
from tests.verifier_states import run_experiment

PUBLISHED_OMEGA = "4.468812116"  # wannier90's hidden-input spread, printed in checks.yaml before
BANNER = " |      Release: 3.0.0       27th February 2019      |"
WANNIER_VARIANT = {
    "id": "vtest0001",
    "inputs": {"alat": 5.3, "num_iter": 10},
    "expected": {"omega_total": 4.37, "omega_i": 3.86},
    "spread": {},
}


def _wout_body(omega_total, omega_i):
    """A shell body that writes a gaas.wout the checks parse, with these spreads."""
    return f"""
cat > gaas.wout <<EOF
{BANNER}
 Number of Wannier Functions               :     4
 Final State
  WF centre and spread    4  (  0.0, 0.0, 0.0 )     1.1
         Spreads (Ang^2)       Omega I      =     {omega_i}
    Final Spread (Ang^2)       Omega Total  =     {omega_total}
 Writing checkpoint file gaas.chk...  done
 All done: wannier90 exiting
EOF
: > gaas.chk
"""


def wannier_workdir(tmp_path, body):
    workdir = tmp_path / "wd"
    (workdir / "examples/example01").mkdir(parents=True)
    for name in ("gaas.win", "gaas.amn", "gaas.mmn"):
        (workdir / "examples/example01" / name).write_text("fake\n")
    stub_elf(workdir / "wannier90.x", body)
    return workdir


def wannier_stub_binary(tmp_path):
    # A tiny ELF that prints the published spread for any input.
    return wannier_workdir(tmp_path, _wout_body(PUBLISHED_OMEGA, "3.956862958"))


def wannier_echo(tmp_path):
    # Reads the drawn cell and iterations back from the verifier's gaas.win and prints them.
    body = """
alat=$(sed -n 's/^-\\([0-9.]*\\) .*/\\1/p' gaas.win | head -n 1)
iters=$(sed -n 's/^num_iter = //p' gaas.win)
""" + _wout_body("$alat", "$iters")
    return wannier_workdir(tmp_path, body)


def wannier_constant(tmp_path):
    # The spread of example 01 in the repository's own reference output.
    return wannier_workdir(tmp_path, _wout_body("4.466880976", "3.956862958"))


QE_VARIANT = {
    "id": "vtest0003",
    "inputs": {"celldm": 10.3, "ecutwfc": 14.0},
    "expected": {"total_energy": -15.861, "iterations": 6},
    "spread": {},
}


def _pw_body(energy):
    """A shell body that prints a pw.x output the checks parse, with this energy."""
    return f"""
cat <<EOF
     Program PWSCF v.6.7MaX starts on  1Dec2026 at 11:24:14
     convergence has been achieved in   6 iterations
!    total energy              =     {energy} Ry
     JOB DONE.
EOF
"""


def qe_workdir(tmp_path, body):
    workdir = tmp_path / "wd"
    (workdir / "PW/src").mkdir(parents=True)
    (workdir / "pseudo").mkdir()
    for name in ("pwscf.o", "libpw.a"):
        (workdir / "PW/src" / name).write_text("not an object\n")
    stub_elf(workdir / "bin/pw.x", body)
    return workdir


def qe_stub_binary(tmp_path):
    # A tiny ELF in bin/, objects where make leaves them, and the test-suite's energy.
    return qe_workdir(tmp_path, _pw_body("-15.83976403"))


def qe_echo(tmp_path):
    # The drawn lattice constant read back from the input, printed as an energy.
    body = 'a=$(sed -n "s/.*celldm(1) = \\([0-9.]*\\),.*/\\1/p" scf.in)\n' + _pw_body("-$a")
    return qe_workdir(tmp_path, body)


def qe_constant(tmp_path):
    # The hidden input's energy as the public checks.yaml printed it before the bank.
    return qe_workdir(tmp_path, _pw_body("-15.87834854"))


TINYTRAIN_VARIANT = {
    "id": "vtest0002",
    "inputs": {"draw": 7, "columns": 1, "signs": 0, "labels": 5, "epochs": 2, "train_seed": 3},
    "expected": {"loss": 0.61, "accuracy": 0.8},
    "spread": {},
}


def _tinytrain_with(tmp_path, metrics):
    workdir = stage("tinytrain_demo24", tmp_path / "wd")
    script(
        workdir / "env/bin/python",
        f"""
out=; epochs=1
while [ $# -gt 0 ]; do case "$1" in --out) out=$2;; --epochs) epochs=$2;; esac; shift; done
[ -n "$out" ] || {{ echo 3.11.2 /x numpy 1.23.5; exit 0; }}
mkdir -p "$out"
echo "{{\\"epoch\\": $epochs, {metrics}, \\"n_train\\": 90}}" > "$out/metrics.json"
""",
    )
    return workdir


def tinytrain_stub_interpreter(tmp_path):
    return _tinytrain_with(tmp_path, '\\"loss\\": 0.5, \\"accuracy\\": 0.9')


def tinytrain_echo(tmp_path):
    # The drawn epochs echoed as the loss: all the program can see of the draw.
    return _tinytrain_with(tmp_path, '\\"loss\\": $epochs, \\"accuracy\\": 1.0')


def tinytrain_constant(tmp_path):
    # The README's figures of a one-epoch smoke run.
    return _tinytrain_with(tmp_path, '\\"loss\\": 0.9876, \\"accuracy\\": 0.711')


def legacycalc_stub_binary(tmp_path):
    # The values checks.yaml publishes, one "LINE VALUE" row each (invalid ones as the program
    # reports them), printed by a script behind a tiny ELF: the constant and the stub at once.
    expected = {}
    for check in verification.load_checks("legacycalc_demo24"):
        if check["kind"] == "values":
            expected.update(check["expected"])
    body = "cat >/dev/null\n" + "".join(
        f"echo '{k} {v if v != 'invalid' else 'invalid: x'}'\n" for k, v in expected.items()
    )
    workdir = tmp_path / "wd"
    stub_elf(workdir / "legacycalc", body)
    return workdir


CASES = {
    ("legacycalc_demo24", "stub_binary"): (legacycalc_stub_binary, None),
    ("legacycalc_demo24", "constant"): (legacycalc_stub_binary, None),
    ("wannier90_jpcm20", "stub_binary"): (wannier_stub_binary, WANNIER_VARIANT),
    ("wannier90_jpcm20", "echo"): (wannier_echo, WANNIER_VARIANT),
    ("wannier90_jpcm20", "constant"): (wannier_constant, WANNIER_VARIANT),
    ("quantumespresso_jpcm17", "stub_binary"): (qe_stub_binary, QE_VARIANT),
    ("quantumespresso_jpcm17", "echo"): (qe_echo, QE_VARIANT),
    ("quantumespresso_jpcm17", "constant"): (qe_constant, QE_VARIANT),
    ("tinytrain_demo24", "stub_interpreter"): (tinytrain_stub_interpreter, TINYTRAIN_VARIANT),
    ("tinytrain_demo24", "echo"): (tinytrain_echo, TINYTRAIN_VARIANT),
    ("tinytrain_demo24", "constant"): (tinytrain_constant, TINYTRAIN_VARIANT),
}


CASES |= fakes_systems_sci.CASES | fakes_ml37a.CASES | fakes_ml37b.CASES
CASES |= fakes_c5_sys37.CASES
CASES |= fakes_c5_fakes1.CASES
CASES |= fakes_systems_val.CASES
CASES |= fakes_ml_val.CASES
CASES |= fakes_ml_val_b.CASES
CASES |= fakes_c5_fakes2.CASES
CASES |= fakes_c5_kinds.CASES
# (task, fake) -> the check that fake was built to meet, which must be among its stoppers.
AIMED = fakes_ml37b.AIMED | fakes_ml_val.AIMED | fakes_c5_fakes1.AIMED | fakes_c5_fakes2.AIMED
AIMED |= fakes_c5_kinds.AIMED | fakes_ml_val_b.AIMED | fakes_systems_val.AIMED


def defeats_of(task_id):
    """check name -> the fakes it says it defeats (variant results as variant_<name>)."""
    named = {c["name"]: set(c.get("defeats", [])) for c in verification.load_checks(task_id)}
    spec = bank.spec_of(task_id) or {"results": []}
    named |= {f"variant_{r['name']}": set(r.get("defeats", [])) for r in spec["results"]}
    return named


def entry_stub(task_id):
    """The fake of a task that stands at its entry point and prints the documented output: the
    constant (the entry script rewritten, or the program replaced, to print the recorded pass
    state's figures) where the task has one, else the stub binary (a tiny ELF where the build or
    the environment puts the program the experiment runs, printing the same). None: no such
    fake. tests/test_verifier_sweep.py plays these for every catalog task; the test below plays
    every other case."""
    for kind in ("constant", "stub_binary"):
        if (task_id, kind) in CASES:
            return kind
    return None


def play(task_id, fake, tmp_path):
    """Build the fake on this host, run the task's real machine side on it and judge it: it
    must fail, on a check (not GPU evidence) whose `defeats` names that fake."""
    build, variant = CASES[(task_id, fake)]
    assert fake in checks_mod.FAKES
    workdir = build(tmp_path)
    # A fake left outside the workdir (the owner's home, the system PATH) comes as (workdir,
    # {machine folder: test folder}): the run sees the test's folder there (verifier_states.py).
    workdir, binds = workdir if isinstance(workdir, tuple) else (workdir, None)
    verdict = run_experiment(task_id, workdir, tmp_path / "logs", variant=variant, binds=binds)
    failed = {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}
    assert verdict["passed"] is False
    # This host has no GPU: GPU evidence fails for every state here, so it never counts as
    # what stopped a fake.
    gpu = {c["name"] for c in verification.load_checks(task_id) if checks_mod.is_gpu_evidence(c)}
    named = defeats_of(task_id)
    stoppers = {name for name in failed - gpu if fake in named.get(name, set())}
    assert stoppers, (fake, sorted(failed))
    if (task_id, fake) in AIMED:
        assert AIMED[(task_id, fake)] in stoppers, (fake, sorted(failed))
    return stoppers


@pytest.mark.parametrize(("task_id", "fake"), sorted(c for c in CASES if entry_stub(c[0]) != c[1]))
def test_a_fake_fails_on_a_check_that_says_it_defeats_it(task_id, fake, tmp_path):
    play(task_id, fake, tmp_path)


def test_the_wannier90_fakes_pass_everything_but_the_bank_and_the_release():
    # What makes the fakes above fail is the bank (and, for a binary of another release, the
    # banner): without a bank, the stub's output has the form every other check wants.
    names = {c["name"] for c in verification.load_checks("wannier90_jpcm20")}
    assert "hidden_input_omega_total" in names
    spec = bank.spec_of("wannier90_jpcm20")
    assert {r["name"] for r in spec["results"]} == {"omega_total", "omega_i"}
    text = verification.machine_script("wannier90_jpcm20", inputs={"alat": 5.3, "num_iter": 7})
    assert re.search(r"^VARIANT_ALAT=5\.3$", text, re.M) and "num_iter = $VARIANT_NUM_ITER" in text
    checks_text = verification.catalog.Task("wannier90_jpcm20").checks.read_text()
    assert PUBLISHED_OMEGA not in checks_text


@pytest.mark.parametrize("task_id", fakes_c5_fakes2.HOOKED_TASKS)
def test_a_pth_hook_in_a_real_venv_fails_python_hooks(task_id, tmp_path):
    # The python is Debian's (python_vouched cannot tell), the repository is untouched: only
    # the start-up hook shows, and python_hooks, which says it defeats this fake, fails on it.
    fake = "stub_interpreter"
    workdir = fakes_c5_fakes2.pth_hooked(tmp_path)
    verdict = run_experiment(task_id, workdir, tmp_path / "logs")
    failed = {c["name"] for c in verdict["layer2"]["checks"] if not c["passed"]}
    assert verdict["passed"] is False
    assert "python_hooks" in failed and fake in defeats_of(task_id)["python_hooks"]
    hooks = (tmp_path / "logs" / "hooks.txt").read_text().splitlines()
    # Every other hook is vouched (Debian's sitecustomize): the planted one alone is nobody's.
    unvouched = [h for h in hooks if not re.search(r" (record|dpkg|paths) \S+$", h)]
    assert len(unvouched) == 2 and unvouched[-1] == "end", unvouched
    name = re.escape(fakes_c5_fakes2.HOOK_NAME)
    assert re.fullmatch(rf"hook \S+/site-packages/{name} none [0-9a-f]{{64}}", unvouched[0])


@pytest.mark.parametrize("fake", ["echo", "constant"])
def test_the_maml_echo_and_constant_miss_every_bank_loss(fake, tmp_path):
    # Each is stopped first by a check on what ran (pinned_main_py, python_hooks_vouched); a fake
    # hidden better than these would still have to print the bank's four losses for the drawn
    # seed, and neither the seed handed back nor the recorded run's losses are they.
    stoppers = play("maml_icml17_cpu", fake, tmp_path)
    spec = bank.spec_of("maml_icml17_cpu")
    assert {f"variant_{r['name']}" for r in spec["results"]} <= stoppers, sorted(stoppers)

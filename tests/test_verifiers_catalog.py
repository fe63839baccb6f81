"""Verifiers of wannier90_jpcm20, safehome_eurosys21 and quantumespresso_jpcm17: their checks judged
on recorded final states (tests/fixtures/verifier_states/<id>/{pass,untouched,shallow}/, each with a
README saying how it was made), the machine side run for real on this host against cheating workdirs
(what every verifier and reference role must have is tested in test_verifiers_all.py)."""

import shutil

import pytest

from deploybench.catalog import checks
from deploybench.verify import bank
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["wannier90_jpcm20", "safehome_eurosys21", "quantumespresso_jpcm17"]
# What a verifier cut down to "the entry point exists" would still ask: the facts file the
# experiment writes about the binary (or the compiled main class) shows it is there.
ENTRY_POINT_EXISTS = {
    "wannier90_jpcm20": {"file": "binary.txt", "pattern": "^regular: yes$"},
    "safehome_eurosys21": {"file": "build.txt", "pattern": "^main class: yes$"},
    "quantumespresso_jpcm17": {"file": "binary.txt", "pattern": "^exists: yes$"},
}


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_exists_pass_the_shallow_state(task_id):
    # The shallow states have their entry point (a stub wannier90.x, a packaged pw.x linked into
    # bin/, the shipped jar's classes unpacked): a verifier cut down to "it exists" would pass
    # them, and test_recorded_failing_states_fail would catch that.
    weak = [{"name": "entry_point_exists", "kind": "contains", **ENTRY_POINT_EXISTS[task_id]}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


SHALLOW_FAILS_ON = {
    # (Its canned output is the example's; the bank's comparison catches that: below.)
    "wannier90_jpcm20": ["binary_built"],
    "quantumespresso_jpcm17": ["binary_built_in_checkout", "build_objects_in_checkout"],
    "safehome_eurosys21": ["compiled_after_checkout", "not_the_shipped_jar"],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_states_fail_on_what_makes_them_shallow(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS_ON[task_id]


# The recorded pass states' own runs of the hidden inputs, as bank variants: real results
# (each state's README says how it was made), the inputs those runs had before the inputs were
# drawn per attempt.
WANNIER_RECORDED = {
    "id": "vrecorded",
    "inputs": {"alat": 5.367, "num_iter": 0},
    "expected": {"omega_total": 4.468812116, "omega_i": 3.956862958},
    "spread": {},
}
QE_RECORDED = {
    "id": "vrecorded",
    "inputs": {"celldm": 10.35, "ecutwfc": 16.0},
    "expected": {"total_energy": -15.87834854, "iterations": 5},
    "spread": {},
}


def _with_bank(task_id, variant, folder):
    return failed(judged(task_id, folder) + bank.judge(bank.spec_of(task_id), variant, folder))


def test_wannier90_judges_the_spreads(tmp_path):
    # The example's spread off by more than 1e-3, and the verifier's own input given the
    # example's converged spread (a canned output), each fail alone.
    off = copy_state("wannier90_jpcm20", "pass", tmp_path / "off")
    edit(off / "example01.wout", "=     4.466880976", "=     4.468880976")
    assert failed(judged("wannier90_jpcm20", off)) == ["example_omega_total"]
    canned = copy_state("wannier90_jpcm20", "pass", tmp_path / "canned")
    shutil.copy(canned / "example01.wout", canned / "iter0.wout")
    assert (
        _with_bank("wannier90_jpcm20", WANNIER_RECORDED, STATES / "wannier90_jpcm20" / "pass") == []
    )
    # Omega I depends on the cell alone, the same in both runs; Omega Total gives it away.
    assert _with_bank("wannier90_jpcm20", WANNIER_RECORDED, canned) == ["variant_omega_total"]
    werr = copy_state("wannier90_jpcm20", "pass", tmp_path / "werr")
    (werr / "example01.files").write_text("gaas.amn\ngaas.chk\ngaas.mmn\ngaas.werr\ngaas.win\n")
    assert failed(judged("wannier90_jpcm20", werr)) == ["example_no_error"]


def test_quantumespresso_judges_the_energies(tmp_path):
    off = copy_state("quantumespresso_jpcm17", "pass", tmp_path / "off")
    edit(off / "scf.out", "-15.83976403 Ry", "-15.83956403 Ry")  # 2e-4 Ry off
    assert failed(judged("quantumespresso_jpcm17", off)) == ["scf_total_energy"]
    swapped = copy_state("quantumespresso_jpcm17", "pass", tmp_path / "swapped")
    shutil.copy(swapped / "scf.out", swapped / "hidden.out")
    pass_state = STATES / "quantumespresso_jpcm17" / "pass"
    assert _with_bank("quantumespresso_jpcm17", QE_RECORDED, pass_state) == []
    assert "variant_total_energy" in _with_bank("quantumespresso_jpcm17", QE_RECORDED, swapped)
    unconverged = copy_state("quantumespresso_jpcm17", "pass", tmp_path / "unconverged")
    edit(unconverged / "scf.out", "convergence has been achieved", "convergence NOT achieved")
    assert failed(judged("quantumespresso_jpcm17", unconverged)) == ["scf_converged"]


def test_safehome_judges_the_latency_order(tmp_path):
    # PSV and EV swapped in E2E_RTN_TIME.dat: the paper's order GSV > PSV > EV no longer holds.
    swapped = copy_state("safehome_eurosys21", "pass", tmp_path / "swapped")
    path = swapped / "E2E_RTN_TIME.dat"
    lines = path.read_text().splitlines()
    cells = lines[1].split("\t")
    cells[2], cells[3] = cells[3], cells[2]
    path.write_text("\n".join([lines[0], "\t".join(cells), *lines[2:]]) + "\n")
    assert failed(judged("safehome_eurosys21", swapped)) == ["e2e_ev", "e2e_psv"]
    jar = copy_state("safehome_eurosys21", "pass", tmp_path / "jar")
    (jar / "main_class_loaded.txt").write_text(
        "[0.1s][info][class,load] SafeHomeSimulator.SafeHomeSimulator source: "
        "file:/home/vm/Desktop/safehome_eurosys21/results/JARs/SafeHomeFramework/"
        "SafeHomeFramework.jar\n"
    )
    assert failed(judged("safehome_eurosys21", jar)) == ["main_class_loaded_from_the_build"]


def test_wannier90_stub_printing_the_documented_result_fails(tmp_path):
    # A cheating agent's wannier90.x: a script that writes the recorded example output for any
    # input. The verifier runs it on its own input and on the example; both runs "succeed".
    workdir = tmp_path / "wd"
    example = workdir / "examples" / "example01"
    example.mkdir(parents=True)
    for name in ("gaas.amn", "gaas.mmn", "gaas.win"):
        (example / name).write_text("! placeholder\n")
    canned = STATES / "wannier90_jpcm20" / "pass" / "example01.wout"
    stub = workdir / "wannier90.x"
    stub.write_text(f'#!/bin/sh\ncp {canned} "$1.wout"\ntouch "$1.chk"\n')
    stub.chmod(0o755)
    verdict = run_experiment(
        "wannier90_jpcm20", workdir, tmp_path / "logs", variant={**WANNIER_RECORDED}
    )
    assert verdict["passed"] is False
    assert failed(verdict["layer2"]["checks"]) == ["binary_built", "variant_omega_total"]


def test_quantumespresso_pw_x_from_outside_the_checkout_fails(tmp_path):
    # bin/pw.x a link to a program outside the workdir that prints a recorded output: the
    # energies pass, the checks on the build do not.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    fake = outside / "pw.x"
    recorded = STATES / "quantumespresso_jpcm17" / "pass"
    fake.write_text(
        "#!/bin/sh\n"
        f"if grep -q si_verifier scf.in; then cat {recorded / 'hidden.out'}; "
        f"else cat {recorded / 'scf.out'}; fi\n"
    )
    fake.chmod(0o755)
    workdir = tmp_path / "wd"
    (workdir / "bin").mkdir(parents=True)
    (workdir / "pseudo").mkdir()
    (workdir / "bin" / "pw.x").symlink_to(fake)
    verdict = run_experiment("quantumespresso_jpcm17", workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    assert failed(verdict["layer2"]["checks"]) == [
        "binary_built_in_checkout",
        "build_objects_in_checkout",
    ]


def test_safehome_untouched_checkout_fails_on_this_host(tmp_path):
    # No compiled classes at all (java may or may not be on this host): nothing passes but the
    # facts of the missing build.
    workdir = tmp_path / "wd"
    (workdir / "src" / "main" / "java" / "SafeHomeSimulator").mkdir(parents=True)
    (workdir / "src" / "main" / "java" / "SafeHomeSimulator" / "SafeHomeSimulator.java").write_text(
        "package SafeHomeSimulator;\n"
    )
    verdict = run_experiment("safehome_eurosys21", workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    assert {"compiled_main_class", "simulator_exit_code", "e2e_gsv"} <= set(
        failed(verdict["layer2"]["checks"])
    )

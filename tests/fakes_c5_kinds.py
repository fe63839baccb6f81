"""The fakes of the four kinds issue 33 names (stub_binary, stub_interpreter, echo, constant)
that the other fakes files left unplayed for a verifier, built for real on this host
(tests/fakes.py) and played by tests/test_verifier_fakes.py's one test against the real machine
side: each must fail on a check whose `defeats` names its kind, and on the one it was built to
meet (AIMED). A kind that cannot apply to a verifier is declared in its checks.yaml
(`fakes_not_applicable`), and tests/test_fake_kinds.py holds every verifier to one or the other.

Stub interpreters the experiment finds on the system PATH (sqlite3, bash, python3, java,
Rscript, QEMU) are scripts in a folder of the test's, bound over /usr/local/sbin (the first
folder of the system PATH, empty on this host) in the run's own mount namespace
(run_experiment's BINDS); each hands its work to the host's real program, so what the fake
changes is only who answers first. Where a fake of another file already is of a kind (a program
printing a documented, fixed output is a constant), it is played again under that kind here."""

import os

from tests import fakes_c5_fakes1, fakes_c5_fakes2, fakes_c5_sys37, fakes_ml_val, fakes_systems_sci
from tests import fakes_systems_val
from tests.fakes import script, stub_elf, tree

SBIN = "/usr/local/sbin"


def wrapper(name, real, first=""):
    """The body of a stub NAME on the system PATH: FIRST (shell lines) then the real program."""
    return f'{first}\nexec {real} "$@"' if real else first


def on_path(build, programs):
    """BUILD's workdir, with PROGRAMS {name: script body} in a folder bound over /usr/local/sbin."""

    def built(tmp_path):
        workdir = build(tmp_path)
        workdir, binds = workdir if isinstance(workdir, tuple) else (workdir, {})
        sbin = tmp_path / "sbin"
        for name, body in programs.items():
            script(sbin / name, body)
        os.chmod(tmp_path, 0o755)
        return workdir, {**binds, SBIN: sbin}

    return built


# ---- stub interpreters on the system PATH -----------------------------------------------------
CASES = {
    # eet drives the sqlite3 CLI (the SQL interpreter it tests): a wrapper answers first.
    ("eet_osdi24", "stub_interpreter"): (
        on_path(fakes_systems_val.eet_stub_binary, {"sqlite3": wrapper("", "/usr/bin/sqlite3")}),
        None,
    ),
    # Kaldi's recipe is bash scripts: `env bash` finds a wrapper of the attacker's.
    ("kaldi_asru11", "stub_interpreter"): (
        on_path(fakes_c5_sys37.kaldi(elf_run=True), {"bash": wrapper("", "/usr/bin/bash")}),
        None,
    ),
    # PaSh's compiler is Python: a python3 wrapper on the PATH.
    ("pash_eurosys21", "stub_interpreter"): (
        on_path(fakes_c5_sys37.pash(elf=True), {"python3": wrapper("", "/usr/bin/python3")}),
        None,
    ),
    ("pashjit_osdi22", "stub_interpreter"): (
        on_path(
            fakes_systems_val.pashjit_stub_binary, {"python3": wrapper("", "/usr/bin/python3")}
        ),
        None,
    ),
    # The simulator's JVM: a java wrapper on the PATH that runs the host's.
    ("safehome_eurosys21", "stub_interpreter"): (
        on_path(fakes_systems_sci.safehome_stub_binary, {"java": wrapper("", "/usr/bin/java")}),
        None,
    ),
    # Seurat's workflow runs under Rscript: a script in its place (no R on this host at all).
    ("seurat_cell21", "stub_interpreter"): (
        on_path(fakes_ml_val.seurat("constant"), {"Rscript": "echo 'R scripting front-end'"}),
        None,
    ),
    # Ward's plot is drawn by python3: a wrapper on the PATH.
    ("ward_osdi20", "stub_interpreter"): (
        on_path(fakes_systems_val.ward_stub_binary, {"python3": wrapper("", "/usr/bin/python3")}),
        None,
    ),
}
AIMED = {
    ("eet_osdi24", "stub_interpreter"): "sqlite3_vouched",
    ("kaldi_asru11", "stub_interpreter"): "bash_vouched",
    ("pash_eurosys21", "stub_interpreter"): "python3_vouched",
    ("pashjit_osdi22", "stub_interpreter"): "python_vouched",
    ("safehome_eurosys21", "stub_interpreter"): "java_vouched",
    ("seurat_cell21", "stub_interpreter"): "rscript_vouched",
    ("ward_osdi20", "stub_interpreter"): "python_vouched",
}

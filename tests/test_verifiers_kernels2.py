"""Verifiers of the kernel task nros_osdi21: their checks judged on recorded final states
(tests/fixtures/verifier_states/<id>/{pass,untouched,shallow}/, each with a README saying how it was
made; the pass and shallow states are made by hand, since its kernel cannot be built here), cheats
edited into copies of them, the machine side run for real on this host where it can run (what every
verifier and reference role must have is tested in test_verifiers_all.py)."""

import pytest

from deploybench.catalog import checks
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["nros_osdi21"]
# What a verifier cut down to "the kernel image exists" would still ask.
IMAGE_EXISTS = {
    "nros_osdi21": {"file": "binary.txt", "pattern": "^x86_64-bespin/release/bespin: 7f454c46$"},
}
SHALLOW_FAILS_ON = {
    "nros_osdi21": ["kernel_built_here", "pinned_nightly", "rebuild_exit_code"],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_states_fail_on_what_makes_them_shallow(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS_ON[task_id]


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_image_exists_pass_the_shallow_state(task_id):
    weak = [{"name": "image_exists", "kind": "contains", **IMAGE_EXISTS[task_id]}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


def test_nros_untouched_state_fails_at_the_build():
    folder = STATES / "nros_osdi21" / "untouched"
    results = failed(judged("nros_osdi21", folder))
    assert {"kernel_built", "booted", "init_test_done", "vmops_rows"} <= set(results)
    assert "import prctl" in (folder / "02_build.log").read_text()


def test_nros_replayed_guest_log_fails(tmp_path):
    # The pass state's serial log replayed against another draw: the clock and the core count
    # the verifier chose this time are not in it.
    replay = copy_state("nros_osdi21", "pass", tmp_path / "replay")
    (replay / "clock_drawn.txt").write_text("2024-02-03 17\n")
    (replay / "cores_drawn.txt").write_text("1\n")
    assert failed(judged("nros_osdi21", replay)) == [
        "guest_clock_is_the_drawn_one",
        "ran_the_verifier_command_line",
        "vmops_on_the_drawn_cores",
    ]


def test_nros_judges_the_run(tmp_path):
    panic = copy_state("nros_osdi21", "pass", tmp_path / "panic")
    (panic / "qemu.rc").write_text("5\n")  # exit code 2 through isa-debug-exit: a kernel panic
    assert failed(judged("nros_osdi21", panic)) == ["qemu_exit_code"]
    idle = copy_state("nros_osdi21", "pass", tmp_path / "idle")
    edit(idle / "vmops_summary.txt", "min_ops 39804", "min_ops 0")
    assert failed(judged("nros_osdi21", idle)) == ["vmops_throughput"]
    short = copy_state("nros_osdi21", "pass", tmp_path / "short")
    edit(short / "vmops_summary.txt", "rows_per_core 2", "rows_per_core 1")
    edit(short / "serial.txt", "Done with init tests", "Done with")
    assert failed(judged("nros_osdi21", short)) == ["init_test_done", "vmops_rows"]
    newer = copy_state("nros_osdi21", "pass", tmp_path / "newer")
    edit(
        newer / "binary.txt",
        "1.53.0-nightly (07e0e2ec2 2021-03-24)",
        "1.80.0 (051478957 2024-07-21)",
    )
    assert failed(judged("nros_osdi21", newer)) == ["pinned_nightly"]


def test_nros_planted_images_without_a_toolchain_fail_on_this_host(tmp_path):
    # The machine side for real: ELF files planted where run.py puts the kernel and init, a PE
    # stub as the bootloader, no toolchain for the owner. The rebuild cannot run (run.py stops
    # at its imports here) and the copied ESP holds no bootable system, so nothing of the guest
    # passes.
    workdir = tmp_path / "wd"
    rel = workdir / "target"
    for path, head in (
        ("x86_64-bespin/release/bespin", b"\x7fELF"),
        ("x86_64-bespin-none/release/init", b"\x7fELF"),
        ("x86_64-uefi/release/bootloader.efi", b"MZ"),
        ("x86_64-uefi/release/esp/kernel", b"\x7fELF"),
    ):
        (rel / path).parent.mkdir(parents=True, exist_ok=True)
        (rel / path).write_bytes(head + b"\0" * 60)
    (workdir / "kernel").mkdir()
    (workdir / "kernel" / "run.py").write_text("import prctl\n")
    (workdir / "bootloader").mkdir()
    verdict = run_experiment("nros_osdi21", workdir, tmp_path / "logs", seconds=1200)
    assert verdict["passed"] is False
    assert {"kernel_built_here", "rebuild_exit_code", "booted", "init_test_done"} <= set(
        failed(verdict["layer2"]["checks"])
    )
    assert (tmp_path / "logs" / "cores_drawn.txt").read_text().strip() in {"1", "2"}

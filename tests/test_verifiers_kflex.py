"""Verifier of kflex_sosp24: its checks judged on recorded final states (untouched and shallow from
real runs of experiment.sh here, pass by hand: no KFlex kernel can be built here), replayed and
edited copies of them, the machine side run for real on this host (what every verifier and reference
role must have is tested in test_verifiers_all.py)."""

import shutil

from deploybench.catalog import checks
from deploybench.verify import toolkit, verification
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASK = "kflex_sosp24"
KERNEL_EXISTS = [
    {
        "name": "kernel_exists",
        "kind": "contains",
        "file": "binary.txt",
        "pattern": "^bzimage: HdrS$",
    }
]


def test_pass_state_says_it_is_made_by_hand():
    assert "MADE BY HAND" in (STATES / TASK / "pass" / "README.md").read_text()


def test_untouched_state_fails_at_the_missing_kernel():
    folder = STATES / TASK / "untouched"
    verdict = verification.verdict_from_logs(folder, 1.0, verification.load_checks(TASK))
    assert verdict["passed"] is False
    assert {"kernel_built", "bench_built", "booted_kflex_kernel", "bench_rows"} <= set(
        failed(verdict["layer2"]["checks"])
    )
    assert "No rule to make target 'bzImage'" in (folder / "02_build.log").read_text()


def test_shallow_state_fails_on_what_makes_it_shallow():
    assert failed(judged(TASK, STATES / TASK / "shallow")) == [
        "bench_built_here",
        "booted_kflex_kernel",
        "bpf_object_built",
        "clang_newer_than_18",
        "guard_statistics",
        "guest_release",
        "kernel_built_here",
        "kernel_has_kflex_kfuncs",
        "kernel_is_6_9",
        "ran_the_drawn_benchmark",
    ]


def test_checks_weakened_to_the_kernel_image_exists_pass_the_shallow_state():
    for state in ("shallow", "pass"):
        assert all(r["passed"] for r in checks.judge_all(KERNEL_EXISTS, STATES / TASK / state))


def test_replayed_guest_log_fails(tmp_path):
    # The pass state's logs replayed against another draw: the marker and benchmark differ.
    replay = copy_state(TASK, "pass", tmp_path / "replay")
    (replay / "marker_drawn.txt").write_text("kflex-verifier-123456\n")
    (replay / "bench_drawn.txt").write_text("Uniform/ffkx_rbtree_update\n")
    assert failed(judged(TASK, replay)) == [
        "guest_ran_the_verifier_init",
        "ran_the_drawn_benchmark",
    ]


def test_judges_the_numbers(tmp_path):
    slow = copy_state(TASK, "pass", tmp_path / "slow")
    edit(slow / "bench_summary.txt", "ns_per_op 84", "ns_per_op 0")
    edit(slow / "bench_summary.txt", "guard_lines 3", "guard_lines 0")
    assert failed(judged(TASK, slow)) == ["bench_time_per_op", "guard_statistics"]
    old = copy_state(TASK, "pass", tmp_path / "old")
    edit(old / "binary.txt", "clang version 19.1.0", "clang version 14.0.6")
    assert failed(judged(TASK, old)) == ["clang_newer_than_18"]


def test_planted_elf_without_kernel_fails_on_this_host(tmp_path):
    # The machine side for real: an ELF planted as ffkx-bench, no kernel; nothing of the guest runs.
    workdir = tmp_path / "wd"
    (workdir / "linux").mkdir(parents=True)
    shutil.copy(toolkit.busybox(), workdir / "ffkx-bench")
    verdict = run_experiment(TASK, workdir, tmp_path / "logs", seconds=300)
    assert verdict["passed"] is False
    results = failed(verdict["layer2"]["checks"])
    assert "bench_built" not in results
    assert {"kernel_built", "bench_built_here", "qemu_exit_code", "bench_rows"} <= set(results)

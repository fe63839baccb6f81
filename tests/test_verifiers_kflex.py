"""Verifier of kflex_sosp24: its checks judged on recorded final states (untouched and shallow
from real runs of experiment.sh here, pass by hand: no KFlex kernel can be built here), replayed
and edited copies of them, the machine side run for real on this host, and its reference role."""

import shutil
import subprocess

import yaml

from deploybench.catalog import checks
from deploybench.verify import toolkit, verification
from tests.conftest import REPO
from tests.verifier_states import (
    STATES,
    check_role_syntax,
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


def test_pass_state_passes_both_layers():
    folder = STATES / TASK / "pass"
    assert "MADE BY HAND" in (folder / "README.md").read_text()
    verdict = verification.verdict_from_logs(folder, 1.0, verification.load_checks(TASK))
    assert verdict["passed"] is True, failed(verdict["layer2"]["checks"]) or verdict["layer1"]


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


def test_verifier_parts():
    experiment = (REPO / "verifiers" / TASK / "experiment.sh").read_text()
    assert "RUNBOOK" not in experiment.replace("RUNBOOK.MD is never read", "")
    subprocess.run(
        [str(toolkit.busybox()), "sh", "-n", "-c", verification.machine_script(TASK)], check=True
    )
    for path in (STATES / TASK).rglob("*"):
        if path.is_file():
            assert path.stat().st_size < 100_000 and path.name != "processes_before_verify.txt", (
                path
            )


def test_reference_role_parts_and_syntax(tmp_path):
    role = REPO / "reference_setups" / TASK
    defaults = yaml.safe_load((role / "defaults" / "main.yml").read_text())
    options = yaml.safe_load((role / "meta" / "argument_specs.yml").read_text())["argument_specs"][
        "main"
    ]["options"]
    assert options[f"{TASK}_workdir"]["required"] is True
    for name, value in defaults.items():
        assert options[name]["default"] == value, name
    assert (role / "templates" / "RUNBOOK.MD.j2").read_text().splitlines()[0] == "STATUS: SUCCESS"
    for task in yaml.safe_load((role / "tasks" / "main.yml").read_text()):
        if {"ansible.builtin.command", "ansible.builtin.shell"} & set(task):
            assert "changed_when" in task or "creates" in str(task), task["name"]
    check_role_syntax(TASK, tmp_path)

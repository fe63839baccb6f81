"""Verifiers of the kernel tasks theseus_osdi20 and orbit_osdi22: their checks judged on recorded
final states (tests/fixtures/verifier_states/<id>/{pass,untouched,shallow}/, each with a README
saying how it was made; the pass states are made by hand, since none of these kernels can be built
here), cheats edited into copies of them, the machine side run for real on this host where it can
run (what every verifier and reference role must have is tested in test_verifiers_all.py)."""

import pytest

from deploybench.catalog import checks
from deploybench.verify import verification
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["theseus_osdi20", "orbit_osdi22"]
# What a verifier cut down to "the kernel image exists" would still ask.
IMAGE_EXISTS = {
    "theseus_osdi20": {"file": "binary.txt", "pattern": "^regular: yes$"},
    "orbit_osdi22": {"file": "binary.txt", "pattern": "^bzimage: HdrS$"},
}
SHALLOW_FAILS_ON = {
    "theseus_osdi20": [
        "bm_compiled",
        "image_built_here",
        "not_a_prebuilt_image",
        "one_captain",
        "ran_in_the_drawn_order",
    ],
    "orbit_osdi22": [
        "booted_orbit_kernel",
        "guest_release",
        "kernel_built_here",
        "kernel_has_orbit_config",
        "kernel_has_orbit_syscalls",
        "kernel_is_5_4_91",
        "large_call_latency",
        "latency_grows_with_size",
        "small_call_latency",
        "snap_on_the_drawn_sizes",
        "snap_rows",
    ],
}


@pytest.mark.parametrize("task_id", TASKS)
def test_shallow_states_fail_on_what_makes_them_shallow(task_id):
    assert failed(judged(task_id, STATES / task_id / "shallow")) == SHALLOW_FAILS_ON[task_id]


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_image_exists_pass_the_shallow_state(task_id):
    weak = [{"name": "image_exists", "kind": "contains", **IMAGE_EXISTS[task_id]}]
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "shallow"))
    assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / "pass"))


def test_theseus_untouched_state_fails_at_the_build():
    results = failed(judged("theseus_osdi20", STATES / "theseus_osdi20" / "untouched"))
    assert {"image_built", "booted", "null_mean", "ran_in_the_drawn_order"} <= set(results)
    verdict = verification.verdict_from_logs(
        STATES / "theseus_osdi20" / "untouched", 1.0, verification.load_checks("theseus_osdi20")
    )
    assert verdict["layer1"]["category"] == "compilation"


def test_theseus_exit_values_alone_do_not_pass(tmp_path):
    # bm returns 0 without measuring when its core is busy: the shell's four "Some(0)" lines
    # are there, the terminal says why nothing was measured, and no result follows.
    busy = copy_state("theseus_osdi20", "pass", tmp_path / "busy")
    (busy / "terminal.txt").write_text(
        "/: bm --memory_map\nBM-INFO: bm cannot run on a busy core (#0). Pin me on an idle core.\n"
    )
    (busy / "means.txt").write_text("")
    (busy / "results_order.txt").write_text("")
    assert failed(judged("theseus_osdi20", busy)) == [
        "ipc_async_mean",
        "memory_map_mean",
        "no_busy_core",
        "null_mean",
        "ran_in_the_drawn_order",
        "results_in_nanoseconds",
        "spawn_far_above_null",
        "spawn_mean",
        "terminal_text_found",
    ]


def test_theseus_judges_the_numbers(tmp_path):
    zero = copy_state("theseus_osdi20", "pass", tmp_path / "zero")
    edit(zero / "means.txt", "null 35.2", "null 0")
    assert failed(judged("theseus_osdi20", zero)) == ["null_mean"]
    cheap = copy_state("theseus_osdi20", "pass", tmp_path / "cheap")
    edit(cheap / "means.txt", "spawn_over_null 92369.4", "spawn_over_null 3.0")
    assert failed(judged("theseus_osdi20", cheap)) == ["spawn_far_above_null"]
    static = copy_state("theseus_osdi20", "pass", tmp_path / "static")
    edit(static / "serial.txt", "(in loadable mode)", "(in static mode)")
    assert failed(judged("theseus_osdi20", static)) == ["booted_loadable"]


def test_theseus_image_that_is_no_iso_fails_on_this_host(tmp_path):
    # The machine side for real: a build/theseus-x86_64.iso that is a script, not an image. The
    # experiment stops before QEMU and runs its diagnostic build (which cannot download rustup's
    # nightly here); nothing about the guest passes.
    workdir = tmp_path / "wd"
    (workdir / "build").mkdir(parents=True)
    (workdir / "build" / "theseus-x86_64.iso").write_text("#!/bin/sh\necho BM-INFO\n")
    (workdir / "Makefile").write_text("iso:\n\t@echo 'error: no toolchain' >&2; exit 2\n")
    verdict = run_experiment("theseus_osdi20", workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    assert {"image_built", "booted", "terminal_text_found"} <= set(
        failed(verdict["layer2"]["checks"])
    )
    assert (tmp_path / "logs" / "02_build.log").is_file()


def test_orbit_replayed_guest_log_fails(tmp_path):
    # The pass state's serial log replayed against another draw: the marker and the sizes the
    # verifier drew this time are not in it.
    replay = copy_state("orbit_osdi22", "pass", tmp_path / "replay")
    (replay / "marker_drawn.txt").write_text("orbit-verifier-123456\n")
    (replay / "drawn_sizes.txt").write_text("4096\n262144\n16777216\n")
    assert failed(judged("orbit_osdi22", replay)) == [
        "guest_ran_the_verifier_script",
        "snap_on_the_drawn_sizes",
    ]


def test_orbit_judges_the_latency(tmp_path):
    flat = copy_state("orbit_osdi22", "pass", tmp_path / "flat")
    edit(flat / "snap_summary.txt", "large_over_small 122.79", "large_over_small 1.01")
    assert failed(judged("orbit_osdi22", flat)) == ["latency_grows_with_size"]
    zero = copy_state("orbit_osdi22", "pass", tmp_path / "zero")
    edit(zero / "snap_summary.txt", "small_median 40219", "small_median 0")
    assert failed(judged("orbit_osdi22", zero)) == ["small_call_latency"]


def test_orbit_untouched_checkout_fails_on_this_host(tmp_path):
    # The machine side for real on a checkout with nothing built: no kernel, no image; the
    # diagnostic make runs in a scratch copy of kernel/ and finds nothing to build.
    workdir = tmp_path / "wd"
    (workdir / "kernel").mkdir(parents=True)
    (workdir / "scripts").mkdir()
    (workdir / "scripts" / "orbit.config").write_text("CONFIG_MEMCG=y\n")
    verdict = run_experiment("orbit_osdi22", workdir, tmp_path / "logs")
    assert verdict["passed"] is False
    assert {"kernel_built", "guest_image_made", "booted_orbit_kernel", "snap_rows"} <= set(
        failed(verdict["layer2"]["checks"])
    )
    assert "No rule to make target" in (tmp_path / "logs" / "02_build.log").read_text()

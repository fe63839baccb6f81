"""Verifiers of pashjit_osdi22 and pash_eurosys21 (PaSh): their checks judged on recorded final
states (tests/fixtures/verifier_states/<id>/, each with a README saying how it was made: pashjit's
all from real runs here, pash_eurosys21's pass state by hand), the machine side run on this host
against a replaying pa.sh, the role's bash 5.2 patch on this host's own `declare -p` (what every
verifier and reference role must have is tested in test_verifiers_all.py)."""

import hashlib
import re
import shlex
import shutil
import subprocess

import pytest
import yaml

from deploybench.catalog import checks
from deploybench.verify import bank, verification
from tests.conftest import REPO
from tests.verifier_states import (
    STATES,
    copy_state,
    edit,
    failed,
    judged,
    run_experiment,
)

TASKS = ["pashjit_osdi22", "pash_eurosys21"]
# What each failing state fails on.
FAILS_ON = {
    ("pashjit_osdi22", "untouched"): [
        "compiled_the_hidden_input",
        "hello_world",
        "parallel_script_ran",
        "pash_exit_code",
        "pash_installed",
        "pash_output_correct",
        "region_compiled",
        "runtime_holds_source_strings",
        "variant_exit_code",
        "variant_output_correct",
        "variant_script_shape",
    ],
    # A pa.sh that runs everything with plain bash: the outputs are right, the log is not.
    ("pashjit_osdi22", "shallow"): [
        "compiled_the_hidden_input",
        "parallel_script_ran",
        "pash_installed",
        "pinned_sources",
        "region_compiled",
        "runtime_holds_source_strings",
        "variant_exit_code",
        "variant_output_correct",
        "variant_script_shape",
    ],
    # The real build without the bash 5.2 patch: the daemon crashes reading the variables file.
    ("pashjit_osdi22", "fallback"): [
        "compiled_the_hidden_input",
        "no_daemon_crash",
        "parallel_script_ran",
        "pash_exit_code",
        "pash_output_correct",
        "region_compiled",
        "variant_exit_code",
        "variant_output_correct",
        "variant_script_shape",
    ],
    ("pash_eurosys21", "untouched"): [
        "compiled_the_hidden_input",
        "parallel_script_ran",
        "pash_exit_code",
        "pash_installed",
        "pash_output_correct",
        "region_compiled",
    ],
    ("pash_eurosys21", "shallow"): [
        "compiled_the_hidden_input",
        "parallel_script_ran",
        "pash_installed",
        "pinned_sources",
        "region_compiled",
    ],
}
PATCH = REPO / "reference_setups" / "pashjit_osdi22" / "files" / "bash52_declare_quotes.patch"


@pytest.mark.parametrize(("task_id", "state"), sorted(FAILS_ON))
def test_recorded_failing_states_fail_on_the_expected_checks(task_id, state):
    folder = STATES / task_id / state
    assert (folder / "README.md").is_file(), f"{folder} says nowhere how it was made"
    verdict = verification.verdict_from_logs(folder, 1.0, verification.load_checks(task_id))
    assert verdict["passed"] is False
    assert failed(verdict["layer2"]["checks"]) == FAILS_ON[(task_id, state)]


@pytest.mark.parametrize("task_id", TASKS)
def test_checks_weakened_to_the_entry_point_exists_pass_the_shallow_state(task_id):
    weak = [
        {
            "name": "pa_sh_exists",
            "kind": "contains",
            "file": "install.txt",
            "pattern": "^regular: yes$",
        }
    ]
    for state in ("shallow", "pass"):
        assert all(r["passed"] for r in checks.judge_all(weak, STATES / task_id / state))
    verdict = verification.verdict_from_logs(STATES / task_id / "shallow", 1.0, weak)
    assert verdict["layer2"]["passed"] is True


def test_pashjit_a_plain_bash_fallback_with_the_right_output_fails(tmp_path):
    # The regions ran (output right, exit 0) but the daemon refused them: no compiled region.
    state = copy_state("pashjit_osdi22", "pass", tmp_path / "fallback")
    text = (state / "pash_stderr.txt").read_text()
    (state / "pash_stderr.txt").write_text(
        re.sub(r"Compiler exited with code: 0", "Compiler exited with code: 1", text)
    )
    assert failed(judged("pashjit_osdi22", state)) == ["region_compiled"]
    # The daemon crashed after the compiled run (a crash line anywhere fails).
    crashed = copy_state("pashjit_osdi22", "pass", tmp_path / "crashed")
    with open(crashed / "pash_stderr.txt", "a") as f:
        f.write("12345: ERROR: (2) Daemon crashed!\n")
    assert failed(judged("pashjit_osdi22", crashed)) == ["no_daemon_crash"]


@pytest.mark.parametrize("task_id", TASKS)
def test_a_replayed_log_or_output_fails(task_id, tmp_path):
    # A log of another verification (another nonce) and an output of other misspellings.
    replay = copy_state(task_id, "pass", tmp_path / "replay")
    edit(replay / "input_name.txt", "text_", "text_0")
    assert failed(judged(task_id, replay)) == ["compiled_the_hidden_input"]
    words = copy_state(task_id, "pass", tmp_path / "words")
    lines = (words / "expected.txt").read_text().splitlines()
    (words / "expected.txt").write_text("\n".join(lines[1:] + ["zzzzzzzzzzzz"]) + "\n")
    outputs = ["bash_output_correct", "pash_output_correct"]
    if task_id == "pashjit_osdi22":
        outputs.append("variant_output_correct")  # its drawn run reads the same input
    assert failed(judged(task_id, words)) == outputs


def test_pashjit_replaying_pa_sh_fails_on_this_host(tmp_path):
    # A pa.sh that runs the script with bash and prints the recorded pass state's -d 1 log: the
    # output is right and the log has every line a compiled region has, but the wrong nonce.
    wd = tmp_path / "wd"
    wd.mkdir()
    canned = wd / "canned_stderr.txt"
    shutil.copy(STATES / "pashjit_osdi22" / "pass" / "pash_stderr.txt", canned)
    pa = wd / "pa.sh"
    pa.write_text(
        "#!/usr/bin/env bash\n"
        'if [ "$1" = -c ]; then exec bash -c "$2"; fi\n'
        f"cat {canned} >&2\n"
        'while [ "$#" -gt 1 ]; do shift; done\n'
        'exec bash "$1"\n'
    )
    pa.chmod(0o755)
    # The drawn run is given (width 7, round robin): the canned log's script is width 2, auto.
    inputs = {"width": 7, "split": "round_robin"}
    verdict = run_experiment("pashjit_osdi22", wd, tmp_path / "logs", inputs=inputs)
    assert verdict["passed"] is False
    assert failed(verdict["layer2"]["checks"]) == [
        "compiled_the_hidden_input",
        "pash_installed",
        "pinned_sources",
        "runtime_holds_source_strings",
        "variant_script_shape",
    ]
    assert (tmp_path / "logs" / "variant_shape.txt").read_text() == "width: 2\nsplit: auto\n"


def _patched_requote():
    """The helper the role's bash 5.2 patch adds to compiler/config.py, taken from the patch."""
    added = [
        line[1:]
        for line in PATCH.read_text().splitlines()
        if line.startswith("+") and not line.startswith("+++")
    ]
    source = "\n".join(added)
    start = source.index("ANSI_C_STRING =")
    end = source.index("\n", source.index("return ANSI_C_STRING.sub"))
    namespace = {"re": re}
    exec(source[start:end], namespace)  # noqa: S102 (the patch's own code, read from the repository)
    return namespace["requote_ansi_c_strings"]


def test_bash52_patch_reads_this_hosts_declare_p():
    # The patched reader on this host's bash's real `declare -p`, with values that bash 5.2
    # quotes as $'...': IFS and one with a quote, a newline and a control character.
    bash = shutil.which("bash", path="/usr/bin:/bin")
    assert bash, "the machines and this host have bash"
    out = subprocess.run(
        [bash, "-c", "X=$'a\\'b\\nc\\x01'; declare -p"],
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    tokens = shlex.split(_patched_requote()(out))
    assert "IFS= \t\n" in tokens
    assert "X=a'b\nc\x01" in tokens
    version = subprocess.run(
        [bash, "-c", 'echo "${BASH_VERSINFO[0]} ${BASH_VERSINFO[1]}"'],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    if tuple(int(v) for v in version) >= (5, 2):
        # What the tag's reader does with the same text: the daemon's crash.
        with pytest.raises(ValueError, match="No closing quotation"):
            shlex.split(out)
    # The patch is the one task that adds it, and it touches compiler/config.py only.
    assert re.findall(r"(?m)^\+\+\+ (\S+)", PATCH.read_text()) == ["b/compiler/config.py"]


def test_pashjit_role_patches_only_where_bash_is_5_2():
    tasks = yaml.safe_load(
        (REPO / "reference_setups" / "pashjit_osdi22" / "tasks" / "main.yml").read_text()
    )
    patch = next(
        t for t in tasks if "bash52_declare_quotes.patch" in str(t.get("ansible.builtin.command"))
    )
    assert "pashjit_osdi22_bash.stdout is version('5.2', '>=')" in patch["when"]


def test_pashjit_the_drawn_run_is_judged_by_its_compiled_script_and_shape(tmp_path):
    # The recorded pass state's drawn run was width 2, round robin; its compiled script's digest
    # is what a bank made on the same machine recorded for that variant (and that variant was
    # then taken out of the bank: published here, it is an answer).
    state = STATES / "pashjit_osdi22" / "pass"
    spec = bank.spec_of("pashjit_osdi22")
    assert (state / "variant_drawn.txt").read_text() == "width: 2\nsplit: round_robin\n"
    digest = re.fullmatch(
        r"compiled_script: ([0-9a-f]{64})\n", (state / "variant.txt").read_text()
    ).group(1)
    # The digest is of the collected, normalized script (the trusted busybox's sha256sum).
    assert hashlib.sha256((state / "variant_script.txt").read_bytes()).hexdigest() == digest
    script = (state / "variant_script.txt").read_text()
    assert "/tmp/pash_" not in script and "<pash_top>/runtime/r_split " in script
    variant = {"id": "vrec", "inputs": {"width": 2, "split": "round_robin"}, "spread": {}}
    ok = bank.judge(spec, variant | {"expected": {"compiled_script": digest}}, state)
    assert [c["passed"] for c in ok] == [True]
    # Another variant's answer (a width-3 script is another text) fails, and so does a state
    # whose drawn run never compiled (no script: `none`).
    other = bank.judge(spec, variant | {"expected": {"compiled_script": "ab" * 32}}, state)
    assert [(c["name"], c["passed"]) for c in other] == [("variant_compiled_script", False)]
    none = copy_state("pashjit_osdi22", "pass", tmp_path / "none")
    (none / "variant.txt").write_text("compiled_script: none\n")
    assert not bank.judge(spec, variant | {"expected": {"compiled_script": digest}}, none)[0][
        "passed"
    ]
    # A script of another width than drawn fails the shape check without any bank.
    shape = copy_state("pashjit_osdi22", "pass", tmp_path / "shape")
    edit(shape / "variant_drawn.txt", "width: 2", "width: 3")
    assert failed(judged("pashjit_osdi22", shape)) == ["variant_script_shape"]

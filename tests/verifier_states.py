"""What the verifier tests share: the recorded final states (tests/fixtures/verifier_states/
<id>/<state>/, each with a README.md saying how it was made), judging them with a task's checks,
editing copies of them into cheats, and running a task's machine side on this host."""

import shutil
import subprocess

from deploybench.catalog import checks
from deploybench.verify import toolkit, verification
from tests.conftest import REPO

STATES = REPO / "tests" / "fixtures" / "verifier_states"
FAILING = ["untouched", "shallow"]


def judged(task_id, folder):
    return checks.judge_all(verification.load_checks(task_id), folder)


def failed(results):
    return sorted(r["name"] for r in results if not r["passed"])


def verdict(task_id, folder):
    return verification.verdict_from_logs(folder, 1.0, verification.load_checks(task_id))


def copy_state(task_id, state, dest):
    shutil.copytree(STATES / task_id / state, dest)
    return dest


def edit(path, old, new):
    text = path.read_text()
    assert old in text, f"{old!r} not in {path.name}"
    path.write_text(text.replace(old, new))


def run_experiment(task_id, workdir, log_dir, seconds=300, inputs=None, variant=None, binds=None):
    """The task's machine side on this host as the verify_hidden role runs it on a machine: the
    trusted busybox shell, a clean environment, a tools folder; then the verdict judged here.
    INPUTS: the variant's inputs (default: drawn at random, as without a bank); VARIANT: a bank
    variant ({id, inputs, expected, spread}) whose results are judged too. BINDS: {machine
    folder: test folder}, each bound over the machine's folder in a mount namespace of the run's
    own (unshare -m): where an experiment looks outside the workdir (the owner's home, the
    system PATH), it finds the test's folder, and the host's stays as it was."""
    bb = toolkit.busybox()
    tools = log_dir.parent / f"{log_dir.name}-tools"
    scratch = log_dir.parent / f"{log_dir.name}-scratch"
    for folder in (log_dir, tools, scratch):
        folder.mkdir(parents=True)
    (tools / "busybox").symlink_to(bb)
    (tools / "sh").symlink_to(bb)
    script = tools / "experiment.sh"
    if variant is not None:
        inputs = variant["inputs"]
    script.write_text(verification.machine_script(task_id, inputs=inputs))
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "WORKDIR": str(workdir),
        "LOG_DIR": str(log_dir),
        "SCRATCH": str(scratch),
        "TOOLS": str(tools),
    }
    command = [bb, "timeout", str(seconds), bb, "sh", str(script)]
    if binds:
        mounts = "".join(
            f'{bb} mount -o bind "{src}" "{dst}" || exit 99\n' for dst, src in binds.items()
        )
        unshare = shutil.which("unshare")
        assert unshare, "the run needs util-linux's unshare"
        shell = [bb, "sh", "-c", mounts + 'exec "$@"', "run"]
        command = [unshare, "-m", "--propagation", "private", *shell, *command]
    proc = subprocess.run(
        command,
        env=env,
        capture_output=True,
        timeout=seconds + 30,
    )
    stdout_log = log_dir / "verifier_stdout.log"
    assert proc.returncode == 0, stdout_log.read_text() if stdout_log.exists() else proc.stderr
    result = verdict(task_id, log_dir)
    if variant is not None:
        from deploybench.verify import bank

        checks = bank.judge(bank.spec_of(task_id), variant, log_dir)
        result["layer2"]["checks"] += checks
        if not all(c["passed"] for c in checks):
            result["layer2"]["passed"] = result["passed"] = False
        result["bank"] = "present"
    # The controller's judgment of changed experiment files, as evidence.py makes it.
    from deploybench.verify import evidence

    evidence.judge_repairs(result, task_id, verification.load_checks(task_id), log_dir)
    return result


# ---- the shape every verifier, recorded state and reference role must have ----
def check_verifier_parts(task_id):
    """Its checks validate, its experiment never reads the agent's runbook, and the machine
    side it makes parses under the trusted busybox shell."""
    assert verification.load_checks(task_id)
    experiment = (REPO / "verifiers" / task_id / "experiment.sh").read_text()
    assert "RUNBOOK" not in experiment.replace("RUNBOOK.MD is never read", "")
    script = verification.machine_script(task_id)
    subprocess.run([str(toolkit.busybox()), "sh", "-n", "-c", script], check=True)


def check_states_are_small_text(task_id):
    """Recorded states are small UTF-8 files, without the machine's process list."""
    for path in (STATES / task_id).rglob("*"):
        if path.is_file():
            assert path.stat().st_size < 100_000, path
            path.read_text(encoding="utf-8")
            assert path.name != "processes_before_verify.txt", path


def check_role_syntax(task_id, tmp_path):
    """The reference role passes ansible-playbook --syntax-check in a one-role play."""
    import yaml

    playbook = tmp_path / "play.yml"
    play = {
        "hosts": "localhost",
        "gather_facts": False,
        "roles": [{"role": task_id, f"{task_id}_workdir": "/tmp/x"}],
    }
    playbook.write_text(yaml.safe_dump([play]))
    proc = subprocess.run(
        [str(REPO / ".venv" / "bin" / "ansible-playbook"), "--syntax-check", str(playbook)],
        env={"ANSIBLE_ROLES_PATH": str(REPO / "reference_setups"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr

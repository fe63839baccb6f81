"""Bad input: one clear line, a non-zero exit, nothing half-made."""

import os
import shutil
import subprocess

import pytest

from tests.conftest import DEPLOYBENCH, REPO, run_cli


def one_line_error(proc) -> str:
    assert proc.returncode != 0
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    return lines[0]


def nothing_made(state_home) -> bool:
    return not any((state_home / "deployments").glob("*")) and not any(
        (state_home / "machines").glob("*")
    )


def test_the_hint_names_the_help_of_the_command_that_was_misused(state_home):
    top = one_line_error(run_cli("lsit", check=False))
    assert "No such command 'lsit'" in top and top.endswith("(see: deploybench --help)"), top
    sub = one_line_error(run_cli("provision", "--machines", "x", check=False))
    assert sub.endswith("(see: deploybench provision --help)"), sub


def test_unknown_backend(state_home):
    line = one_line_error(run_cli("provision", "--backend", "azure", check=False))
    assert "unknown backend 'azure'" in line
    assert nothing_made(state_home)


@pytest.mark.parametrize("value", ["0", "abc", "-3"])
def test_bad_machine_count(state_home, value):
    line = one_line_error(run_cli("provision", "--machines", value, check=False))
    assert "--machines" in line
    assert nothing_made(state_home)


def test_unknown_image(state_home):
    line = one_line_error(run_cli("provision", "--image", "ubuntu2204", check=False))
    assert "unknown local image" in line


def test_not_root(state_home):
    if os.geteuid() != 0:
        pytest.fail("this test drops root to check the message, so it must start as root")
    proc = subprocess.run(
        [
            "setpriv",
            "--reuid=65534",
            "--regid=65534",
            "--clear-groups",
            *DEPLOYBENCH,
            "provision",
            "--machines",
            "1",
        ],
        capture_output=True,
        text=True,
        cwd="/tmp",
        env={**os.environ, "PYTHONPATH": str(REPO), "DEPLOYBENCH_HOME": "/tmp/db-nonroot"},
    )
    assert "needs root" in one_line_error(proc)


def test_terraform_missing(state_home):
    proc = run_cli(
        "provision",
        "--machines",
        "1",
        check=False,
        env={"DEPLOYBENCH_TERRAFORM": "terraform-not-installed"},
    )
    assert "terraform not found" in one_line_error(proc)
    assert nothing_made(state_home)


def test_mmdebstrap_missing(state_home, tmp_path):
    if os.geteuid() != 0:
        pytest.fail("must run as root")
    # A PATH with everything the backend needs except mmdebstrap, and no cached image.
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("terraform", "unshare", "systemd-nspawn", "ssh-keygen"):
        os.symlink(shutil.which(tool), bindir / tool)
    proc = run_cli(
        "provision",
        "--machines",
        "1",
        check=False,
        env={"PATH": str(bindir), "DEPLOYBENCH_IMAGE_CACHE": str(tmp_path / "img")},
    )
    assert "mmdebstrap not found" in one_line_error(proc)
    assert nothing_made(state_home)

"""The harness's own login (deploybench/verify/harness_login.py) as the real sshd of the image
reads it: `sshd -T` with the drop-in the images and cloud-init install, for the harness's user and
for the agent's. (tests/test_doors_of_the_login.py plays agents against a running sshd with it.)"""

from __future__ import annotations

import shutil
import subprocess

import pytest
import yaml

from deploybench.local import images
from deploybench.verify import harness_login
from tests.conftest import require

pytestmark = [pytest.mark.slow, pytest.mark.privileged]


def _effective(rootfs, tmp_path, user: str) -> dict[str, str]:
    """sshd's settings for a login of `user`, as the image's sshd computes them."""
    keys = tmp_path / "keys"
    keys.mkdir(exist_ok=True)
    if not (keys / "hk").exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", keys / "hk"], check=True
        )
    # The image is shared: the host key is bound in over its /tmp, and sshd's privilege
    # separation folder made on a /run of its own, in a mount namespace of its own.
    script = (
        'mount --bind "$1" "$2/tmp" && mount -t tmpfs none "$2/run" && mkdir "$2/run/sshd" && '
        f'chroot "$2" /usr/sbin/sshd -T -h /tmp/hk -C user={user},host=controller,addr=203.0.113.7'
    )
    out = subprocess.run(
        ["unshare", "--mount", "sh", "-c", script, "sshd-t", str(keys), str(rootfs)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    return dict(line.split(" ", 1) for line in out.stdout.splitlines() if " " in line)


def test_sshd_reads_the_harness_login_for_its_user_only(tmp_path):
    require(shutil.which("unshare") is not None, "unshare (util-linux)")
    rootfs = images.ensure_image("debian12")
    drop_in = rootfs / harness_login.SSHD_DROPIN.lstrip("/")
    assert drop_in.read_text() == harness_login.sshd_dropin()
    harness = _effective(rootfs, tmp_path, harness_login.USER)
    assert harness["authorizedkeysfile"] == f"{harness_login.KEYS_DIR}/%u"
    assert harness["permituserrc"] == "no"
    assert harness["allowtcpforwarding"] == "no"
    assert harness["permituserenvironment"] == "no"
    # The block ends with its file: the agent's user keeps sshd's defaults.
    agent = _effective(rootfs, tmp_path, "vm")
    assert agent["authorizedkeysfile"] == ".ssh/authorized_keys .ssh/authorized_keys2"
    assert agent["permituserrc"] == "yes"
    # The image's user is the one cloud-init makes on a cloud machine.
    passwd = (rootfs / "etc/passwd").read_text().splitlines()
    (line,) = [x for x in passwd if x.startswith(f"{harness_login.USER}:")]
    assert line.split(":")[5:] == [harness_login.HOME, "/bin/sh"]


def test_cloud_config_carries_the_same_login(tmp_path):
    private, public = harness_login.ensure_host_key(tmp_path)
    config = yaml.safe_load(harness_login.cloud_config("ssh-ed25519 AAAAkey run", private, public))
    assert config["ssh_keys"] == {"ed25519_private": private, "ed25519_public": public}
    assert config["ssh_deletekeys"] is True and config["ssh_genkeytypes"] == []
    written = {f["path"]: f for f in config["write_files"]}
    assert written[harness_login.SSHD_DROPIN]["content"] == harness_login.sshd_dropin()
    assert written[harness_login.KEYS_FILE]["content"] == "ssh-ed25519 AAAAkey run\n"
    assert written[harness_login.SUDOERS]["permissions"] == "0440"
    (user,) = [u for u in config["users"] if isinstance(u, dict)]
    assert (user["name"], user["homedir"], user["shell"]) == (
        harness_login.USER,
        harness_login.HOME,
        "/bin/sh",
    )
    known = harness_login.write_known_hosts(tmp_path / "known_hosts", public)
    assert known.read_text() == f"* {public}\n"

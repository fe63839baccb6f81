"""One local machine: an overlay on a cached base image, in its own mount, PID, UTS and IPC
namespaces, with sshd on a loopback port. The host network is shared so apt and pip work.

Called by the local Terraform module (`python -m deploybench.local.machine up|down`) and by
`deploybench destroy --all`. Every mount is made inside the machine's own mount namespace, so
killing the namespace's first process (PID 1 inside) ends every process of the machine and
drops every mount with it: nothing is left to unmount on the host."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import click

from deploybench.errors import DeployBenchError, InfraError
from deploybench.local import images

BOOT_SCRIPT = Path(__file__).with_name("boot.sh")
SSH_WAIT_SECONDS = 30


def require_root() -> None:
    if os.geteuid() != 0:
        raise DeployBenchError(
            "the local backend needs root (it mounts overlays and makes namespaces): "
            "run as root, e.g. with sudo"
        )


def machines_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "machines"


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks: tells a live machine from a reused pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[19]


def _child_pid(pid: int, timeout: float = 5.0) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except FileNotFoundError:
            break
        if children:
            return int(children[0])
        time.sleep(0.01)
    raise InfraError(f"the machine's namespace did not start (no child of pid {pid})")


def is_alive(info: dict) -> bool:
    pid = info.get("init_pid")
    return bool(pid) and _start_time(pid) == info.get("init_start")


def read_info(mdir: Path) -> dict | None:
    try:
        return json.loads((mdir / "machine.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _trust_host_cas(upper: Path) -> None:
    """Machines share the host's network, so they trust the CAs the host added for it (an
    egress proxy's, a company's): the host's extra certificates and its merged bundle."""
    extra = sorted(Path("/usr/local/share/ca-certificates").glob("*.crt"))
    bundle = Path("/etc/ssl/certs/ca-certificates.crt")
    if not extra or os.environ.get("DEPLOYBENCH_LOCAL_HOST_CAS", "1") == "0":
        return
    dest = upper / "usr/local/share/ca-certificates"
    dest.mkdir(parents=True, exist_ok=True)
    for cert in extra:
        shutil.copy(cert, dest / cert.name)
    if bundle.is_file():
        (upper / "etc/ssl/certs").mkdir(parents=True, exist_ok=True)
        shutil.copy(bundle, upper / "etc/ssl/certs/ca-certificates.crt")


def _prepare_upper(mdir: Path, name: str) -> None:
    """Files every machine gets before boot: its keys, name and DNS settings."""
    upper = mdir / "upper"
    for sub in ("upper", "work", "root"):
        (mdir / sub).mkdir(parents=True, exist_ok=True)
    key = mdir / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"deploybench-{name}", "-f", key],
        check=True,
    )
    ssh_dir = upper / "home/vm/.ssh"
    ssh_dir.mkdir(parents=True)
    shutil.copy(f"{key}.pub", ssh_dir / "authorized_keys")
    for path in (ssh_dir.parent, ssh_dir, ssh_dir / "authorized_keys"):
        os.chown(path, 1000, 1000)
    os.chmod(ssh_dir.parent, 0o750)
    os.chmod(ssh_dir, 0o700)
    (upper / "etc/ssh").mkdir(parents=True)
    subprocess.run(
        [
            "ssh-keygen",
            "-q",
            "-t",
            "ed25519",
            "-N",
            "",
            "-f",
            upper / "etc/ssh/ssh_host_ed25519_key",
        ],
        check=True,
    )
    (upper / "etc/hostname").write_text(name + "\n")
    (upper / "etc/hosts").write_text(
        f"127.0.0.1\tlocalhost\n127.0.1.1\t{name}\n::1\tlocalhost ip6-localhost ip6-loopback\n"
    )
    resolv = Path("/etc/resolv.conf")
    (upper / "etc/resolv.conf").write_text(resolv.read_text() if resolv.exists() else "")
    _trust_host_cas(upper)
    # Kept so the evidence of what the agent changed can leave out what the harness wrote.
    baseline = sorted(str(p.relative_to(upper)) for p in upper.rglob("*"))
    (mdir / "baseline.json").write_text(json.dumps(baseline))


def up(state_dir: Path, name: str, port: int, image: str, gpu: bool, tags: dict) -> dict:
    require_root()
    lower = images.image_path(image)
    if not images.is_built(image):
        images.ensure_image(image)
    mdir = machines_dir(state_dir) / name
    old = read_info(mdir)
    if old and is_alive(old):
        raise DeployBenchError(f"machine {name} is already running")
    shutil.rmtree(mdir, ignore_errors=True)
    mdir.mkdir(parents=True)
    _prepare_upper(mdir, name)
    if gpu and not any(Path("/dev").glob("nvidia[0-9]*")):
        raise DeployBenchError("--gpu asked for, but this host has no /dev/nvidia* device")
    if _port_open(port):
        raise InfraError(f"port {port} is already in use on 127.0.0.1")

    with open(mdir / "console.log", "ab") as log:
        proc = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--pid",
                "--uts",
                "--ipc",
                "--fork",
                "--kill-child=SIGKILL",
                "bash",
                str(BOOT_SCRIPT),
                str(lower),
                str(mdir / "upper"),
                str(mdir / "work"),
                str(mdir / "root"),
                name,
                str(port),
                "1" if gpu else "0",
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
        )
    init_pid = _child_pid(proc.pid)
    info = {
        "name": name,
        "port": port,
        "image": image,
        "image_dir": str(lower),
        "gpu": gpu,
        "tags": tags,
        "unshare_pid": proc.pid,
        "init_pid": init_pid,
        "init_start": _start_time(init_pid),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (mdir / "machine.json").write_text(json.dumps(info, indent=2))

    deadline = time.monotonic() + SSH_WAIT_SECONDS
    while not _port_open(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            down(state_dir, name, keep=True)
            tail = (mdir / "console.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise InfraError(f"machine {name} did not come up: {' | '.join(tail) or 'no output'}")
        time.sleep(0.02)
    return info


def kill_machine(info: dict) -> None:
    """SIGKILL to PID 1 of the namespace ends every process in it, then the mounts go."""
    for key in ("init_pid", "unshare_pid"):
        pid = info.get(key)
        if pid and _start_time(pid) is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and _start_time(info.get("init_pid") or 0) is not None:
        time.sleep(0.02)


def down(state_dir: Path, name: str, keep: bool = False) -> None:
    mdir = machines_dir(state_dir) / name
    info = read_info(mdir)
    if info is not None and is_alive(info):
        kill_machine(info)
    if not keep:
        shutil.rmtree(mdir, ignore_errors=True)


def changed_files(state_dir: Path, name: str) -> list[str]:
    """What was changed on the machine: its overlay's upper layer, less what the harness
    itself wrote before boot. A deletion shows as a character device (overlayfs whiteout)."""
    mdir = machines_dir(state_dir) / name
    upper = mdir / "upper"
    try:
        baseline = set(json.loads((mdir / "baseline.json").read_text()))
    except (FileNotFoundError, json.JSONDecodeError):
        baseline = set()
    rows = []
    for path in sorted(upper.rglob("*")):
        rel = str(path.relative_to(upper))
        if rel in baseline or path.is_dir() and not path.is_symlink():
            continue
        kind = "deleted" if path.is_char_device() else "written"
        rows.append(f"{kind}\t/{rel}")
    return rows


def stray_namespaces(state_dir: Path) -> list[int]:
    """Machine processes whose state was lost (a crash between boot and bookkeeping)."""
    marker = str(machines_dir(state_dir)) + "/"
    pids = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            argv = (proc / "cmdline").read_bytes().split(b"\0")
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if (
            len(argv) > 2
            and argv[0].endswith(b"unshare")
            and any(a.decode(errors="replace").startswith(marker) for a in argv)
        ):
            pids.append(int(proc.name))
    return pids


def down_all(state_dir: Path) -> list[str]:
    """End every machine under state_dir and whatever a crashed run left; return their names."""
    gone = []
    mroot = machines_dir(state_dir)
    for mdir in sorted(mroot.glob("*")) if mroot.is_dir() else []:
        down(state_dir, mdir.name)
        gone.append(mdir.name)
    for pid in stray_namespaces(state_dir):
        try:
            children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
        except FileNotFoundError:
            children = []
        for target in [*map(int, children), pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        gone.append(f"pid {pid}")
    return gone


@click.group()
def main() -> None:
    """Low-level machine commands run by the local Terraform module."""


@main.command("up")
@click.option("--state-dir", required=True, type=click.Path(path_type=Path))
@click.option("--name", required=True)
@click.option("--port", required=True, type=int)
@click.option("--image", required=True)
@click.option("--gpu/--no-gpu", default=False)
@click.option("--tag", "tags", multiple=True, help="key=value")
def _up(state_dir: Path, name: str, port: int, image: str, gpu: bool, tags: tuple) -> None:
    try:
        info = up(state_dir, name, port, image, gpu, dict(t.split("=", 1) for t in tags))
    except DeployBenchError as exc:
        raise click.ClickException(str(exc)) from exc
    click.echo(f"machine {name} up on 127.0.0.1:{info['port']} (pid {info['init_pid']})")


@main.command("down")
@click.option("--state-dir", required=True, type=click.Path(path_type=Path))
@click.option("--name", required=True)
def _down(state_dir: Path, name: str) -> None:
    down(state_dir, name)
    click.echo(f"machine {name} down")


if __name__ == "__main__":
    main()

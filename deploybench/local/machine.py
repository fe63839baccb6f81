"""One local machine: a systemd-nspawn container on an overlay of a cached base image, with a
network namespace of its own (slirp4netns: egress through the host's sockets, so apt and pip
work, and no way to the host's loopback), its sshd reached at a forwarded loopback port of the
host's, its host key pinned, and the task's limits (memory and processes by its cgroup, disk by
the size of its writable layer's file system).

Root inside is host uid images.UID_BASE, an unprivileged user on the host (user namespace);
the root is pivoted onto the overlay, whose lower layers (the image, and under the machine's own
upper layer any read-only layer it was given: an agent scaffold's prefix from the controller's
cache, deploybench/attempt/scaffold_cache.py) are never written; /dev is
nspawn's minimal one, /proc/sys and /sys are read-only. Nothing of the host is mounted in: not
the controller's checkout, the state folder, the image cache nor another machine's key or
overlay, which all stay root-only on the host.

Called by the local Terraform module (`python -m deploybench.local.machine up|down`) and by
`deploybench destroy --all`. The overlay is mounted in a mount namespace of the machine's own
(boot.sh), so killing the container's PID 1 ends every process of the machine and drops every
mount with it; what stays on the host is its writable layer's file system (unmounted by down),
its network helper and relay (ended by kill_machine)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import click

from deploybench.errors import DeployBenchError, InfraError
from deploybench.local import images, layers
from deploybench.verify import harness_login

BOOT_SCRIPT = Path(__file__).with_name("boot.sh")
BEFORE_AGENT = "before_agent.json"
SLIRP_DNS = "10.0.2.3"
LAYER = "layer"
# Disk left to the host whatever a task asks for.
HOST_DISK_RESERVE_GB = 4
SSH_WAIT_SECONDS = 30


NSPAWN_PROPAGATE = Path("/run/systemd/nspawn/propagate")
# The host's cgroup v1/hybrid hierarchies in which boot.sh gives each machine a cgroup.
CGROUP_HIERARCHIES = (
    []
    if Path("/sys/fs/cgroup/cgroup.procs").exists()
    else [
        p.parent for p in Path("/sys/fs/cgroup").glob("*/cgroup.procs") if p.parent.name != "cpuset"
    ]
)
# What the machine's processes run with on the host: nothing of the controller's environment.
BOOT_ENV = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "LANG": "C.UTF-8",
}


def require_root() -> None:
    if os.geteuid() != 0:
        raise DeployBenchError(
            "the local backend needs root (it mounts overlays and makes namespaces): "
            "run as root, e.g. with sudo"
        )


def machines_dir(state_dir: Path) -> Path:
    return Path(state_dir) / "machines"


def cgroup_group(state_dir: Path) -> str:
    """The cgroup folder of one state folder's machines: tests with private state folders run
    machines at the same time, and `destroy --all` of one must not end the other's."""
    digest = hashlib.sha256(str(Path(state_dir).resolve()).encode()).hexdigest()[:12]
    return f"deploybench/{digest}"


def _host_id(inside: int) -> int:
    return images.UID_BASE + inside


def _start_time(pid: int) -> str | None:
    """The process's start time in clock ticks: tells a live machine from a reused pid."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return None
    return fields[19]


def _descendants(pid: int) -> list[int]:
    """Every process below pid, parents before children."""
    found, todo = [], [pid]
    while todo:
        current = todo.pop(0)
        # Short-lived processes of the start-up chain exit while we walk: a process or thread
        # gone between two reads has no children left to find.
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except (FileNotFoundError, ProcessLookupError):
            continue
        for task in tasks:
            try:
                kids = [
                    int(c)
                    for c in Path(f"/proc/{current}/task/{task}/children").read_text().split()
                ]
            except (FileNotFoundError, ProcessLookupError):
                continue
            found += kids
            todo += kids
    return found


def _is_container_init(pid: int) -> bool:
    """PID 1 of a PID namespace below the host's: its NSpid line ends in 1."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            ids = line.split()[1:]
            return len(ids) > 1 and ids[-1] == "1"
    return False


def _container_init(pid: int, proc: subprocess.Popen, timeout: float = 10.0) -> int:
    """The host pid of the container's PID 1, started by nspawn somewhere below pid."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        for child in _descendants(pid):
            if _is_container_init(child):
                return child
        time.sleep(0.01)
    raise InfraError(f"the machine's container did not start (no PID 1 below pid {pid})")


def is_alive(info: dict) -> bool:
    return _running(info.get("init_pid"), info.get("init_start"))


def read_info(mdir: Path) -> dict | None:
    try:
        return json.loads((mdir / "machine.json").read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.2)
        return sock.connect_ex(("127.0.0.1", port)) == 0


def _spawn(args: list[str], log: Path) -> subprocess.Popen:
    """A host process of a machine's (its network, its verifier's container): a session of its
    own, none of the controller's environment, its output appended to log."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,
            env=BOOT_ENV,
        )


def _ssh_answers(port: int) -> bool:
    """The machine's sshd sends its banner through the forward (the forward itself listens
    before sshd does)."""
    with socket.socket() as sock:
        sock.settimeout(0.5)
        try:
            sock.connect(("127.0.0.1", port))
            return sock.recv(8).startswith(b"SSH-")
        except OSError:
            return False


def _wait_own_namespaces(pid: int, seconds: float = 10.0) -> None:
    """Wait until the container's PID 1 has its own network namespace and its user namespace's
    ids are mapped: nspawn sets both up just after the PID 1 appears, and slirp4netns joined
    too early would be refused (or attach to the host's network)."""
    host_net = os.readlink("/proc/self/ns/net")
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            own_net = os.readlink(f"/proc/{pid}/ns/net") != host_net
            mapped = bool(Path(f"/proc/{pid}/uid_map").read_text().strip())
        except OSError:
            break
        if own_net and mapped:
            return
        time.sleep(0.005)
    raise InfraError(f"the machine's namespaces were not ready in {seconds:.0f} s (pid {pid})")


def _api_socket(mdir: Path) -> Path:
    """Where slirp4netns listens for its API. A unix socket's path must fit in 107 bytes, and a
    machine folder under a deep state folder does not (a test's temporary one under
    pytest-xdist: 113): a short folder of the user's own in the temporary directory, the socket
    named by the machine folder's digest."""
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"deploybench-slirp-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    held = folder.lstat()
    if held.st_uid != os.getuid() or not folder.is_dir() or folder.is_symlink():
        raise InfraError(f"{folder} is not a folder of this user's: slirp4netns' socket needs one")
    os.chmod(folder, 0o700)
    name = hashlib.sha256(str(mdir.resolve()).encode()).hexdigest()[:24]
    return folder / f"{name}.sock"


def _network(mdir: Path, init_pid: int, port: int) -> subprocess.Popen:
    """Attach user-mode networking to the machine's network namespace: slirp4netns, a host
    process, answers for the machine's traffic through the host's own sockets (so apt and pip
    work), with the host's loopback refused (no service of the host's, no other machine's sshd
    is reachable), and forwards 127.0.0.1:PORT on the host to the machine's sshd."""
    api = _api_socket(mdir)
    api.unlink(missing_ok=True)
    _wait_own_namespaces(init_pid)
    command = [
        "slirp4netns", "--configure", "--mtu=65520", "--disable-host-loopback",
        "--api-socket", str(api), str(init_pid), "tap0",
    ]  # fmt: skip
    # A namespace still being set up refuses the join now and then: a few tries.
    for tries in range(3):
        proc = _spawn(command, mdir / "console.log")
        deadline = time.monotonic() + 10
        while not api.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        if api.exists():
            break
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()
        if tries == 2:
            tail = (mdir / "console.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise InfraError(f"slirp4netns did not start for {mdir.name}: {' | '.join(tail)}")
        time.sleep(0.1)
    request = {
        "execute": "add_hostfwd",
        "arguments": {"proto": "tcp", "host_addr": "127.0.0.1", "host_port": port,
                      "guest_port": port},
    }  # fmt: skip
    try:
        _forward(api, request)
    except BaseException:
        # Not yet in machine.json, so no kill_machine would find it.
        proc.kill()
        proc.wait()
        raise
    return proc


def _forward(api: Path, request: dict) -> None:
    # The port was free when it was chosen (below the ephemeral range); a moment's binder of
    # it gets a few more looks. slirp4netns makes its socket's file a moment before it listens
    # on it, so a refused connection is tried again too.
    for tries in range(5):
        for attempt in range(50):
            try:
                with socket.socket(socket.AF_UNIX) as sock:
                    sock.settimeout(5)
                    sock.connect(str(api))
                    sock.sendall(json.dumps(request).encode())
                    answer = sock.recv(4096).decode(errors="replace")
                break
            except ConnectionRefusedError:
                if attempt == 49:
                    raise
                time.sleep(0.02)
        if "error" not in answer:
            return
        if tries == 4:
            port = request["arguments"]["host_port"]
            raise InfraError(f"the machine's port {port} could not be forwarded: {answer[:200]}")
        time.sleep(0.3)


def _bridge(mdir: Path, init_pid: int, ports: list[int]) -> subprocess.Popen:
    """Start the relay of the given ports of the host's loopback into the machine's."""
    with open(mdir / "console.log", "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deploybench.local.bridge", str(init_pid), *map(str, ports)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=log,
            start_new_session=True,
            env={**BOOT_ENV, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
        )
    line = proc.stdout.readline() if proc.stdout else b""
    if not line.startswith(b"bridge:"):
        proc.kill()
        proc.wait()
        raise InfraError(f"the relay of ports {ports} into {mdir.name} did not start")
    return proc


def _mirror_lower(upper: Path, lower: Path) -> None:
    """Folders made in the upper layer hide the image's: give each the owner and mode of the
    image's folder (already in the machines' uid range), or root's inside if it has none."""
    for path in sorted(upper.rglob("*"), reverse=True) + [upper]:
        rel = path.relative_to(upper)
        twin = lower / rel
        if path.is_dir() and not path.is_symlink() and twin.is_dir() and not twin.is_symlink():
            st = twin.lstat()
            os.chown(path, st.st_uid, st.st_gid)
            os.chmod(path, st.st_mode & 0o7777)
        elif path.lstat().st_uid < images.UID_BASE:
            os.lchown(path, _host_id(0), _host_id(0))


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


def upper_dir(mdir: Path) -> Path:
    """The machine's writable layer: what changed on it."""
    return mdir / LAYER / "upper"


def _writable_layer(mdir: Path, disk_gb: int) -> None:
    """The folder of the overlay's upper and work folders: with disk_gb, a file system of that
    size of its own (an ext4 image, sparse, mounted on the host), so a machine that writes past
    its disk gets ENOSPC and the host's disk does not notice; else a plain folder."""
    layer = mdir / LAYER
    layer.mkdir(mode=0o700)
    if disk_gb <= 0:
        return
    free_gb = shutil.disk_usage(mdir).free / 2**30
    size_gb = max(1, min(disk_gb, int(free_gb - HOST_DISK_RESERVE_GB)))
    image = mdir / "disk.img"
    with open(image, "wb") as f:
        f.truncate(size_gb * 2**30)
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=1", str(image)], check=True
    )
    subprocess.run(
        ["mount", "-o", "loop,nosuid,nodev", str(image), str(layer)],
        check=True,
        capture_output=True,
    )
    os.chmod(layer, 0o700)
    shutil.rmtree(layer / "lost+found", ignore_errors=True)


def _release_layer(mdir: Path) -> None:
    """Unmount the machine's own file system, if it has one (lazily: a process of the host
    still holding a file there must not keep the mount)."""
    layer = mdir / LAYER
    if layer.is_dir() and os.path.ismount(layer):
        subprocess.run(["umount", "-l", str(layer)], check=False, capture_output=True)


def _prepare_upper(mdir: Path, name: str, lower: Path) -> None:
    """Files every machine gets before boot: its keys, name and DNS settings, owned by the
    machine's users (host ids shifted by images.UID_BASE)."""
    upper = upper_dir(mdir)
    for sub in (upper, mdir / LAYER / "work", mdir / "root"):
        sub.mkdir(parents=True, exist_ok=True)
    key = mdir / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", f"deploybench-{name}", "-f", key],
        check=True,
    )
    ssh_dir = upper / "home/vm/.ssh"
    ssh_dir.mkdir(parents=True)
    shutil.copy(f"{key}.pub", ssh_dir / "authorized_keys")
    for path in (ssh_dir.parent, ssh_dir, ssh_dir / "authorized_keys"):
        os.chown(path, _host_id(1000), _host_id(1000))
    os.chmod(ssh_dir.parent, 0o750)
    os.chmod(ssh_dir, 0o700)
    # The harness's own login (stages after the agent that log in: harness_login.py), with the
    # same key, in a root-owned file outside every home.
    keys = upper / harness_login.KEYS_FILE.lstrip("/")
    keys.parent.mkdir(parents=True)
    shutil.copy(f"{key}.pub", keys)
    os.chmod(keys, 0o644)
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
    # slirp4netns answers DNS there, with the host's resolver behind it.
    (upper / "etc/resolv.conf").write_text(f"nameserver {SLIRP_DNS}\n")
    _trust_host_cas(upper)
    _mirror_lower(upper, lower)
    # Kept so the evidence of what the agent changed can leave out what the harness wrote.
    baseline = sorted(str(p.relative_to(upper)) for p in upper.rglob("*"))
    (mdir / "baseline.json").write_text(json.dumps(baseline))


def _checked_layers(extra: list[str] | tuple[str, ...]) -> list[str]:
    """Read-only layers given to a machine: root-only folders of the host's (the scaffold
    cache's), never the machine's own; overlayfs separates lower layers with ':'."""
    checked = []
    for folder in extra:
        path = Path(folder).resolve()
        if ":" in str(path) or "," in str(path) or not path.is_dir():
            raise DeployBenchError(f"not a folder an overlay can take as a layer: {folder}")
        checked.append(str(path))
    return checked


def lowerdir(info: dict) -> str:
    """The machine's lower layers, top first: the read-only layers it was given, then its image."""
    return ":".join([*info.get("extra_layers", []), info.get("image_dir", "")])


def up(
    state_dir: Path,
    name: str,
    port: int,
    image: str,
    gpu: bool,
    tags: dict,
    limits: dict | None = None,
    loopback_ports: list[int] | tuple[int, ...] = (),
    extra_layers: list[str] | tuple[str, ...] = (),
) -> dict:
    """Boot a machine. limits: memory_mb, processes, cpu_ms (its cgroup's) and disk_gb (its writable
    layer's size); 0 or missing for none. loopback_ports: ports of the host's loopback the
    machine reaches at its own 127.0.0.1 (the agent's model endpoint; bridge.py). extra_layers:
    read-only folders of the host laid under the machine's upper layer, over its image (a
    scaffold's prefix); the machine's writes to them copy up into its own upper layer."""
    limits = {k: int(v or 0) for k, v in (limits or {}).items()}
    require_root()
    extra = _checked_layers(extra_layers)
    lower = images.image_path(image)
    if not images.is_built(image):
        images.ensure_image(image)
    if shutil.which("systemd-nspawn") is None:
        raise DeployBenchError(
            "systemd-nspawn not found: local machines run in it (apt-get install systemd-container)"
        )
    mdir = machines_dir(state_dir) / name
    old = read_info(mdir)
    if old and is_alive(old):
        raise DeployBenchError(f"machine {name} is already running")
    _release_layer(mdir)
    shutil.rmtree(mdir, ignore_errors=True)
    # Root-only on the host: keys, overlays and state of one machine are no one else's, and
    # every machine's root is an unprivileged host user that could not enter them anyway.
    machines_dir(state_dir).mkdir(parents=True, exist_ok=True)
    os.chmod(machines_dir(state_dir), 0o700)
    mdir.mkdir(mode=0o700)
    _writable_layer(mdir, limits.get("disk_gb", 0))
    _prepare_upper(mdir, name, lower)
    if gpu and not any(Path("/dev").glob("nvidia[0-9]*")):
        raise DeployBenchError("--gpu asked for, but this host has no /dev/nvidia* device")
    return _boot(state_dir, mdir, name, port, image, gpu, tags, limits, loopback_ports, extra)


def boot_again(
    state_dir: Path, name: str, loopback_ports: list[int] | tuple[int, ...] = ()
) -> dict:
    """Boot a machine that was ended (its PID 1 killed after the agent) over the writable layer
    it left: the machine as the agent and the verifier left it, running again (the agentic
    diagnosis of a kept machine enters it so). Its keys, port and limits are those it had."""
    require_root()
    mdir = machines_dir(state_dir) / name
    old = read_info(mdir)
    if old is None or not upper_dir(mdir).is_dir():
        raise DeployBenchError(f"machine {name} has no layer left to boot again")
    if is_alive(old):
        return old
    kill_machine(old)  # what still served it from the host (its network, its bridge)
    return _boot(
        state_dir,
        mdir,
        name,
        old["port"],
        old["image"],
        old["gpu"],
        old.get("tags", {}),
        old.get("limits", {}),
        loopback_ports,
        old.get("extra_layers", []),
    )


def _boot(
    state_dir: Path,
    mdir: Path,
    name: str,
    port: int,
    image: str,
    gpu: bool,
    tags: dict,
    limits: dict,
    loopback_ports: list[int] | tuple[int, ...],
    extra_layers: list[str] | tuple[str, ...] = (),
) -> dict:
    lower = images.image_path(image)
    lowers = lowerdir({"image_dir": str(lower), "extra_layers": list(extra_layers)})
    if _port_open(port):
        raise InfraError(f"port {port} is already in use on 127.0.0.1")

    cgroup = f"{cgroup_group(state_dir)}/{name}"
    with open(mdir / "console.log", "ab") as log:
        proc = subprocess.Popen(
            [
                "unshare",
                "--mount",
                "--fork",
                "--kill-child=SIGKILL",
                "bash",
                str(BOOT_SCRIPT),
                lowers,
                str(upper_dir(mdir)),
                str(mdir / LAYER / "work"),
                str(mdir / "root"),
                name,
                str(port),
                "1" if gpu else "0",
                str(images.UID_BASE),
                cgroup,
                "boot",
                str(limits.get("memory_mb", 0) * 2**20),
                str(limits.get("processes", 0)),
                str(limits.get("cpu_ms", 0)),
            ],
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            start_new_session=True,
            env=BOOT_ENV,
        )
    init_pid = _container_init(proc.pid, proc)
    info = {
        "name": name,
        "port": port,
        "image": image,
        "image_dir": str(lower),
        "extra_layers": list(extra_layers),
        "gpu": gpu,
        "tags": tags,
        "unshare_pid": proc.pid,
        "unshare_start": _start_time(proc.pid),
        "init_pid": init_pid,
        "uid_base": images.UID_BASE,
        "cgroup": cgroup,
        "limits": limits,
        "init_start": _start_time(init_pid),
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    (mdir / "machine.json").write_text(json.dumps(info, indent=2))
    # The machine's host key, pinned: the harness's SSH refuses any other (a process of
    # another machine's that took over this port, say).
    host_key = (upper_dir(mdir) / "etc/ssh/ssh_host_ed25519_key.pub").read_text().split()
    (mdir / "known_hosts").write_text(f"[127.0.0.1]:{port} {host_key[0]} {host_key[1]}\n")
    try:
        net = _network(mdir, init_pid, port)
    except BaseException:
        down(state_dir, name, keep=True)
        raise
    info |= {"slirp_pid": net.pid, "slirp_start": _start_time(net.pid)}
    info["slirp_api"] = str(_api_socket(mdir))
    # Recorded at once: whatever fails next, down() finds it there.
    (mdir / "machine.json").write_text(json.dumps(info, indent=2))
    if loopback_ports:
        try:
            relay = _bridge(mdir, init_pid, list(loopback_ports))
        except BaseException:
            down(state_dir, name, keep=True)
            raise
        info |= {"bridge_pid": relay.pid, "bridge_start": _start_time(relay.pid)}
    (mdir / "machine.json").write_text(json.dumps(info, indent=2))

    deadline = time.monotonic() + SSH_WAIT_SECONDS
    while not _ssh_answers(port):
        if proc.poll() is not None or time.monotonic() > deadline:
            down(state_dir, name, keep=True)
            tail = (mdir / "console.log").read_text(errors="replace").strip().splitlines()[-3:]
            raise InfraError(f"machine {name} did not come up: {' | '.join(tail) or 'no output'}")
        time.sleep(0.02)
    return info


def _cgroup_pids(cgroup: str) -> set[int]:
    pids = set()
    for hierarchy in CGROUP_HIERARCHIES:
        for procs in (hierarchy / cgroup).rglob("cgroup.procs"):
            with contextlib.suppress(FileNotFoundError, OSError):
                pids.update(int(p) for p in procs.read_text().split())
    return pids


def end_cgroup(cgroup: str) -> None:
    """SIGKILL whatever is left in a machine's cgroups (if nspawn died before its container),
    then remove the cgroups, deepest first."""
    deadline = time.monotonic() + 10
    while (pids := _cgroup_pids(cgroup)) and time.monotonic() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.02)
    for hierarchy in CGROUP_HIERARCHIES:
        top = hierarchy / cgroup
        if not top.is_dir():
            continue
        for folder in sorted((p for p in top.rglob("*") if p.is_dir()), reverse=True) + [top]:
            with contextlib.suppress(OSError):
                folder.rmdir()


def _running(pid: int | None, start: str | None) -> bool:
    """pid is still the process that started at `start`, and has not exited (a zombie whose
    parent has not reaped it yet counts as gone)."""
    if not pid or start is None or _start_time(pid) != start:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError, IndexError):
        return False
    return state not in ("Z", "X")


def _wait_gone(pid: int | None, start: str | None, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while _running(pid, start):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def kill_machine(info: dict) -> None:
    """SIGKILL to the container's PID 1 ends every process in it; nspawn reaps it and exits,
    and the overlay goes with the mount namespace. Only nspawn's parent, which reaps it at
    once, is waited for (an orphan's zombie waits for the host's init, which may be slow)."""
    init, init_start = info.get("init_pid"), info.get("init_start")
    if _running(init, init_start):
        with contextlib.suppress(ProcessLookupError):
            os.kill(init, signal.SIGKILL)
    _wait_gone(init, init_start, 10)
    for helper in ("slirp", "bridge"):
        pid, start = info.get(f"{helper}_pid"), info.get(f"{helper}_start")
        if _running(pid, start):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            _wait_gone(pid, start, 2)
    if info.get("slirp_api"):
        Path(info["slirp_api"]).unlink(missing_ok=True)
    outer, outer_start = info.get("unshare_pid"), info.get("unshare_start")
    if not _wait_gone(outer, outer_start, 2) and outer:
        with contextlib.suppress(ProcessLookupError):
            os.kill(outer, signal.SIGKILL)
    if info.get("cgroup"):
        end_cgroup(info["cgroup"])
        for hierarchy in CGROUP_HIERARCHIES:
            with contextlib.suppress(OSError):
                (hierarchy / info["cgroup"]).parent.rmdir()
    # nspawn leaves its (empty) propagation folder behind when /run is not a tmpfs.
    with contextlib.suppress(OSError):
        (NSPAWN_PROPAGATE / info.get("name", "")).rmdir()


def down(state_dir: Path, name: str, keep: bool = False) -> None:
    mdir = machines_dir(state_dir) / name
    info = read_info(mdir)
    if info is not None:
        # Also when its PID 1 is gone already: what serves it from the host (its network) is not.
        kill_machine(info)
    if not keep:
        _release_layer(mdir)
        shutil.rmtree(mdir, ignore_errors=True)


def changed_files(state_dir: Path, name: str) -> list[str]:
    """What was changed on the machine: its overlay's upper layer, less what the harness
    itself wrote before boot. A deletion shows as a character device (overlayfs whiteout)."""
    mdir = machines_dir(state_dir) / name
    upper = upper_dir(mdir)
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
        for target in [*reversed(_descendants(pid)), pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(target, signal.SIGKILL)
        gone.append(f"pid {pid}")
    # A machine whose nspawn died without its container is still in its state folder's cgroups.
    group = cgroup_group(state_dir)
    names = {p.name for h in CGROUP_HIERARCHIES for p in (h / group).glob("*") if p.is_dir()}
    for name in sorted(names):
        if _cgroup_pids(f"{group}/{name}"):
            gone.append(f"cgroup {name}")
        end_cgroup(f"{group}/{name}")
    for hierarchy in CGROUP_HIERARCHIES:
        with contextlib.suppress(OSError):
            (hierarchy / group).rmdir()
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
@click.option("--memory-mb", type=int, default=0, help="The machine's memory limit; 0: none.")
@click.option("--max-processes", type=int, default=0, help="Its process limit; 0: none.")
@click.option(
    "--cpu-ms", type=int, default=0, help="Its CPU time per 100 ms (100 per CPU); 0: none."
)
@click.option("--disk-gb", type=int, default=0, help="Its writable layer's size; 0: unbounded.")
@click.option(
    "--loopback-port",
    "loopback_ports",
    type=int,
    multiple=True,
    help="A port of the host's loopback the machine reaches at its own (the model endpoint).",
)
@click.option(
    "--lower-layer",
    "extra_layers",
    multiple=True,
    help="A read-only folder of the host laid over the image (a scaffold's cached prefix).",
)
def _up(
    state_dir: Path,
    name: str,
    port: int,
    image: str,
    gpu: bool,
    tags: tuple,
    memory_mb: int,
    max_processes: int,
    cpu_ms: int,
    disk_gb: int,
    loopback_ports: tuple[int, ...],
    extra_layers: tuple[str, ...],
) -> None:
    limits = {
        "memory_mb": memory_mb,
        "processes": max_processes,
        "disk_gb": disk_gb,
        "cpu_ms": cpu_ms,
    }
    tag_map = dict(t.split("=", 1) for t in tags)
    try:
        info = up(state_dir, name, port, image, gpu, tag_map, limits, loopback_ports, extra_layers)
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


def _signature(st: os.stat_result) -> list[int]:
    # The change time cannot be set from inside the machine (utimes sets only the others), so
    # an entry with the same inode, mode, owner, size and change time is the one noted.
    return [st.st_ino, st.st_mode, st.st_uid, st.st_size, st.st_ctime_ns]


def note_before_agent(state_dir: Path, name: str) -> None:
    """Note every entry of the upper layer just before the agent starts (what the harness put
    there: keys, the prepared machine, the staged repository), so the host's scan after the
    agent reports only what changed since."""
    mdir = machines_dir(state_dir) / name
    upper = upper_dir(mdir)
    noted = {rel: _signature(st) for rel, st in layers.walk(upper)}
    (mdir / BEFORE_AGENT).write_text(json.dumps(noted))


def noted_before_agent(mdir: Path) -> dict[str, list[int]]:
    try:
        return json.loads((mdir / BEFORE_AGENT).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return {}


def unchanged_since_agent(mdir: Path):
    """A test of (path, lstat) of the upper layer: true when the entry is as it was noted just
    before the agent (nothing is unchanged when nothing was noted)."""
    noted = noted_before_agent(mdir)
    return lambda rel, st: noted.get(rel) == _signature(st)


def killed_from_outside(mdir: Path, info: dict) -> bool:
    """Whether a machine whose PID 1 is gone was ended from outside it (an operator, the host's
    OOM killer, a harness fault): nspawn's own last word on it is "terminated by signal KILL",
    which nothing inside can bring about (a PID 1 ignores SIGKILL from its own namespace), and
    its cgroup saw no OOM kill (the machine's own memory use). An agent can write a line of that
    form to its console, but not after nspawn's last one."""
    try:
        text = (mdir / "console.log").read_text(errors="replace")
    except OSError:
        return False
    said = [ln for ln in text.splitlines() if ln.startswith(f"Container {info.get('name')} ")]
    if not said or not said[-1].endswith("terminated by signal KILL."):
        return False
    for hierarchy in CGROUP_HIERARCHIES:
        for control in (hierarchy / info.get("cgroup", "")).rglob("memory.oom_control"):
            with contextlib.suppress(OSError, ValueError):
                for line in control.read_text().splitlines():
                    if line.startswith("oom_kill ") and int(line.split()[1]) > 0:
                        return False
    return True


def machine_processes(info: dict) -> list[int]:
    """The host pids of every process in the machine but its PID 1."""
    if not is_alive(info):
        return []
    return _descendants(info["init_pid"])


def run_verifier(
    state_dir: Path, name: str, verify_dir: Path, command: list[str], seconds: float, log: Path
) -> int | None:
    """Run `command` in a fresh container over the machine's layers (boot.sh's verify mode),
    the machine itself having ended: the exit code, or None when the wall-clock limit ran out
    (everything in the container is then killed from the host)."""
    mdir = machines_dir(state_dir) / name
    info = read_info(mdir) or {}
    if is_alive(info):
        raise DeployBenchError(f"machine {name} still runs: end it before its verifier starts")
    cgroup = info.get("cgroup") or f"{cgroup_group(state_dir)}/{name}"
    limits = info.get("limits") or {}
    args = [
        "unshare", "--mount", "--fork", "--kill-child=SIGKILL",
        "bash", str(BOOT_SCRIPT),
        lowerdir(info), str(upper_dir(mdir)), str(mdir / LAYER / "work"),
        str(mdir / "root"), name, "0", "1" if info.get("gpu") else "0",
        str(info.get("uid_base", images.UID_BASE)), cgroup, "verify",
        str(limits.get("memory_mb", 0) * 2**20), str(limits.get("processes", 0)),
        str(limits.get("cpu_ms", 0)),
        str(verify_dir), *command,
    ]  # fmt: skip
    proc = _spawn(args, log)
    try:
        return proc.wait(timeout=seconds)
    except subprocess.TimeoutExpired:
        return None
    finally:
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        end_cgroup(cgroup)
        with contextlib.suppress(OSError):
            (NSPAWN_PROPAGATE / f"{name}-verify").rmdir()

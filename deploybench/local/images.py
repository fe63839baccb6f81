"""Base images of the local backend: Debian root file systems built with mmdebstrap.

An image holds what a fresh cloud image holds and nothing task-specific. It is built once per
host, cached under the state folder keyed by a hash of its recipe, and rebuilt when the recipe
changes. Ubuntu 22.04 (the paper's image) cannot be built from here: only Debian's archive is
reachable, so the local backend offers Debian 12 and Debian 13 and says so.

Machines run in a user namespace whose root is host uid UID_BASE (see machine.py), so an image
is owned by that uid range on disk: its ownership is shifted once, right after it is built,
never per machine (a per-machine shift copies the whole image)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shlex
import shutil
import subprocess
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from deploybench.errors import DeployBenchError
from deploybench.paths import state_home
from deploybench.verify import harness_login

DEBIAN_MIRROR = os.environ.get("DEPLOYBENCH_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SECURITY_MIRROR = os.environ.get(
    "DEPLOYBENCH_DEBIAN_SECURITY_MIRROR", "http://deb.debian.org/debian-security"
)

# Host uid (and gid) that is root inside every local machine; the 65536 ids after it are the
# machine's other users. Above the range systemd-nspawn picks from (524288-1878982656) and far
# above any host account, so no host file or process has these ids except the machines'.
UID_BASE = 0x70000000
UID_RANGE = 65536

# What a fresh cloud image has: an interpreter for Ansible, sudo, sshd, the usual fetch tools.
# python3-venv, compilers and the like are deliberately absent, as on a fresh cloud image.
BASE_PACKAGES = [
    "python3",
    "sudo",
    "openssh-server",
    "curl",
    "wget",
    "git",
    "ca-certificates",
    "procps",
    "iproute2",
    "iputils-ping",
    "less",
    "gnupg",
    "lsb-release",
    "pciutils",
    "kmod",
    "xz-utils",
    "bzip2",
    "unzip",
    "file",
    "nano",
    "netbase",
]


def _harness_login() -> list[str]:
    """The harness's own login user and its sshd and sudo settings
    (deploybench/verify/harness_login.py), as on a cloud machine; each machine gets its key in
    _prepare_upper."""
    made = [
        f'chroot "$1" useradd --system --create-home --home-dir {harness_login.HOME} '
        f"--shell /bin/sh --user-group {harness_login.USER}",
        f'mkdir -p "$1{harness_login.KEYS_DIR}"',
    ]
    for path, content, mode in harness_login.files(""):
        if path != harness_login.KEYS_FILE:
            made.append(f'printf %s {shlex.quote(content)} > "$1{path}" && chmod {mode} "$1{path}"')
    return made


# Run inside the new root by mmdebstrap (customize hooks get the root as "$1").
CUSTOMIZE = [
    'chroot "$1" useradd --create-home --shell /bin/bash --uid 1000 --user-group vm',
    "echo 'vm ALL=(ALL) NOPASSWD:ALL' > \"$1/etc/sudoers.d/vm\"",
    'chmod 0440 "$1/etc/sudoers.d/vm"',
    # Host keys are made per machine at boot, so no two machines share one.
    'rm -f "$1"/etc/ssh/ssh_host_*',
    'rm -f "$1/etc/machine-id" && touch "$1/etc/machine-id"',
    'mkdir -p "$1/run/sshd"',
    *_harness_login(),
]


@dataclass(frozen=True)
class Recipe:
    name: str
    suite: str
    description: str
    packages: list[str] = field(default_factory=lambda: list(BASE_PACKAGES))
    customize: list[str] = field(default_factory=lambda: list(CUSTOMIZE))
    uid_base: int = UID_BASE

    def sources(self) -> list[str]:
        return [
            f"deb {DEBIAN_MIRROR} {self.suite} main",
            f"deb {DEBIAN_MIRROR} {self.suite}-updates main",
            f"deb {SECURITY_MIRROR} {self.suite}-security main",
        ]

    def digest(self) -> str:
        blob = json.dumps({**asdict(self), "sources": self.sources()}, sort_keys=True)
        return hashlib.sha256(blob.encode()).hexdigest()[:12]


RECIPES = {
    "debian12": Recipe("debian12", "bookworm", "Debian 12 (bookworm), Python 3.11"),
    "debian13": Recipe("debian13", "trixie", "Debian 13 (trixie), Python 3.13"),
}


def images_dir() -> Path:
    """Images are shared by every state folder on the host unless DEPLOYBENCH_IMAGE_CACHE
    moves them, so tests with a private state folder do not rebuild them."""
    default = Path("/var/lib/deploybench/images") if os.geteuid() == 0 else state_home() / "images"
    return Path(os.environ.get("DEPLOYBENCH_IMAGE_CACHE", default))


def recipe_for(name: str) -> Recipe:
    try:
        return RECIPES[name]
    except KeyError:
        raise DeployBenchError(
            f"unknown local image {name!r}: choose one of {', '.join(sorted(RECIPES))}"
        ) from None


def image_path(name: str) -> Path:
    recipe = recipe_for(name)
    return images_dir() / f"{name}-{recipe.digest()}" / "rootfs"


def is_built(name: str) -> bool:
    return (image_path(name).parent / "image.json").is_file()


def require_mmdebstrap() -> str:
    path = shutil.which("mmdebstrap")
    if path is None:
        raise DeployBenchError(
            "mmdebstrap not found: the local backend builds its base image with it "
            "(apt-get install mmdebstrap)"
        )
    return path


def ensure_image(name: str, on_line=None) -> Path:
    """Return the cached root file system of `name`, building it first if needed.

    on_line(str) receives mmdebstrap's progress lines while it builds."""
    recipe = recipe_for(name)
    target = image_path(name)
    if is_built(name):
        return target
    mmdebstrap = require_mmdebstrap()
    images_dir().mkdir(parents=True, exist_ok=True)
    # Root-only: nothing but the overlay mount (made by root) needs to read an image.
    os.chmod(images_dir(), 0o700)
    with open(images_dir() / f"{name}.lock", "w") as lock:
        # Parallel provisions wait here for one build instead of building twice.
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_built(name):
            return target
        staging = target.parent.with_name(target.parent.name + ".partial")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        cmd = [
            mmdebstrap,
            "--mode=root",
            "--variant=minbase",
            "--verbose",
            "--include=" + ",".join(recipe.packages),
            *[f"--customize-hook={hook}" for hook in recipe.customize],
            recipe.suite,
            str(staging / "rootfs"),
            *recipe.sources(),
        ]
        started = time.monotonic()
        log_path = staging / "build.log"
        with open(log_path, "w") as log:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                stdin=subprocess.DEVNULL,
            )
            assert proc.stdout is not None
            for line in proc.stdout:
                log.write(line)
                if on_line is not None and line.startswith(("I:", "W:", "E:")):
                    on_line(line.rstrip())
            proc.wait()
        if proc.returncode != 0:
            tail = log_path.read_text().strip().splitlines()[-1:] or ["no output"]
            raise DeployBenchError(
                f"building image {name} failed (mmdebstrap exit {proc.returncode}: {tail[0]}); "
                f"log: {log_path}"
            )
        _shift_ownership(staging / "rootfs", recipe.uid_base)
        meta = {
            "name": name,
            "uid_base": recipe.uid_base,
            "suite": recipe.suite,
            "digest": recipe.digest(),
            "built_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "build_seconds": round(time.monotonic() - started, 1),
            "packages": recipe.packages,
        }
        (staging / "image.json").write_text(json.dumps(meta, indent=2))
        shutil.rmtree(target.parent, ignore_errors=True)
        staging.rename(target.parent)
    return target


def _shift_ownership(rootfs: Path, uid_base: int) -> None:
    """Own the image by the machines' uid range, once. systemd-nspawn's own recursive chown
    does it (ACLs included) in well under a second; /bin/true is all it runs inside."""
    nspawn = shutil.which("systemd-nspawn")
    if nspawn is None:
        raise DeployBenchError(
            "systemd-nspawn not found: local machines run in it (apt-get install systemd-container)"
        )
    proc = subprocess.run(
        [
            nspawn,
            "--quiet",
            "--register=no",
            "--keep-unit",
            "--settings=no",
            "--resolv-conf=off",
            "--timezone=off",
            "--link-journal=no",
            "--console=pipe",
            f"--directory={rootfs}",
            f"--private-users={uid_base}:{UID_RANGE}",
            "--private-users-ownership=chown",
            "/bin/true",
        ],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin")},
    )
    if proc.returncode != 0 or rootfs.stat().st_uid != uid_base:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise DeployBenchError(f"shifting the image's ownership to uid {uid_base} failed: {tail}")


def identity(name: str) -> dict[str, str]:
    """A built image's recipe digest, build time and the sha256 of its dpkg status file (every
    package and version it holds)."""
    rootfs = image_path(name)
    meta = json.loads((rootfs.parent / "image.json").read_text())
    status = hashlib.sha256((rootfs / "var/lib/dpkg/status").read_bytes()).hexdigest()
    return {
        "recipe_digest": meta["digest"],
        "built_at": meta.get("built_at", ""),
        "packages_sha256": status,
    }


def list_images() -> list[dict]:
    rows = []
    for name, recipe in sorted(RECIPES.items()):
        meta_file = image_path(name).parent / "image.json"
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        rows.append(
            {
                "name": name,
                "description": recipe.description,
                "digest": recipe.digest(),
                "built_at": meta.get("built_at"),
                "path": str(image_path(name)),
            }
        )
    return rows

"""The doors of a login into a machine the harness cannot enter from outside (cloud machines,
and local ones with DEPLOYBENCH_LOCAL_POST_AGENT=machine): digests of the files a login and
its `sudo` pass through, taken before the agent starts and again after it, before any other
stage after the agent runs.

A changed door (sshd's configuration or system rc, PAM, sudo's settings, the environment PAM
reads, the loader's preload, name service switch, the harness's own user and files) means the
stages after the agent would run through something the agent set up: the attempt is judged
`tampered` at once (DOOR lines, deploybench/verify/integrity.py) and no further stage runs. Other
start-up files the agent may change for good reasons (shell rc and profile files, the loader's
library paths, Python's `.pth` files, git settings) are recorded (STARTUP lines), not judged.

This is a tripwire, not proof: the digests after the agent are computed through the same doors
(sshd, sudo, the machine's shell and sha256sum). On AWS the machine is also stopped and its
volume read from a snapshot by a machine of the harness's (backends/volume_scan.py): what a
forged digest hid, the scan of the volume finds."""

from __future__ import annotations

import fnmatch
from pathlib import Path

from deploybench.verify import harness_login

# Judged: a login as the harness's user and its sudo read or run these.
DOORS = (
    "/etc/ssh/sshd_config",
    "/etc/ssh/sshd_config.d/*",
    "/etc/ssh/sshrc",
    "/etc/pam.conf",
    "/etc/pam.d/*",
    "/etc/security/*",
    "/lib/*/security/*",
    "/usr/lib/*/security/*",
    "/etc/sudo.conf",
    "/etc/sudoers",
    "/etc/sudoers.d/*",
    "/etc/environment",
    "/etc/default/locale",
    "/etc/ld.so.preload",
    "/etc/nsswitch.conf",
    "/etc/shells",
    f"{harness_login.KEYS_DIR}/*",
    f"{harness_login.HOME}/*",
    f"{harness_login.HOME}/.[!.]*",
    f"{harness_login.HOME}/.ssh/*",
)
# Recorded: start-up files of other ways in, or that an installation may change for good reasons.
RECORDED = (
    "/etc/profile",
    "/etc/profile.d/*",
    "/etc/bash.bashrc",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d/*",
    "/etc/gitconfig",
    "/root/.bashrc",
    "/root/.profile",
    "/root/.ssh/*",
    "/home/*/.bashrc",
    "/home/*/.profile",
    "/home/*/.ssh/*",
    "/usr/lib/python3*/sitecustomize.py",
    "/usr/lib/python3/dist-packages/*.pth",
    "/usr/local/lib/python3*/dist-packages/*.pth",
)
# What Ansible itself writes in the harness's home while it works.
_HARNESS_OWN = (f"{harness_login.HOME}/.ansible",)
SCRIPT = Path(__file__).parent / "doors.sh"


def patterns() -> list[str]:
    return [*DOORS, *RECORDED]


def command() -> str:
    """The shell command the playbook runs on the machine (as root): the script's text on the
    command line and the patterns as its arguments."""
    import shlex

    return " ".join(
        [
            "/bin/sh",
            "-c",
            shlex.quote(SCRIPT.read_text()),
            "doors.sh",
            shlex.quote(harness_login.USER),
            *(shlex.quote(p) for p in patterns()),
        ]
    )


def parse(text: str) -> dict[str, str]:
    """path -> digest from the script's lines (`<digest> <path as hex>`); a line that is not
    one of those is kept under its own text, so a mangled listing differs from the first."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        digest, _, encoded = line.strip().partition(" ")
        try:
            if not digest or not encoded:
                raise ValueError("not a digest and a path")
            path = bytes.fromhex(encoded).decode(errors="backslashreplace")
        except ValueError:
            found[f"(unreadable line) {line[:200]!r}"] = "?"
            continue
        found[path] = digest
    return found


def _judged(path: str) -> bool:
    if path == "passwd" or path.startswith("(unreadable"):
        return True
    if any(path == own or path.startswith(own + "/") for own in _HARNESS_OWN):
        return False
    return any(fnmatch.fnmatchcase(path, p) for p in DOORS)


def compare(before: str, after: str) -> list[str]:
    """The raw lines (deploybench/verify/integrity.py) of what changed between the two listings:
    DOOR for the judged doors, STARTUP for the rest."""
    then, now = parse(before), parse(after)
    lines = []
    for path in sorted(set(then) | set(now)):
        if then.get(path) == now.get(path):
            continue
        how = "added" if path not in then else "removed" if path not in now else "changed"
        shown = path.encode("unicode_escape").decode()[:300]
        if _judged(path):
            lines.append(f"DOOR {shown} {how} since before the agent")
        elif not any(path == own or path.startswith(own + "/") for own in _HARNESS_OWN):
            lines.append(f"STARTUP {shown} ({how})")
    return lines

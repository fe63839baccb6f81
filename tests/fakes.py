"""The fakes an agent that has read verifiers/ could leave instead of the real artifact, built
for real on this host, for the verifiers' tests to play (each verifier's checks.yaml names, in
`defeats`, which of its checks stops which fake; catalog/checks.py's FAKES lists them):

- stub_binary: a tiny ELF (compiled here with the host's cc) that launches a script, placed
  where the repository's build would put its program;
- stub_interpreter: an interpreter (python, java, Rscript ...) that is a script printing what
  the checks want, or the tiny ELF launching one;
- echo: a program that prints back the inputs the verifier drew;
- constant: a program that prints the values the public verifier or paper shows."""

import os
import shutil
import subprocess
from pathlib import Path

LAUNCHER_C = r"""
#include <unistd.h>
int main(int argc, char **argv) {
    char *args[256];
    int i, n = 0;
    args[n++] = "/bin/sh";
    args[n++] = SCRIPT;
    for (i = 1; i < argc && n < 255; i++) args[n++] = argv[i];
    args[n] = 0;
    execv("/bin/sh", args);
    return 127;
}
"""


def script(path, body, shebang="#!/bin/sh"):
    """An executable script at PATH (folders made): a stub interpreter or program."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"{shebang}\n{body.strip()}\n")
    path.chmod(0o755)
    return path


def stub_elf(path, body):
    """A tiny ELF at PATH that runs BODY (a shell script kept beside it, `.PATH.sh`) with its
    own arguments: what passes a check of a binary's first four bytes."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    sh = script(path.parent / f".{path.name}.sh", body)
    cc = shutil.which("cc") or shutil.which("gcc")
    assert cc, "the fakes need a C compiler on this host (apt-get install gcc)"
    src = path.parent / f".{path.name}.c"
    src.write_text(LAUNCHER_C)
    subprocess.run(
        [cc, "-O1", "-s", f'-DSCRIPT="{sh}"', "-o", str(path), str(src)],
        check=True,
        capture_output=True,
    )
    src.unlink()
    assert path.read_bytes()[:4] == b"\x7fELF"
    return path


def echo_inputs_body(lines):
    """The body of a program that prints LINES, each a format with $VARIANT_* or $1.. in it:
    an echo of what the verifier drew (as far as the program can see it)."""
    return "\n".join(f'echo "{line}"' for line in lines)


def own(path, owner="root"):
    subprocess.run(["chown", "-R", owner, str(path)], check=True)
    return path


def tree(root, files):
    """Files {relative path: text} under ROOT (folders made), executable when they start #!."""
    root = Path(root)
    for rel, text in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
        if text.startswith("#!"):
            os.chmod(p, 0o755)
    return root

"""What a sub-command runs, however the agent typed it.

Agents install into `<workdir>/env` and call tools by path (`env/bin/pip install`), through an
interpreter (`python3 -m pip`), under wrappers (`sudo -E`, `env X=1`, `nohup`, `timeout 600`,
`conda run -n x`, `bash -c '...'`). The phase and recovery rules are written against the bare
tool (`pip install ...`), so every sub-command is brought to that form first: wrappers peeled
off, a tool called by path named by its base name, `python -m pip` and `uv pip` read as `pip`.
Only the head of the command changes; its arguments are left as typed."""

from __future__ import annotations

import re
from functools import lru_cache

# Wrappers that run the rest of the line unchanged. Each pattern eats one wrapper with its own
# options, up to the wrapped command; they are applied until none matches.
_WRAPPERS = tuple(
    re.compile(p)
    for p in (
        r"^\(\s*",
        # sudo's options that take a value (-u USER, -g GROUP, ...) and flags (-E, -H, --login)
        r"^sudo(?:\s+(?:-[ugCDprtUhT]\s+\S+|--[\w-]+(?:=\S+)?|-[A-Za-z]+))*\s+(?=[^\s|&;<>])",
        r"^env(?:\s+(?:-u\s+\S+|-\S+|[A-Za-z_]\w*=\S*))*\s+(?=[^\s|&;<>])",
        r"^(?:[A-Za-z_]\w*=(?:'[^']*'|\"[^\"]*\"|\S*)\s+)+(?=[^\s|&;<>])",
        r"^(?:nohup|time|exec|command(?!\s+-[vV]))\s+(?=[^\s|&;<>])",
        r"^nice(?:\s+(?:-n\s*\S+|-\d+|--adjustment=\S+))?\s+(?=[^\s|&;<>])",
        r"^stdbuf(?:\s+-\S+)+\s+(?=[^\s|&;<>])",
        r"^timeout(?:\s+(?:-[sk]\s+\S+|--[\w-]+(?:=\S+)?|-\S+))*\s+\d+(?:\.\d+)?[smhd]?\s+(?=[^\s|&;<>])",
        r"^(?:conda|mamba|micromamba)\s+run"
        r"(?:\s+(?:-n|--name|-p|--prefix)\s+\S+|\s+--[\w-]+)*\s+(?=[^\s|&;<>])",
        r"^(?:uv|poetry|pipenv|pixi)\s+run(?:\s+--[\w-]+)*\s+(?=[^\s|&;<>])",
    )
)
# `bash -c '...'`, `sh -lc "..."`: the quoted script is the command (one quoted argument only).
_SHELL_C = re.compile(r"""^(?:\S*/)?(?:bash|sh|dash|zsh)\s+-[a-z]*c\s+(['"])(.*)\1\s*$""", re.S)
# Tools whose path says nothing about what they do: `/opt/x/bin/pip` is pip.
_TOOLS = (
    r"python[\d.]*|pip[\d.]*|pytest|py\.test|conda|mamba|micromamba|uv|virtualenv|jupyter"
    r"|make|cmake|ninja|meson|bazel|gcc[\d-]*|g\+\+[\d-]*|cc|c\+\+|clang[\w+.-]*|nvcc|gfortran"
    r"|mpicc|mpicxx|mpirun|cargo|rustc|rustup|go|java|javac|mvn|gradle|node|npm|npx|yarn"
    r"|R|Rscript|julia|git|apt|apt-get|dpkg|wget|curl|tar|unzip|torchrun|accelerate|deepspeed"
    r"|huggingface-cli|nvidia-smi|qemu-[\w-]+|lua|luajit|th|luarocks|racket|raco|ghc|stack|cabal"
)
_BY_PATH = re.compile(rf"^(?:\S*/)({_TOOLS})(?=\s|$)")
_PYTHON_M_PIP = re.compile(r"^python[\d.]*\s+-m\s+pip(?=\s|$)")
_UV_PIP = re.compile(r"^uv\s+pip(?=\s|$)")


@lru_cache(maxsize=200_000)
def canonical(subcommand: str) -> str:
    """The sub-command as the bare tool would be typed: `env/bin/pip install x` -> `pip
    install x`, `sudo -E timeout 60 ./env/bin/python -m pip show y` -> `pip show y`."""
    text = subcommand.strip()
    for _ in range(10):  # wrappers nest (`sudo env X=1 nohup ...`); ten is more than any agent
        before = text
        for pattern in _WRAPPERS:
            text = pattern.sub("", text, count=1)
        shell = _SHELL_C.match(text)
        if shell:
            text = shell.group(2).strip()
        text = _BY_PATH.sub(r"\1", text, count=1)
        text = _PYTHON_M_PIP.sub("pip", text, count=1)
        text = _UV_PIP.sub("pip", text, count=1)
        if text == before:
            break
    return text

"""Completion judgment (docs/measurements.md section 8): did the agent's last check before finishing
exercise the artifact (meaningful) or only touch it (shallow)?

What exercises the artifact is the task's own: its entry points. They come from
 - task.yaml `entry_points`: a list of commands, scripts or binaries (e.g. "python train.py",
   "./legacycalc", "make check"); a sub-command runs an entry point when the entry point's words
   appear in it in order, comparing each word by its last path part and any python/python3.x
   as "python" (so `env/bin/python3 train.py --epochs 1` runs "python train.py");
 - when that field is absent, the `designated_experiment` prose: every `backticked` command
   and every script or ./binary it names;
 - and the verifier's target: scripts and binaries under the workdir that the verdict's
   layer-2 check details name (e.g. "no executable ELF binary at <workdir>/legacycalc").
The check judged is the last shell command before the finish that is not writing the runbook.
It is meaningful when one of its sub-commands runs an entry point (the entry point is the command
itself, or follows only launchers such as python, bash, nohup, mpirun and their options) and is
not only asking for help or a version; otherwise it is shallow (imports, --help, toy examples,
runbook writing)."""

from __future__ import annotations

import re
import shlex
from functools import lru_cache
from typing import Any

from deploybench.analysis.invocation import canonical
from deploybench.analysis.phases import classify
from deploybench.analysis.shell_split import split_subcommands

_PY = re.compile(r"^python[\d.]*$")
_BACKTICKED = re.compile(r"`([^`]+)`")
_SCRIPT = re.compile(r"(?<![\w/.])((?:\./)?[\w./-]+\.(?:py|sh|pl|rb|jl|R)|\./[\w./-]+)\b")
_SHALLOW = re.compile(r"(^|\s)(--help|-h|--version|-V)(\s|$)")
_TARGET_EXT = re.compile(r"\.(py|sh|pl|rb|jl|R)$|^[^.]+$")
_NOT_TARGET = {"env", "venv", ".venv", "RUNBOOK.MD", "runs", "data"}
# Words that may come before an entry point on the same sub-command: launchers, interpreters
# and their options. `cat train.py` reads the script; `python -u train.py` runs it.
_LAUNCHERS = {
    "python",
    "bash",
    "sh",
    "zsh",
    "perl",
    "ruby",
    "node",
    "Rscript",
    "julia",
    "java",
    "nohup",
    "setsid",
    "exec",
    "time",
    "xvfb-run",
    "stdbuf",
    "mpirun",
    "mpiexec",
    "srun",
    "torchrun",
    "accelerate",
    "launch",
    "deepspeed",
    "uv",
    "run",
    "poetry",
    "conda",
    "taskset",
    "nice",
}


@lru_cache(maxsize=100_000)
def _words(text: str) -> tuple[str, ...]:
    try:
        words = shlex.split(text, comments=False)
    except ValueError:
        words = text.split()
    return tuple(_word_key(w) for w in words)


def _word_key(word: str) -> str:
    base = word.rstrip("/").rsplit("/", 1)[-1] or word
    return "python" if _PY.match(base) else base


def entry_points(task: dict[str, Any] | None, verdict: dict[str, Any] | None = None) -> list[str]:
    """The task's entry points: task.yaml entry_points, else from its designated experiment;
    plus the verifier's targets named in the verdict."""
    task = task or {}
    points = list(task.get("entry_points") or [])
    if not points:
        prose = task.get("designated_experiment") or ""
        points += [m.strip() for m in _BACKTICKED.findall(prose)]
        points += [m for m in _SCRIPT.findall(prose) if m not in points]
    points += [t for t in verifier_targets(task.get("id"), verdict) if t not in points]
    return points


def verifier_targets(task_id: str | None, verdict: dict[str, Any] | None) -> list[str]:
    if not task_id or not verdict:
        return []
    found = []
    pattern = re.compile(rf"/{re.escape(task_id)}/([\w./-]+)")
    for check in (verdict.get("layer2") or {}).get("checks") or []:
        for rel in pattern.findall(str(check.get("detail", ""))):
            rel = rel.rstrip(".,:;")
            if rel.split("/")[0] in _NOT_TARGET or not _TARGET_EXT.search(rel.rsplit("/")[-1]):
                continue
            if rel not in found:
                found.append(rel)
    return found


@lru_cache(maxsize=100_000)
def _runs_entry_point(subcommand: str, points: tuple[tuple[str, ...], ...]) -> bool:
    text = canonical(subcommand)
    if _SHALLOW.search(text):
        return False
    words = _words(text)
    for point in points:
        if not point:
            continue
        size = len(point)
        for start in range(len(words) - size + 1):
            if words[start : start + size] == point:
                return True
            if not _may_precede(words[start]):
                break
    return False


def _may_precede(word: str) -> bool:
    return word in _LAUNCHERS or word.startswith("-") or word.isdigit()


def runs_entry_point(command: str, points: list[str]) -> bool:
    keys = tuple(_words(p) for p in points)
    return any(_runs_entry_point(s, keys) for s in split_subcommands(command))


def final_check(commands: list[str]) -> str | None:
    """The last command that is not writing the runbook (or None)."""
    for command in reversed(commands):
        subs = split_subcommands(command)
        if subs and not all(classify(s) == "Finish" for s in subs):
            return command
    return None


def judge(commands: list[str], points: list[str]) -> str:
    """'meaningful', 'shallow' or 'none' (no command before finishing)."""
    check = final_check(commands)
    if check is None:
        return "none"
    return "meaningful" if runs_entry_point(check, points) else "shallow"

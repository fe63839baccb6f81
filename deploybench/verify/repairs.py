"""The repository diff judged where no one declared it: a file the experiment executes that the
agent changed, and that no check of the verifier accepts, is either a compatibility repair or a
change of the computation.

A small edit (np.float to float, an import moved) and a stub (the file's first line prints the
documented output and exits) are both small, so the size of a change alone cannot tell them
apart. What can is the results: where the attempt's variant came from the operator's bank and
every result the real code gave for it was reproduced, the changed file computed what the pinned
one computes, on inputs drawn after the agent stopped. Only then is a small change judged a
repair: the pinned checks of its file pass, and the verdict lists it with the size of its diff.
Anywhere else (no bank, a result missed) nothing in the verdict tells a repair from a stub, and
the change fails as before, with the reason beside it.

The text of the changed file reaches the controller as the machine's copy named by its blob id
(experiment_lib.sh's `pinned`: pinned_copies/<blob>); the copy is used only if its own blob id is
that name, and the pinned text comes from the controller's source cache, never the machine."""

from __future__ import annotations

import difflib
import hashlib
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from deploybench.catalog import checks as checks_mod

COPIES = "pinned_copies"
# A repair changes at most this many lines, or a tenth of the pinned file's, whichever is more.
MIN_LINES = 8
SHARE = 0.10
# What the machine's copy may be: larger files are never read (experiment_lib.sh copies at most
# this much).
MAX_BYTES = 1 << 20


def blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def diff_size(pinned: str, now: str, most: int | None = None) -> tuple[int, int]:
    """(lines added, lines removed) from the pinned text to the changed one. Beyond `most`
    lines in all, a lower bound of them: the lines the two texts do not share as multisets
    (no diff is computed, so a crafted file cannot make the controller's judgment slow)."""
    old, new = pinned.splitlines(), now.splitlines()
    if most is not None:
        added = sum((Counter(new) - Counter(old)).values())
        removed = sum((Counter(old) - Counter(new)).values())
        if added + removed > most:
            return added, removed
    blocks = difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks()
    kept = sum(block.size for block in blocks)
    return len(new) - kept, len(old) - kept


def limit(pinned_lines: int) -> int:
    return max(MIN_LINES, int(pinned_lines * SHARE))


def _copy(logs: Path, blob: str) -> bytes | None:
    path = logs / COPIES / blob
    if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
        return None
    data = path.read_bytes()
    return data if blob_id(data) == blob else None


def _text(data: bytes | None) -> str | None:
    if data is None or b"\0" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _bank_reproduced(verdict: dict[str, Any]) -> bool:
    results = [c for c in verdict["layer2"]["checks"] if c["name"].startswith("variant_")]
    return verdict.get("bank") == "present" and bool(results) and all(c["passed"] for c in results)


def judge(
    verdict: dict[str, Any],
    spec: list[dict[str, Any]],
    logs: Path,
    pinned_text: Callable[[str], bytes | None],
) -> None:
    """Judge each changed, undeclared experiment file of the verdict in place (see the module's
    text); `pinned_text(blob)` gives the pinned commit's file from the controller's cache."""
    files = verdict["layer2"].get("experiment_files")
    undeclared = [c for c in (files or {}).get("changed", []) if not c["accepted"]]
    if not undeclared:
        return
    reproduced = _bank_reproduced(verdict)
    repaired = {}
    for change in undeclared:
        if not reproduced:
            change["judged"] = (
                "not a repair: without a bank's results reproduced, nothing tells a repaired "
                "computation from a stub"
            )
            continue
        old = _text(pinned_text(change["pinned"]))
        new = _text(_copy(logs, change["now"])) if change["now"] != "missing" else None
        if old is None or new is None:
            which = "the pinned file" if old is None else "the machine's copy of the file"
            change["judged"] = f"not a repair: {which} could not be read as text"
            continue
        lines = len(old.splitlines())
        added, removed = diff_size(old, new, most=limit(lines))
        change["diff"] = {"added": added, "removed": removed, "pinned_lines": lines}
        if added + removed > limit(lines):
            change["judged"] = (
                f"not a repair: {added + removed} lines changed, more than {limit(lines)}"
            )
            continue
        change["accepted"] = True
        change["judged"] = "compatibility repair: the bank's results were reproduced"
        repaired[change["path"]] = change
    if repaired:
        _rejudge_pinned(verdict, spec, logs, repaired)


def _rejudge_pinned(
    verdict: dict[str, Any], spec: list[dict[str, Any]], logs: Path, repaired: dict[str, Any]
) -> None:
    """The checks on pinned.txt again, with each repaired file's line read as its pinned blob."""
    lines = []
    for line in (checks_mod.read_collected(logs, checks_mod.PINNED_FILE) or "").splitlines():
        rel, _, _blob = line.rpartition(" ")
        lines.append(f"{rel} {repaired[rel]['pinned']}" if rel in repaired else line)
    with tempfile.TemporaryDirectory(prefix="deploybench-repair-") as tmp:
        (Path(tmp) / checks_mod.PINNED_FILE).write_text("\n".join(lines) + "\n")
        again = {
            c["name"]: checks_mod.judge(c, Path(tmp))
            for c in spec
            if c["file"] == checks_mod.PINNED_FILE
        }
    named = ", ".join(sorted(repaired))
    for i, result in enumerate(verdict["layer2"]["checks"]):
        redo = again.get(result["name"])
        if redo is not None and not result["passed"] and redo["passed"]:
            verdict["layer2"]["checks"][i] = {
                **redo,
                "detail": f"{redo['detail']} (with the judged compatibility repair of {named})",
            }
    checks = verdict["layer2"]["checks"]
    verdict["layer2"]["passed"] = bool(checks) and all(c["passed"] for c in checks)
    verdict["passed"] = (
        verdict["machine"]["passed"] and verdict["layer1"]["passed"] and verdict["layer2"]["passed"]
    )

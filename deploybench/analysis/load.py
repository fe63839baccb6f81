"""Read run folders (contract layout) into plain Python rows, checked at the edge.

Strict on malformed lines (one error naming file and line), lenient on missing files (an
infra_error attempt may lack them: they are counted and noted, never guessed)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache
from itertools import repeat
from operator import attrgetter
from pathlib import Path
from typing import Annotated, Any, Literal

import jsonschema
import msgspec

from deploybench import contracts, runfolder
from deploybench.errors import DeployBenchError

_EVENT_KINDS = frozenset(contracts.EVENT_KINDS)
_OPTIONAL_STR = ("command", "output", "path")
_OPTIONAL_INT = ("exit_code", "tokens_in", "tokens_out")


@dataclass
class Runs:
    results: list[dict[str, Any]]
    attempt_dirs: list[Path]
    # Column lists of every trajectory event; "a" is the row index in `results`.
    events: dict[str, list[Any]]
    verdicts: dict[int, dict[str, Any]]
    notes: list[str] = field(default_factory=list)


@cache
def _validator(name: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(getattr(contracts, name))


def _check(name: str, data: Any, what: str) -> None:
    """contracts.check with a validator built once: the compiled test below is the fast path,
    then jsonschema's is_valid, and only invalid data pays for the one-line message."""
    if _compiled(name)(data) or _validator(name).is_valid(data):
        return
    contracts.check(getattr(contracts, name), data, what)


_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "null": (type(None),),
}
_KNOWN = {"type", "enum", "required", "properties", "items", "minimum", "maximum", "minLength"}


@cache
def _compiled(name: str):
    return _compile(getattr(contracts, name))


def _compile(schema: dict[str, Any]):
    """A test built once from a contract's schema, for the keywords the contracts use. It is
    never more lenient than jsonschema (exact types: a bool is no integer, 1.0 is none either),
    so True is final and False only sends the data on to jsonschema; a keyword it does not know
    makes it always answer False. Ten times faster than jsonschema per results row or verdict."""
    if set(schema) - _KNOWN:
        return lambda value: False
    tests = []
    if "type" in schema:
        names = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        allowed = frozenset(t for n in names for t in _TYPES[n])
        tests.append(lambda v: type(v) in allowed)
    if "enum" in schema:
        options = [(type(e), e) for e in schema["enum"]]
        tests.append(lambda v: (type(v), v) in options)
    if "minimum" in schema:
        low = schema["minimum"]
        tests.append(lambda v: type(v) not in (int, float) or v >= low)
    if "maximum" in schema:
        high = schema["maximum"]
        tests.append(lambda v: type(v) not in (int, float) or v <= high)
    if "minLength" in schema:
        size = schema["minLength"]
        tests.append(lambda v: type(v) is not str or len(v) >= size)
    if "required" in schema:
        keys = tuple(schema["required"])
        tests.append(lambda v: type(v) is not dict or all(k in v for k in keys))
    if "properties" in schema:
        fields = [(k, _compile(sub)) for k, sub in schema["properties"].items()]
        tests.append(lambda v: type(v) is not dict or all(t(v[k]) for k, t in fields if k in v))
    if "items" in schema:
        item = _compile(schema["items"])
        tests.append(lambda v: type(v) is not list or all(map(item, v)))
    return lambda value: all(t(value) for t in tests)


def read_results(run_dir: Path, notes: list[str] | None = None) -> list[dict[str, Any]]:
    path = run_dir / runfolder.RESULTS
    if not path.is_file():
        raise DeployBenchError(f"{path}: no results.jsonl (is {run_dir} a run folder?)")
    # A crash mid-append leaves one line without its newline: read without it, and said so,
    # as every reader of a run folder does (deploybench/runfolder.py).
    lines = runfolder.complete_lines(path.read_text(), path, notes)
    rows, superseded = [], 0
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DeployBenchError(f"{path}:{number}: not JSON ({exc.msg})") from None
        _check("RESULT", row, f"{path}:{number}")
        if row.get("superseded"):  # rerun by run --resume --retry: its new row counts
            superseded += 1
            continue
        rows.append(row)
    if superseded and notes is not None:
        notes.append(
            f"{run_dir.name}: {superseded} row(s) superseded by a rerun (--retry), left out"
        )
    return rows


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _event_ok(e: Any) -> bool:
    """A fast equivalent of the TRAJECTORY_EVENT schema for the common case; on False the
    schema itself is run to produce the message."""
    if not isinstance(e, dict):
        return False
    step, t = e.get("step"), e.get("t")
    if not (_is_int(step) and step >= 0) or not isinstance(t, int | float) or isinstance(t, bool):
        return False
    if e.get("kind") not in _EVENT_KINDS:
        return False
    for key in _OPTIONAL_STR:
        v = e.get(key)
        if v is not None and not isinstance(v, str):
            return False
    for key in _OPTIONAL_INT:
        v = e.get(key)
        if v is not None and not _is_int(v):
            return False
    v = e.get("soft_timeout")
    if v is not None and not isinstance(v, bool):
        return False
    v = e.get("cost_usd")
    return v is None or (isinstance(v, int | float) and not isinstance(v, bool))


def read_trajectory(path: Path) -> list[dict[str, Any]]:
    events, text = _parse_trajectory(path)
    _check_events(events, text, path, _all_events_ok(events))
    return events


class _Event(msgspec.Struct):
    """A trajectory event as the fast check (_event_ok) accepts it, for msgspec to check while
    it parses, in C: it accepts no event that _event_ok refuses (a bool is no int, 1.0 is no
    int either; a float field takes an int, as _event_ok's number does), ignores other keys as
    _event_ok does, and gives the same values (a missing field is None)."""

    step: Annotated[int, msgspec.Meta(ge=0)]
    t: float
    kind: Literal[tuple(contracts.EVENT_KINDS)]  # type: ignore[valid-type]
    command: str | None = None
    exit_code: int | None = None
    soft_timeout: bool | None = None
    path: str | None = None
    output: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cost_usd: float | None = None


_DECODE_EVENTS = msgspec.json.Decoder(list[_Event])
_KEPT = ("t", "kind", "command", "exit_code", "soft_timeout", "path")
_GETTERS = [(key, attrgetter(key)) for key in _KEPT]


def _columns_fast(raw: bytes) -> dict[str, list[Any]] | None:
    """The kept columns of a trajectory file's bytes, parsed and checked by msgspec (several
    times faster than json.loads and a check per column); None when msgspec refuses the file.
    Then json reads the text as it always did, so anything msgspec is stricter about (NaN,
    integers past 64 bits, bytes that are not UTF-8, a blank line, t given as 5 rather than
    5.0 is fine but a bool is not) is decided, or named as the error, exactly as before."""
    try:
        events = _DECODE_EVENTS.decode(b"[" + raw.rstrip().replace(b"\n", b",") + b"]")
    except msgspec.DecodeError:
        return None
    cols = {key: list(map(get, events)) for key, get in _GETTERS}
    cols["soft_timeout"] = [v is True for v in cols["soft_timeout"]]
    return cols


def _parse_trajectory(path: Path, text: str | None = None) -> tuple[list[Any], str]:
    text = path.read_text() if text is None else text
    try:
        # One parse for the whole file is several times faster than one per line; a blank
        # line makes it fail, and the line-by-line path below reads such a file.
        return json.loads("[" + text.rstrip().replace("\n", ",") + "]"), text
    except json.JSONDecodeError:
        pass
    lines = text.splitlines()
    try:
        return json.loads("[" + ",".join(ln for ln in lines if ln.strip()) + "]"), text
    except json.JSONDecodeError:
        pass
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError as exc:
            raise DeployBenchError(f"{path}:{number}: not JSON ({exc.msg})") from None
    raise DeployBenchError(f"{path}: not JSON lines")


def _check_events(events: list[Any], text: str, path: Path, fast_ok: bool) -> None:
    """The schema's one-line error for the first bad event, unless the fast check passed."""
    if fast_ok:
        return
    lines = text.splitlines()
    for index, e in enumerate(events):
        if not _event_ok(e):
            number = _line_of(lines, index)
            contracts.check(contracts.TRAJECTORY_EVENT, e, f"{path}:{number}")
            # The fast check is stricter only where jsonschema accepts e.g. 1.0 as an
            # integer.


_NONE = type(None)
_STR, _INT_OR_NONE = {str, _NONE}, {int, _NONE}
_OTHER_FIELDS = (  # checked here; the columns load_runs keeps are checked as columns
    ("output", _STR),
    ("tokens_in", _INT_OR_NONE),
    ("tokens_out", _INT_OR_NONE),
    ("cost_usd", {int, float, _NONE}),
)


def _types_ok(values: list[Any], allowed: set[type]) -> bool:
    return not set(map(type, values)) - allowed


def _column(events: list[dict[str, Any]], key: str) -> list[Any]:
    # map over dict.get runs in C: twice as fast as a comprehension at 200,000 events
    return list(map(dict.get, events, repeat(key)))


def _columns(events: list[Any]) -> dict[str, list[Any]] | None:
    """The kept columns of one trajectory, checked as whole columns (the set of the types met,
    exact, so a bool is not an int): the same verdict as _event_ok on every event, many times
    faster at 200,000 events. None when any event fails; _check_events then names it."""
    if not _types_ok(events, {dict}):
        return None
    steps = _column(events, "step")
    if not _types_ok(steps, {int}) or (steps and min(steps) < 0):
        return None
    cols = {
        key: _column(events, key)
        for key in ("t", "kind", "command", "exit_code", "soft_timeout", "path")
    }
    try:
        if set(cols["kind"]) - _EVENT_KINDS:
            return None
    except TypeError:  # an unhashable kind
        return None
    if not (
        _types_ok(cols["t"], {int, float})
        and _types_ok(cols["command"], _STR)
        and _types_ok(cols["path"], _STR)
        and _types_ok(cols["exit_code"], _INT_OR_NONE)
        and _types_ok(cols["soft_timeout"], {bool, _NONE})
    ):
        return None
    if not all(_types_ok(_column(events, k), ok) for k, ok in _OTHER_FIELDS):
        return None
    cols["soft_timeout"] = [v is True for v in cols["soft_timeout"]]
    return cols


def _all_events_ok(events: list[Any]) -> bool:
    return _columns(events) is not None


def _line_of(lines: list[str], index: int) -> int:
    seen = -1
    for number, line in enumerate(lines, start=1):
        if line.strip():
            seen += 1
            if seen == index:
                return number
    return index + 1


def read_verdict(path: Path, text: str | None = None) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text() if text is None else text)
    except json.JSONDecodeError as exc:
        raise DeployBenchError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    _check("VERDICT", data, str(path))
    return data


def _read_if_file(path: Path) -> str | None:
    """The text of a file, None when there is no file there: one open instead of a stat and
    an open (two system calls per file, thousands of files per report)."""
    try:
        return path.read_text()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _read_bytes_if_file(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None


def _scaffold_packages(folder: Path, row: dict, packaged: dict) -> None:
    """The system packages a scaffold installed on the attempt's machine (its spec's
    system_packages, recorded in scaffold.json): the report marks those agents' rows."""
    text = _read_if_file(folder / runfolder.SCAFFOLD)
    try:
        packages = (json.loads(text) if text else {}).get("system_packages") or []
    except (ValueError, AttributeError):
        return
    if packages:
        seen, count = packaged.get(row["agent"], (set(), 0))
        packaged[row["agent"]] = (seen | {str(p) for p in packages}, count + 1)


def _provider_errors(run_dir: Path) -> int:
    """Tries the run's model gateway ended as provider errors (infra_errors.jsonl)."""
    text = _read_if_file(run_dir / runfolder.INFRA_ERRORS)
    count = 0
    for line in (text or "").splitlines():
        try:
            count += str(json.loads(line).get("reason", "")).startswith("provider_error")
        except (ValueError, AttributeError):
            continue
    return count


def _provenance(run_dirs: list[Path], allow_mixed: bool) -> list[str]:
    """The report's header lines of what produced each run (run.json's provenance), and the
    check that pooled runs judged each task with the same inputs."""
    lines, seen = [], {}
    for run_dir in run_dirs:
        try:
            meta = runfolder.read_run_meta(run_dir)
        except DeployBenchError:
            continue
        prov = meta.get("provenance") if isinstance(meta, dict) else None
        if not isinstance(prov, dict):
            lines.append(f"Run {run_dir.name}: made by a harness that recorded no provenance")
            continue
        h = prov.get("harness") or {}
        dirty = " with uncommitted changes" if h.get("dirty") else ""
        image = prov.get("image") or {}
        shown = ", ".join(f"{k} {v}" for k, v in image.items() if k != "image")
        lines.append(
            f"Run {run_dir.name}: deploybench {h.get('version')} at commit "
            f"{str(h.get('commit'))[:12]}{dirty}; image "
            + (f"{image.get('image')} ({shown})" if image else "not recorded")
        )
        for task_id, digests in (prov.get("tasks") or {}).items():
            seen.setdefault(task_id, {})[run_dir.name] = (digests or {}).get("all")
    differ = sorted(t for t, by_run in seen.items() if len(set(by_run.values())) > 1)
    if differ and not allow_mixed:
        raise DeployBenchError(
            f"the runs judged {len(differ)} task(s) with different task files, reference "
            f"setups or verifiers: {', '.join(differ[:10])}; report them apart, or pass "
            "--allow-mixed-catalogs"
        )
    if differ:
        lines.append(
            f"Pooled although {len(differ)} task(s) had different inputs between runs: "
            + ", ".join(differ[:10])
        )
    return lines


def load_runs(run_dirs: list[Path], allow_mixed: bool = False) -> Runs:
    results: list[dict[str, Any]] = []
    dirs: list[Path] = []
    cols: dict[str, list[Any]] = {
        k: [] for k in ("a", "t", "kind", "command", "exit_code", "soft_timeout", "path")
    }
    verdicts: dict[int, dict[str, Any]] = {}
    missing: dict[str, int] = {}
    packaged: dict[str, tuple[set[str], int]] = {}
    notes: list[str] = []
    disagree = 0
    provider_errors = 0
    notes += _provenance([Path(r) for r in run_dirs], allow_mixed)
    for run_dir in run_dirs:
        run_dir = Path(run_dir)
        provider_errors += _provider_errors(run_dir)
        for row in read_results(run_dir, notes):
            index = len(results)
            results.append(row)
            folder = runfolder.attempt_of(run_dir, row)
            dirs.append(folder)
            trajectory = folder / runfolder.TRAJECTORY
            raw = _read_bytes_if_file(trajectory)
            if raw is not None:
                mine = _columns_fast(raw)
                if mine is None:  # refused by msgspec: the full path, json and its checks
                    events, text = _parse_trajectory(trajectory)
                    mine = _columns(events)
                    _check_events(events, text, trajectory, mine is not None)
                if mine is None:  # valid by the schema, not by the fast check (e.g. 1.0)
                    mine = {
                        "t": [e["t"] for e in events],
                        "kind": [e["kind"] for e in events],
                        "command": [e.get("command") for e in events],
                        "exit_code": [e.get("exit_code") for e in events],
                        "soft_timeout": [e.get("soft_timeout") is True for e in events],
                        "path": [e.get("path") for e in events],
                    }
                cols["a"] += [index] * len(mine["t"])
                for key, values in mine.items():
                    cols[key] += values
            elif row["status"] == "completed":
                missing[runfolder.TRAJECTORY] = missing.get(runfolder.TRAJECTORY, 0) + 1
            verdict = folder / runfolder.VERDICT
            text = _read_if_file(verdict)
            if text is not None:
                verdicts[index] = read_verdict(verdict, text)
                if row["passed"] is not None and verdicts[index]["passed"] != row["passed"]:
                    disagree += 1
            elif row["status"] == "completed":
                missing[runfolder.VERDICT] = missing.get(runfolder.VERDICT, 0) + 1
            _scaffold_packages(folder, row, packaged)
    for agent, (packages, count) in sorted(packaged.items()):
        notes.append(
            f"{agent}: {count} attempt(s) on a machine its scaffold changed with system "
            f"packages ({', '.join(sorted(packages))}): not a bare machine"
        )
    notes += [
        f"{count} completed attempt(s) have no {name}; they count from results.jsonl alone"
        for name, count in sorted(missing.items())
    ]
    if disagree:
        notes.append(
            f"{disagree} attempt(s) where results.jsonl and verdict.json disagree on passed; "
            "the tables follow results.jsonl"
        )
    if provider_errors:
        tries = (
            "1 try ended by a provider error"
            if provider_errors == 1
            else (f"{provider_errors} tries ended by provider errors")
        )
        notes.append(
            f"{tries} (the model provider failed the call, not the model): counted as "
            "infrastructure, tried again on a fresh machine, never scored"
        )
    infra = sum(1 for r in results if r["status"] == "infra_error")
    if infra:
        notes.append(f"{infra} attempt(s) ended in infra_error and are left out of every table")
    return Runs(results, dirs, cols, verdicts, notes)

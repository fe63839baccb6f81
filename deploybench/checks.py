"""Layer 2 checks as data: verifiers/<id>/checks.yaml, judged on the controller.

The machine-side script (experiment.sh) only runs the light experiment and collects raw files
into the log folder; every judgment is made here from those files, so nothing the agent left on
the machine (a shadow python3, a fake `grep`) can write a passing check. checks.yaml never goes
to the machine. Its schema is CHECKS_SCHEMA; each check names one collected file and says what
must hold of it:

  exists      the file was collected (and is not empty unless `empty_ok`)
  contains    a regex `pattern` matches a line (`absent: true`: no line matches)
  value       a value read from the file, by `json` (a dotted key) or by `pattern` (its first
              group, last match wins), compared with `equals`, `min`/`max` (inclusive),
              `above`/`below` (exclusive)
  http        a raw HTTP response: its status is one of `status`; optionally a JSON `json` key of
              the body `equals` a value
  same        the file's bytes equal those of `other`
  values      lines "N VALUE" of an output compared with `expected` {N: number | "invalid"}
              (a line counts as invalid when its value starts with "invalid"), within
              `tolerance` (relative, default 1e-6)
  gpu_used    the file (nvidia-smi --query-compute-apps output) lists at least one process
  array_shape a numpy .npz archive holds `array` (a .npy member) of dtype kind float and shape
              `shape` (the .npy header is read here; nothing is loaded or unpickled)

GPU evidence: a check of kind gpu_used, or any check marked `gpu: true`, is evidence that the
run used a GPU (`is_gpu_evidence`). Every verdict judges it like any other check; only the CPU
validation of a GPU task (docs/verification.md) may leave such checks out, and says so.
"""

from __future__ import annotations

import ast
import contextlib
import json
import math
import re
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from deploybench.errors import DeployBenchError

MAX_READ = 8 * 1024 * 1024  # a collected file is judged on its first 8 MB
MAX_DETAIL = 480

KINDS = ["exists", "contains", "value", "http", "same", "values", "gpu_used", "array_shape"]
_BOUNDS = ("equals", "min", "max", "above", "below")
_SCALAR = {"type": ["string", "number", "boolean", "null"]}
_BASE = {
    "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
    "kind": {},
    # A path inside the log folder: no "..", no leading "/".
    "file": {
        "type": "string",
        "pattern": r"^(?!(.*/)?\.\.?(/|$))[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$",
    },
    "about": {"type": "string"},
    # Only `true`: a check is GPU evidence or says nothing about it (gpu_used always is).
    "gpu": {"const": True},
}


def _kind(name: str, props: dict[str, Any], required: list[str] | None = None, **extra: Any):
    return {
        "if": {"properties": {"kind": {"const": name}}},
        "then": {
            "properties": {**_BASE, **props},
            "required": ["name", "kind", "file", *(required or [])],
            "additionalProperties": False,
            **extra,
        },
    }


CHECKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["checks"],
    "additionalProperties": False,
    "properties": {
        "checks": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "kind", "file"],
                "properties": {"kind": {"enum": KINDS}},
                "allOf": [
                    _kind("exists", {"empty_ok": {"type": "boolean"}}),
                    _kind(
                        "contains",
                        {"pattern": {"type": "string"}, "absent": {"type": "boolean"}},
                        ["pattern"],
                    ),
                    _kind(
                        "value",
                        {
                            "json": {"type": "string"},
                            "pattern": {"type": "string"},
                            "equals": _SCALAR,
                            "min": {"type": "number"},
                            "max": {"type": "number"},
                            "above": {"type": "number"},
                            "below": {"type": "number"},
                        },
                        oneOf=[{"required": ["json"]}, {"required": ["pattern"]}],
                        anyOf=[{"required": [k]} for k in _BOUNDS],
                    ),
                    _kind(
                        "http",
                        {
                            "status": {
                                "type": "array",
                                "items": {"type": "integer"},
                                "minItems": 1,
                            },
                            "json": {"type": "string"},
                            "equals": _SCALAR,
                        },
                        ["status"],
                        dependentRequired={"json": ["equals"], "equals": ["json"]},
                    ),
                    _kind("same", {"other": _BASE["file"]}, ["other"]),
                    _kind(
                        "values",
                        {
                            "expected": {
                                "type": "object",
                                "minProperties": 1,
                                "patternProperties": {
                                    "^[0-9]+$": {
                                        "anyOf": [{"type": "number"}, {"const": "invalid"}]
                                    }
                                },
                                "additionalProperties": False,
                            },
                            "tolerance": {"type": "number", "exclusiveMinimum": 0},
                        },
                        ["expected"],
                    ),
                    _kind("gpu_used", {}),
                    _kind(
                        "array_shape",
                        {
                            "array": {"type": "string", "pattern": "^[A-Za-z0-9_]+$"},
                            "shape": {"type": "array", "items": {"type": "integer"}},
                        },
                        ["array", "shape"],
                    ),
                ],
            },
        }
    },
}


def load(path: Path | str) -> list[dict[str, Any]]:
    """The checks of a checks.yaml, validated against CHECKS_SCHEMA (one-line errors)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise DeployBenchError(f"{path}: not readable: {exc.strerror}") from None
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        reason = str(exc).splitlines()[0]
        raise DeployBenchError(f"{path}: not valid YAML: {reason}") from None
    validator = jsonschema.Draft202012Validator(CHECKS_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DeployBenchError(f"{path}: field {field}: {error.message}")
    names = [c["name"] for c in data["checks"]]
    for i, check in enumerate(data["checks"]):
        if names.index(check["name"]) != i:
            raise DeployBenchError(f"{path}: field checks/{i}/name: {check['name']!r} used twice")
        for key in ("pattern",):
            if key in check:
                try:
                    re.compile(check[key])
                except re.error as exc:
                    raise DeployBenchError(f"{path}: field checks/{i}/{key}: {exc}") from None
    return data["checks"]


def is_gpu_evidence(check: dict[str, Any]) -> bool:
    """Whether the check proves GPU use: what the CPU validation of a GPU task leaves out."""
    return check["kind"] == "gpu_used" or check.get("gpu") is True


def _read(log_dir: Path, name: str) -> str | None:
    path = (log_dir / name).resolve()
    if not path.is_relative_to(log_dir.resolve()) or not path.is_file():
        return None
    with open(path, "rb") as f:
        return f.read(MAX_READ).decode("utf-8", errors="replace")


def _dig(data: Any, dotted: str) -> Any:
    for key in dotted.split("."):
        if isinstance(data, dict) and key in data:
            data = data[key]
        elif isinstance(data, list) and key.isdigit() and int(key) < len(data):
            data = data[int(key)]
        else:
            raise KeyError(dotted)
    return data


def _compare(check: dict[str, Any], value: Any) -> list[str]:
    problems = []
    if "equals" in check and value != check["equals"]:
        problems.append(f"{value!r} != {check['equals']!r}")
    bounds = [k for k in ("min", "max", "above", "below") if k in check]
    if bounds:
        try:
            number = float(value)
        except (TypeError, ValueError):
            return [*problems, f"{value!r} is not a number"]
        if not math.isfinite(number):
            return [*problems, f"{value!r} is not finite"]
        for key, ok in (
            ("min", lambda b: number >= b),
            ("max", lambda b: number <= b),
            ("above", lambda b: number > b),
            ("below", lambda b: number < b),
        ):
            if key in check and not ok(check[key]):
                problems.append(f"{number:g} not {key} {check[key]:g}")
    return problems


def _value(check: dict[str, Any], text: str) -> tuple[bool, str]:
    if "json" in check:
        try:
            value = _dig(json.loads(text), check["json"])
        except (ValueError, KeyError):
            return False, f"{check['file']}: no JSON value at {check['json']}"
        where = f"{check['file']} {check['json']}"
    else:
        found = re.findall(check["pattern"], text, re.MULTILINE)
        if not found:
            return False, f"{check['file']}: no match of {check['pattern']!r}"
        value = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
        if "equals" in check and not isinstance(check["equals"], str):
            with contextlib.suppress(ValueError):
                value = json.loads(value)
        where = check["file"]
    problems = _compare(check, value)
    return not problems, f"{where}: {'; '.join(problems) or f'{value!r} as required'}"


def _http(check: dict[str, Any], text: str) -> tuple[bool, str]:
    head, _, body = text.replace("\r\n", "\n").partition("\n\n")
    m = re.match(r"HTTP/\d(?:\.\d)? (\d{3})", head)
    if not m:
        return False, f"{check['file']}: no HTTP response ({text.strip()[:120]!r})"
    status = int(m.group(1))
    if status not in check["status"]:
        return False, f"{check['file']}: status {status}, want {check['status']}"
    if "json" in check:
        try:
            value = _dig(json.loads(body), check["json"])
        except (ValueError, KeyError):
            return False, f"{check['file']}: status {status}, body has no JSON {check['json']}"
        if value != check["equals"]:
            return False, f"{check['file']}: {check['json']} is {value!r}, want {check['equals']!r}"
    return True, f"{check['file']}: status {status}"


def _values(check: dict[str, Any], text: str) -> tuple[bool, str]:
    got = {}
    for line in text.splitlines():
        parts = line.split(None, 1)
        if len(parts) == 2 and parts[0].isdigit():
            got[int(parts[0])] = parts[1].strip()
    tolerance = check.get("tolerance", 1e-6)
    bad = []
    for key, want in sorted(check["expected"].items(), key=lambda kv: int(kv[0])):
        have = got.get(int(key))
        if want == "invalid":
            if not (have or "").startswith("invalid"):
                bad.append(f"line {key}: want 'invalid: ...', got {have!r}")
            continue
        try:
            ok = abs(float(have) - want) <= tolerance * max(1.0, abs(want))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            bad.append(f"line {key}: want {want:.6f}, got {have!r}")
    if bad:
        return False, "; ".join(bad)
    return True, f"all {len(check['expected'])} lines as expected"


def _npy_header(data: bytes) -> dict[str, Any]:
    if data[:6] != b"\x93NUMPY":
        raise ValueError("not a .npy array")
    if data[6] == 1:
        size, start = int.from_bytes(data[8:10], "little"), 10
    else:
        size, start = int.from_bytes(data[8:12], "little"), 12
    header = ast.literal_eval(data[start : start + size].decode("latin1"))
    if not isinstance(header, dict):
        raise ValueError("malformed .npy header")
    return header


def _array_shape(check: dict[str, Any], log_dir: Path) -> tuple[bool, str]:
    path = (log_dir / check["file"]).resolve()
    member = f"{check['array']}.npy"
    try:
        if not path.is_relative_to(log_dir.resolve()) or path.stat().st_size > MAX_READ:
            raise ValueError("not a collected file")
        with zipfile.ZipFile(path) as archive, archive.open(member) as f:
            header = _npy_header(f.read(4096))
    except (OSError, KeyError, ValueError, SyntaxError, zipfile.BadZipFile) as exc:
        return False, f"{check['file']}: no readable {member} ({type(exc).__name__})"
    shape = list(header.get("shape", ()))
    descr = str(header.get("descr", ""))
    ok = shape == check["shape"] and descr[1:2] == "f"
    return ok, f"{check['file']}: {member} {descr} shape {shape}, want float {check['shape']}"


def judge(check: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    """One check over the collected files: {name, passed, detail}."""
    text = _read(log_dir, check["file"])
    kind = check["kind"]
    if text is not None and kind == "array_shape":
        passed, detail = _array_shape(check, log_dir)
    elif text is None:
        passed, detail = False, f"{check['file']} was not collected"
    elif kind == "exists":
        passed = bool(text) or check.get("empty_ok", False)
        detail = f"{check['file']} collected" + ("" if passed else " but empty")
    elif kind == "contains":
        hit = re.search(check["pattern"], text, re.MULTILINE)
        passed = (hit is None) if check.get("absent") else (hit is not None)
        shown = repr(hit.group(0)[:120]) if hit else "no line"
        detail = f"{check['file']}: {shown} matches {check['pattern']!r}"
    elif kind == "value":
        passed, detail = _value(check, text)
    elif kind == "http":
        passed, detail = _http(check, text)
    elif kind == "same":
        other = _read(log_dir, check["other"])
        passed = other is not None and other == text
        detail = f"{check['file']} {'equals' if passed else 'differs from'} {check['other']}"
    elif kind == "values":
        passed, detail = _values(check, text)
    else:  # gpu_used
        rows = [r for r in text.splitlines() if r.strip() and not r.startswith(("pid", "No "))]
        passed = bool(rows)
        detail = f"{len(rows)} process(es) used the GPU"
    if check.get("about"):
        detail = f"{check['about']}: {detail}"
    return {"name": check["name"], "passed": bool(passed), "detail": detail[:MAX_DETAIL]}


def judge_all(checks: list[dict[str, Any]], log_dir: Path | str) -> list[dict[str, Any]]:
    return [judge(check, Path(log_dir)) for check in checks]

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
  elf_symbols the file is a whole ELF binary (read here by a small reader of its headers; it is
              never run) that defines a function symbol matching each regex of `defined`, holds
              each of `strings` NUL-terminated in read-only allocated data, has no symbol
              (defined or imported, in .symtab or .dynsym) matching a regex of `absent`, and
              loads only libraries matching `needed` through a program interpreter matching
              `interpreter` (each when given)
  linear_model_score
              a numpy .npz checkpoint of a linear soft-max classifier (`weights` [k, c], `bias`
              [c], float) classifies the held-out `rows` [f1..fk, label] of checks.yaml, which
              the machine never saw, with accuracy >= `min_accuracy`: features standardised
              with `mean`/`std` (those of the training rows), then, when `transform_file` is
              given, moved into the attempt's space by its `columns:`/`signs:`/`labels:` lines
              (loaded with numpy, allow_pickle=False; computed here, never read from the machine)
  numpy_draw  the numbers on the last line matching `pattern` (its first group, separated by
              blanks) equal numpy.random.RandomState(seed).standard_normal(`count`) computed
              here, the seed read from `seed_file` by `seed_pattern`; within `tolerance`
              (relative, default 1e-12). The legacy RandomState's stream is frozen (NEP 19), so
              any real numpy prints the same numbers

GPU evidence: a check of kind gpu_used, or any check marked `gpu: true`, is evidence that the
run used a GPU (`is_gpu_evidence`). Every verdict judges it like any other check; only the CPU
validation of a GPU task (docs/verification.md) may leave such checks out, and says so.
"""

from __future__ import annotations

import ast
import contextlib
import io
import json
import math
import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from deploybench.errors import DeployBenchError

MAX_READ = 8 * 1024 * 1024  # a collected file is judged on its first 8 MB
MAX_DETAIL = 480

KINDS = [
    "exists",
    "contains",
    "value",
    "http",
    "same",
    "values",
    "gpu_used",
    "array_shape",
    "elf_symbols",
    "linear_model_score",
    "numpy_draw",
]
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
    # The fakes this check defeats (docs/verification.md): what the verifier's tests play
    # against it, so a published verifier states which fake each of its rules stops.
    "defeats": {"type": "array", "items": {"enum": None}, "minItems": 1, "uniqueItems": True},
}
# The fakes an agent that has read verifiers/ could leave instead of the real artifact.
FAKES = (
    "echo",  # prints back what the verifier drew (a seed, a nonce, a size)
    "constant",  # prints a value the public verifier or paper shows
    "stub_interpreter",  # an interpreter (python, java, Rscript) that is a script or a wrapper
    "stub_binary",  # a tiny ELF, or a renamed program, that launches a script
    "plain_shell",  # the pipeline run by plain shell or a system tool instead of the artifact
    "replay",  # logs or outputs of an earlier real run, copied in
)
_BASE["defeats"]["items"]["enum"] = list(FAKES)
_REGEXES = {"type": "array", "items": {"type": "string"}, "minItems": 1}
_NUMBERS = {"type": "array", "items": {"type": "number"}, "minItems": 1}
_ARRAY_NAME = {"type": "string", "pattern": "^[A-Za-z0-9_]+$"}


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


# A variant input's name becomes the experiment's VARIANT_<NAME> variable; a value is a number
# or a short word (no quoting reaches the machine's shell: see verify/bank.py).
_INPUT_NAME = "^[a-z][a-z0-9_]{0,30}$"
_WORD = {"type": "string", "pattern": "^[A-Za-z0-9_.:+-]{1,64}$"}
VARIANTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["about", "inputs", "results"],
    "additionalProperties": False,
    "properties": {
        "about": {"type": "string", "minLength": 20},
        "inputs": {
            "type": "object",
            "minProperties": 1,
            "propertyNames": {"pattern": _INPUT_NAME},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "maxProperties": 1,
                "properties": {
                    "int": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                    "float": {
                        "type": "array",
                        "items": {"type": "number"},
                        "minItems": 2,
                        "maxItems": 2,
                    },
                    "choice": {
                        "type": "array",
                        "minItems": 2,
                        "uniqueItems": True,
                        "items": {"anyOf": [{"type": "number"}, _WORD]},
                    },
                },
            },
        },
        # Each result: a value the real code produced for the drawn inputs, read from a
        # collected file by the pattern's first group; numbers compared within a tolerance
        # (the larger of abs, rel times the recorded value, and 3 times the spread measured
        # over repeated real runs), anything else exactly.
        "results": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "required": ["name", "file", "pattern"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]*$"},
                    "file": _BASE["file"],
                    "pattern": {"type": "string"},
                    "about": {"type": "string"},
                    "abs": {"type": "number", "minimum": 0},
                    "rel": {"type": "number", "minimum": 0},
                    "text": {"const": True},
                    "defeats": _BASE["defeats"],
                },
            },
        },
        # How many of a bank's variants are run twice when it is made: their spread widens
        # the tolerances (the default is 2).
        "repeats": {"type": "integer", "minimum": 1, "maximum": 10},
    },
}

# What the experiment draws on the machine itself (beyond its bank variants): where the
# collected files record each drawn value (`file`, `pattern`'s first group), so that a check can
# hold the program's output to it (`{drawn:NAME}` in a `contains` or `value` pattern stands for
# the value, escaped); or why a drawn value carries no weight (`not_load_bearing`); or, for a
# verifier that draws nothing of its own, why (`none`). tests/test_verifier_sweep.py changes each
# recorded value in the task's recorded pass state and wants a check to fail.
_DRAWN_INPUT = {
    "type": "object",
    "required": ["name", "about"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": _INPUT_NAME},
        "about": {"type": "string", "minLength": 10},
        "file": _BASE["file"],
        "pattern": {"type": "string"},
        "not_load_bearing": {"type": "string", "minLength": 20},
    },
    "oneOf": [{"required": ["file", "pattern"]}, {"required": ["not_load_bearing"]}],
}
HIDDEN_INPUTS_SCHEMA: dict[str, Any] = {
    "oneOf": [
        {"type": "array", "minItems": 1, "items": _DRAWN_INPUT},
        {
            "type": "object",
            "required": ["none"],
            "additionalProperties": False,
            "properties": {"none": {"type": "string", "minLength": 20}},
        },
    ]
}
DRAWN_REF = re.compile(r"\{drawn:([a-z][a-z0-9_]*)\}")
# The kinds of fake every verifier's tests must play (issue 33's Must show): for each, the
# tests hold a fake of that kind, or checks.yaml says here why it cannot apply to this task.
KINDS_PLAYED = ("stub_binary", "stub_interpreter", "echo", "constant")
# kind -> why that fake cannot apply to this task (a sentence the tests keep true: an echo
# where the verifier draws nothing, a stub interpreter where the experiment runs none).
FAKES_NOT_APPLICABLE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "propertyNames": {"enum": list(KINDS_PLAYED)},
    "additionalProperties": {"type": "string", "minLength": 30},
}

CHECKS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["checks"],
    "additionalProperties": False,
    "properties": {
        "variants": VARIANTS_SCHEMA,
        "hidden_inputs": HIDDEN_INPUTS_SCHEMA,
        # A verifier whose experiment pins no file it executes (pinned.txt: experiment_lib.sh's
        # `pinned`) says here why, and what judges the repository's files instead.
        "repository_diff": {
            "type": "object",
            "required": ["not_pinned"],
            "additionalProperties": False,
            "properties": {"not_pinned": {"type": "string", "minLength": 20}},
        },
        "fakes_not_applicable": FAKES_NOT_APPLICABLE_SCHEMA,
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
                    _kind(
                        "elf_symbols",
                        {
                            "defined": _REGEXES,
                            "absent": _REGEXES,
                            "strings": {
                                "type": "array",
                                "items": {"type": "string", "minLength": 4},
                                "minItems": 1,
                            },
                            "needed": {"type": "string"},
                            "interpreter": {"type": "string"},
                        },
                        anyOf=[{"required": ["defined"]}, {"required": ["strings"]}],
                    ),
                    _kind(
                        "linear_model_score",
                        {
                            "weights": _ARRAY_NAME,
                            "bias": _ARRAY_NAME,
                            "rows": {
                                "type": "array",
                                "minItems": 1,
                                "items": {
                                    "type": "array",
                                    "minItems": 2,
                                    "items": {"type": "number"},
                                },
                            },
                            "mean": _NUMBERS,
                            "std": _NUMBERS,
                            "transform_file": _BASE["file"],
                            "min_accuracy": {"type": "number", "minimum": 0, "maximum": 1},
                        },
                        ["weights", "bias", "rows", "mean", "std", "min_accuracy"],
                    ),
                    _kind(
                        "numpy_draw",
                        {
                            "pattern": {"type": "string"},
                            "seed_file": _BASE["file"],
                            "seed_pattern": {"type": "string"},
                            "count": {"type": "integer", "minimum": 1, "maximum": 1000},
                            "tolerance": {"type": "number", "exclusiveMinimum": 0},
                        },
                        ["pattern", "seed_file", "seed_pattern", "count"],
                    ),
                ],
            },
        },
    },
}


def load(path: Path | str) -> list[dict[str, Any]]:
    """The checks of a checks.yaml, validated against CHECKS_SCHEMA (one-line errors)."""
    return _load_file(Path(path))["checks"]


def load_variants(path: Path | str) -> dict[str, Any] | None:
    """The `variants` of a checks.yaml (what a variant bank of the task holds), validated; None
    when the task's verifier draws no variants."""
    return _load_file(Path(path)).get("variants")


def load_fakes_not_applicable(path: Path | str) -> dict[str, str]:
    """The `fakes_not_applicable` of a checks.yaml (kind -> why its tests play no fake of that
    kind), validated; empty when it declares none."""
    return dict(_load_file(Path(path)).get("fakes_not_applicable") or {})


def _load_file(path: Path) -> dict[str, Any]:
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
        regex_keys = ["pattern", "seed_pattern"]
        if check["kind"] == "elf_symbols":  # (contains' `absent` is a flag)
            regex_keys += ["needed", "interpreter", "defined", "absent"]
        for key in regex_keys:
            for j, regex in enumerate(_as_list(check.get(key))):
                where = f"{key}/{j}" if isinstance(check[key], list) else key
                try:
                    re.compile(regex)
                except re.error as exc:
                    raise DeployBenchError(f"{path}: field checks/{i}/{where}: {exc}") from None
        if check["kind"] == "linear_model_score":
            width = len(check["mean"])
            if len(check["std"]) != width or any(len(r) != width + 1 for r in check["rows"]):
                raise DeployBenchError(
                    f"{path}: field checks/{i}: mean, std and every row (features, label) "
                    f"must agree on {width} features"
                )
    _resolve_drawn(path, data)
    variants = data.get("variants") or {}
    results = [r["name"] for r in variants.get("results", [])]
    for i, result in enumerate(variants.get("results", [])):
        if results.index(result["name"]) != i:
            raise DeployBenchError(f"{path}: field variants/results/{i}/name: used twice")
        try:
            if re.compile(result["pattern"]).groups < 1:
                raise DeployBenchError(
                    f"{path}: field variants/results/{i}/pattern: needs a group (the value)"
                )
        except re.error as exc:
            raise DeployBenchError(f"{path}: field variants/results/{i}/pattern: {exc}") from None
    for name, space in variants.get("inputs", {}).items():
        bounds = space.get("int") or space.get("float")
        if bounds and bounds[0] >= bounds[1]:
            raise DeployBenchError(f"{path}: field variants/inputs/{name}: empty range {bounds}")
    return data


def drawn_inputs(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The declared drawn inputs a check may refer to: name -> {file, pattern}."""
    declared = data.get("hidden_inputs")
    if not isinstance(declared, list):
        return {}
    return {d["name"]: d for d in declared if "file" in d}


def _resolve_drawn(path: Path, data: dict[str, Any]) -> None:
    """Each `{drawn:NAME}` of a check's pattern names a declared, recorded drawn input; the
    check gets `drawn_inputs` (name -> where it is recorded) for judge()."""
    declared = data.get("hidden_inputs")
    names = [d["name"] for d in declared] if isinstance(declared, list) else []
    for i, name in enumerate(names):
        if names.index(name) != i:
            raise DeployBenchError(f"{path}: field hidden_inputs/{i}/name: {name!r} used twice")
    for i, d in enumerate(declared if isinstance(declared, list) else []):
        if "pattern" in d:
            try:
                groups = re.compile(d["pattern"]).groups
            except re.error as exc:
                raise DeployBenchError(f"{path}: field hidden_inputs/{i}/pattern: {exc}") from None
            if groups < 1:
                raise DeployBenchError(
                    f"{path}: field hidden_inputs/{i}/pattern: needs a group (the value)"
                )
    recorded = drawn_inputs(data)
    for i, check in enumerate(data["checks"]):
        refs = DRAWN_REF.findall(check.get("pattern", "") if check["kind"] != "elf_symbols" else "")
        if not refs:
            continue
        if check["kind"] not in ("contains", "value"):
            raise DeployBenchError(
                f"{path}: field checks/{i}/pattern: {{drawn:}} only in contains or value"
            )
        for name in refs:
            if name not in recorded:
                raise DeployBenchError(
                    f"{path}: field checks/{i}/pattern: {{drawn:{name}}} not declared"
                )
        check["drawn_inputs"] = {n: recorded[n] for n in refs}


def _with_drawn(check: dict[str, Any], log_dir: Path) -> tuple[dict[str, Any] | None, str]:
    """The check with each `{drawn:NAME}` replaced by the value the experiment recorded (regex-
    escaped); None and why when a value was not recorded."""
    pattern = check["pattern"]
    for name, where in check["drawn_inputs"].items():
        text = _read(log_dir, where["file"])
        found = re.findall(where["pattern"], text or "", re.MULTILINE)
        if not found:
            return None, f"the drawn {name} is not recorded in {where['file']}"
        value = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
        pattern = pattern.replace(f"{{drawn:{name}}}", re.escape(value))
    return {**check, "pattern": pattern}, ""


PINNED_FILE = "pinned.txt"  # experiment_lib.sh's `pinned`: "REL BLOB" per executed file
_BLOB = r"(?:[0-9a-f]{40}|missing)"
_PINNED_LINE = re.compile(rf"\^((?:[^$\\\s(]|\\.)+) ({_BLOB}|\({_BLOB}(?:\|{_BLOB})+\))\$")


def pinned_blobs(checks: list[dict[str, Any]]) -> dict[str, list[str]]:
    """The repository files the experiment executes and the blob ids their checks on
    pinned.txt accept (each `^REL BLOB$` of their patterns): the pinned commit's first, then
    any declared compatibility repair (`^REL (COMMIT_BLOB|REPAIRED_BLOB)$`, as the reference's
    port of a file leaves it)."""
    blobs = {}
    for check in checks:
        if check["file"] == PINNED_FILE and check["kind"] == "contains":
            for rel, accepted in _PINNED_LINE.findall(check["pattern"]):
                blobs[re.sub(r"\\(.)", r"\1", rel)] = accepted.strip("()").split("|")
    return blobs


def experiment_files(checks: list[dict[str, Any]], log_dir: Path | str) -> dict[str, Any] | None:
    """The repository diff where it concerns the experiment: of the files the experiment
    executes (pinned_blobs), those the run found changed from the pinned commit, with the blob
    each had there and the one the run found (`missing`: absent or a link; `not recorded`:
    pinned.txt has no line for it), and whether the change is a declared compatibility repair
    (`accepted`: its check passes) or not (its check fails). None when the task pins no file."""
    blobs = pinned_blobs(checks)
    if not blobs:
        return None
    found = {}
    for line in (_read(Path(log_dir), PINNED_FILE) or "").splitlines():
        rel, _, blob = line.rpartition(" ")
        if rel:
            found[rel] = blob
    changed = []
    for rel, accepted in sorted(blobs.items()):
        now = found.get(rel, "not recorded")
        if now != accepted[0]:
            changed.append(
                {"path": rel, "pinned": accepted[0], "now": now, "accepted": now in accepted}
            )
    return {"pinned": len(blobs), "changed": changed}


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return value if isinstance(value, list) else [value]


def is_gpu_evidence(check: dict[str, Any]) -> bool:
    """Whether the check proves GPU use: what the CPU validation of a GPU task leaves out."""
    return check["kind"] == "gpu_used" or check.get("gpu") is True


def read_collected(log_dir: Path | str, name: str) -> str | None:
    """A file the experiment collected, as text (capped), or None."""
    return _read(Path(log_dir), name)


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


def _collected_bytes(log_dir: Path, name: str) -> bytes:
    path = (log_dir / name).resolve()
    if not path.is_relative_to(log_dir.resolve()) or not path.is_file():
        raise ValueError(f"{name} was not collected")
    if path.stat().st_size > MAX_READ:
        raise ValueError(f"{name} is over {MAX_READ} bytes")
    return path.read_bytes()


# ---- elf_symbols: a small reader of ELF headers, symbol tables and the dynamic section ----
_SHT_SYMTAB, _SHT_DYNSYM, _SHT_DYNAMIC, _SHT_NOBITS = 2, 11, 6, 8
_SHF_WRITE, _SHF_ALLOC, _SHF_EXECINSTR = 1, 2, 4
_STT_FUNC, _STT_GNU_IFUNC = 2, 10
_PT_INTERP, _DT_NEEDED = 3, 1
_MAX_ENTRIES = 1 << 20


class _Elf:
    """What elf_symbols judges of an ELF file, read with struct and bounds checks only (the
    file is the agent's: a malformed one raises ValueError, never reads past its end)."""

    def __init__(self, data: bytes):
        if data[:4] != b"\x7fELF" or len(data) < 52:
            raise ValueError("not an ELF file")
        wide = {1: False, 2: True}.get(data[4])
        order = {1: "<", 2: ">"}.get(data[5])
        if wide is None or order is None:
            raise ValueError("unknown ELF class or byte order")
        self.data, self.o, self.wide = data, order, wide
        a = "Q" if wide else "I"
        (e_type, _, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, shnum, shstrndx) = (
            self._unpack(f"HHI{a}{a}{a}IHHHHHH", 16)
        )
        if e_type not in (2, 3):
            raise ValueError(f"ELF type {e_type} is not an executable")
        if shnum == 0 or shoff == 0:
            raise ValueError("no section headers")
        shfmt = "IIQQQQIIQQ" if wide else "IIIIIIIIII"
        if shentsize < struct.calcsize(order + shfmt) or shnum > _MAX_ENTRIES:
            raise ValueError("malformed section headers")
        if shoff + shnum * shentsize > len(data):
            raise ValueError(
                f"section headers end at byte {shoff + shnum * shentsize}, the file at "
                f"{len(data)} (cut short: collected files are capped at 1 MiB)"
            )
        self.sections = []
        for i in range(shnum):
            f = self._unpack(shfmt, shoff + i * shentsize)
            # name, type, flags, offset, size, link, entsize
            self.sections.append((f[0], f[1], f[2], f[4], f[5], f[6], f[9]))
        self.phdrs = []
        phfmt = "IIQQQQQQ" if wide else "IIIIIIII"
        if phnum and phentsize >= struct.calcsize(order + phfmt) and phnum < _MAX_ENTRIES:
            for i in range(phnum):
                f = self._unpack(phfmt, phoff + i * phentsize)
                p_type, p_offset, p_filesz = (f[0], f[2], f[5]) if wide else (f[0], f[1], f[4])
                self.phdrs.append((p_type, p_offset, p_filesz))
        if shstrndx >= shnum:
            raise ValueError("no section name table")
        self.names = [self._cstr(self._bounds(shstrndx), s[0]) for s in self.sections]

    def _unpack(self, fmt: str, offset: int) -> tuple[int, ...]:
        fmt = self.o + fmt
        if offset < 0 or offset + struct.calcsize(fmt) > len(self.data):
            raise ValueError("a header lies past the end of the file")
        return struct.unpack_from(fmt, self.data, offset)

    def _bounds(self, index: int) -> tuple[int, int]:
        _, kind, _, offset, size, _, _ = self.sections[index]
        if kind == _SHT_NOBITS:
            return 0, 0
        if offset + size > len(self.data):
            raise ValueError(f"section {index} lies past the end of the file")
        return offset, size

    def _cstr(self, table: tuple[int, int], at: int) -> str:
        start, size = table
        if at >= size:
            raise ValueError("a name lies outside its string table")
        end = self.data.find(b"\0", start + at, start + size)
        return self.data[start + at : end if end >= 0 else start + size].decode("latin1")

    def symbols(self) -> tuple[list[tuple[str, int, int, str]], bool]:
        """[(name without @version, type, section index, table)] of .symtab and .dynsym, and
        whether a .symtab (the link-time symbol table, gone when stripped) is there."""
        out, has_symtab = [], False
        fmt = "IBBHQQ" if self.wide else "IIIBBH"
        size = struct.calcsize(self.o + fmt)
        for kind, table in ((_SHT_SYMTAB, "symtab"), (_SHT_DYNSYM, "dynsym")):
            for index, sec in enumerate(self.sections):
                if sec[1] != kind:
                    continue
                has_symtab |= kind == _SHT_SYMTAB
                offset, length = self._bounds(index)
                if sec[5] >= len(self.sections) or length // size > _MAX_ENTRIES:
                    raise ValueError("malformed symbol table")
                strtab = self._bounds(sec[5])
                for at in range(offset, offset + length - size + 1, size):
                    f = struct.unpack_from(self.o + fmt, self.data, at)
                    info, shndx = (f[1], f[3]) if self.wide else (f[3], f[5])
                    name = self._cstr(strtab, f[0]).split("@", 1)[0]
                    if name:
                        out.append((name, info & 0xF, shndx, table))
        return out, has_symtab

    def executable_section(self, index: int) -> bool:
        return 0 < index < len(self.sections) and bool(self.sections[index][2] & _SHF_EXECINSTR)

    def readonly_data(self) -> list[bytes]:
        """The bytes of every allocated section that is neither writable nor code (.rodata)."""
        out = []
        for i, (_, kind, flags, _, _, _, _) in enumerate(self.sections):
            code_or_writable = flags & (_SHF_WRITE | _SHF_EXECINSTR)
            if flags & _SHF_ALLOC and not code_or_writable and kind != _SHT_NOBITS:
                start, size = self._bounds(i)
                out.append(self.data[start : start + size])
        return out

    def interpreter(self) -> str | None:
        for p_type, offset, size in self.phdrs:
            if p_type == _PT_INTERP:
                if offset + size > len(self.data):
                    raise ValueError("the program interpreter lies past the end of the file")
                return self.data[offset : offset + size].split(b"\0", 1)[0].decode("latin1")
        return None

    def needed(self) -> list[str]:
        out = []
        fmt = "qQ" if self.wide else "iI"
        size = struct.calcsize(self.o + fmt)
        for i, sec in enumerate(self.sections):
            if sec[1] != _SHT_DYNAMIC or sec[5] >= len(self.sections):
                continue
            offset, length = self._bounds(i)
            strtab = self._bounds(sec[5])
            for at in range(offset, offset + length - size + 1, size):
                tag, value = struct.unpack_from(self.o + fmt, self.data, at)
                if tag == 0:
                    break
                if tag == _DT_NEEDED:
                    out.append(self._cstr(strtab, value))
        return out


def _shown(names: list[str], limit: int = 4) -> str:
    more = f" and {len(names) - limit} more" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _elf_symbols(check: dict[str, Any], log_dir: Path) -> tuple[bool, str]:
    try:
        elf = _Elf(_collected_bytes(log_dir, check["file"]))
        symbols, has_symtab = elf.symbols()
        interpreter, needed = elf.interpreter(), elf.needed()
        rodata = elf.readonly_data()
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        return False, f"{check['file']}: not a whole ELF executable: {exc}"
    functions = {
        name
        for name, kind, shndx, _ in symbols
        if kind in (_STT_FUNC, _STT_GNU_IFUNC) and elf.executable_section(shndx)
    }
    problems = []
    missing = [
        r for r in check.get("defined", []) if not any(re.fullmatch(r, f) for f in functions)
    ]
    if missing:
        why = "" if has_symtab else " (no .symtab: stripped)"
        problems.append(f"no function defined like {_shown(missing)}{why}")
    absent = check.get("absent", [])
    forbidden = sorted({n for n, *_ in symbols if any(re.fullmatch(r, n) for r in absent)})
    if forbidden:
        problems.append(f"symbols it must not have: {_shown(forbidden)}")
    lost = [s for s in check.get("strings", []) if not any(s.encode() + b"\0" in d for d in rodata)]
    if lost:
        problems.append(f"read-only data lacks {_shown([repr(s) for s in lost])}")
    wanted = check.get("interpreter")
    if wanted and interpreter is not None and not re.fullmatch(wanted, interpreter):
        problems.append(f"program interpreter {interpreter!r}")
    if "needed" in check:
        odd = [lib for lib in needed if not re.fullmatch(check["needed"], lib)]
        if odd:
            problems.append(f"loads {_shown(odd)}")
    if problems:
        return False, f"{check['file']}: {'; '.join(problems)}"
    return True, (
        f"{check['file']}: ELF defining {len(check.get('defined', []))} of the repository's "
        f"functions and holding its {len(check.get('strings', []))} strings; "
        f"{len(symbols)} symbols, none forbidden; needs {_shown(needed, 6) or 'nothing'}"
    )


# ---- linear_model_score and numpy_draw: computed here with numpy, never read from the machine ----
MAX_ARRAY_BYTES = 1024 * 1024


def _npz_float_array(archive: zipfile.ZipFile, name: str) -> Any:
    import numpy as np

    info = archive.getinfo(f"{name}.npy")
    if info.file_size > MAX_ARRAY_BYTES:
        raise ValueError(f"{name}.npy unpacks to {info.file_size} bytes")
    array = np.load(io.BytesIO(archive.read(info)), allow_pickle=False)
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        raise ValueError(f"{name} is not a float array")
    return array.astype(np.float64)


def _transform(text: str, features: int, classes: int) -> dict[str, list[int]]:
    """The attempt's `columns:`, `signs:` and `labels:` lines (written by the trusted shell)."""
    got = {}
    for key, length in (("columns", features), ("signs", features), ("labels", classes)):
        found = re.findall(rf"^{key}:((?: +-?\d+)+) *$", text, re.MULTILINE)
        if not found:
            raise ValueError(f"no {key}: line")
        got[key] = [int(v) for v in found[-1].split()]
        if len(got[key]) != length:
            raise ValueError(f"{key}: has {len(got[key])} numbers, want {length}")
    if sorted(got["columns"]) != list(range(features)):
        raise ValueError("columns: is not a permutation")
    if sorted(got["labels"]) != list(range(classes)):
        raise ValueError("labels: is not a permutation")
    if any(s not in (1, -1) for s in got["signs"]):
        raise ValueError("signs: holds other numbers than 1 and -1")
    return got


def _linear_model_score(check: dict[str, Any], log_dir: Path) -> tuple[bool, str]:
    import numpy as np

    rows = np.asarray(check["rows"], dtype=np.float64)
    x, y = rows[:, :-1], rows[:, -1].astype(np.int64)
    features, classes = x.shape[1], int(y.max()) + 1
    try:
        data = _collected_bytes(log_dir, check["file"])
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            w = _npz_float_array(archive, check["weights"])
            b = _npz_float_array(archive, check["bias"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        return False, f"{check['file']}: no readable {check['weights']}/{check['bias']}: {exc}"
    if w.shape != (features, classes) or b.shape != (classes,):
        return False, (
            f"{check['file']}: {check['weights']} {list(w.shape)} and {check['bias']} "
            f"{list(b.shape)}, want [{features}, {classes}] and [{classes}]"
        )
    if not (np.isfinite(w).all() and np.isfinite(b).all()):
        return False, f"{check['file']}: the weights are not all finite"
    std = np.asarray(check["std"], dtype=np.float64)
    x = (x - np.asarray(check["mean"], dtype=np.float64)) / np.where(std == 0, 1.0, std)
    space = ""
    if "transform_file" in check:
        text = _read(log_dir, check["transform_file"])
        if text is None:
            return False, f"{check['transform_file']} was not collected"
        try:
            t = _transform(text, features, classes)
        except ValueError as exc:
            return False, f"{check['transform_file']}: {exc}"
        x = x[:, t["columns"]] * np.asarray(t["signs"], dtype=np.float64)
        y = np.asarray(t["labels"])[y]
        space = f" (in this attempt's space: columns {t['columns']}, signs {t['signs']}, "
        space += f"labels {t['labels']})"
    accuracy = float(np.mean(np.argmax(x @ w + b, axis=1) == y))
    passed = accuracy >= check["min_accuracy"]
    return passed, (
        f"{check['file']}: accuracy {accuracy:.3f} on {len(y)} held-out rows{space}, "
        f"want >= {check['min_accuracy']:g}"
    )


def _numpy_draw(check: dict[str, Any], text: str, log_dir: Path) -> tuple[bool, str]:
    import numpy as np

    seed_text = _read(log_dir, check["seed_file"])
    seeds = re.findall(check["seed_pattern"], seed_text or "", re.MULTILINE)
    if not seeds:
        return False, f"{check['seed_file']}: no seed matching {check['seed_pattern']!r}"
    seed = seeds[-1][0] if isinstance(seeds[-1], tuple) else seeds[-1]
    if not seed.isdigit() or int(seed) >= 2**32:
        return False, f"{check['seed_file']}: seed {seed!r} is not in [0, 2**32)"
    expected = np.random.RandomState(int(seed)).standard_normal(check["count"])
    found = re.findall(check["pattern"], text, re.MULTILINE)
    if not found:
        return False, f"{check['file']}: no line matching {check['pattern']!r}"
    printed = found[-1][0] if isinstance(found[-1], tuple) else found[-1]
    try:
        got = [float(v) for v in printed.split()]
    except ValueError:
        return False, f"{check['file']}: {printed[:120]!r} is not a list of numbers"
    tolerance = check.get("tolerance", 1e-12)
    ok = len(got) == len(expected) and all(
        math.isfinite(g) and abs(g - e) <= tolerance * max(1.0, abs(e))
        for g, e in zip(got, expected, strict=False)
    )
    detail = f"{check['file']}: numpy's RandomState({seed}).standard_normal({check['count']})"
    if ok:
        return True, f"{detail} as computed here"
    return False, f"{detail} is {expected[0]!r} ..., the machine printed {printed[:120]!r}"


def judge(check: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    """One check over the collected files: {name, passed, detail}."""
    if check.get("drawn_inputs"):
        resolved, why = _with_drawn(check, log_dir)
        if resolved is None:
            about = f"{check['about']}: " if check.get("about") else ""
            return {"name": check["name"], "passed": False, "detail": (about + why)[:MAX_DETAIL]}
        check = resolved
    text = _read(log_dir, check["file"])
    kind = check["kind"]
    if text is not None and kind == "array_shape":
        passed, detail = _array_shape(check, log_dir)
    elif text is not None and kind == "elf_symbols":
        passed, detail = _elf_symbols(check, log_dir)
    elif text is not None and kind == "linear_model_score":
        passed, detail = _linear_model_score(check, log_dir)
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
    elif kind == "numpy_draw":
        passed, detail = _numpy_draw(check, text, log_dir)
    else:  # gpu_used
        rows = [r for r in text.splitlines() if r.strip() and not r.startswith(("pid", "No "))]
        passed = bool(rows)
        detail = f"{len(rows)} process(es) used the GPU"
    if check.get("about"):
        detail = f"{check['about']}: {detail}"
    return {"name": check["name"], "passed": bool(passed), "detail": detail[:MAX_DETAIL]}


def judge_all(checks: list[dict[str, Any]], log_dir: Path | str) -> list[dict[str, Any]]:
    return [judge(check, Path(log_dir)) for check in checks]

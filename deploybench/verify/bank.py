"""Variant banks: the answers a published verifier must not hold.

A task's checks.yaml may declare `variants` (catalog/checks.py's VARIANTS_SCHEMA): inputs the
designated light experiment really consumes (seeds, sizes, parameters) and results to read from
what it collected. `deploybench validate-references --bank N` runs the real reference setup once
and its experiment on N drawn inputs, and stores each input with the results the real code gave:
the task's bank, one JSON file in the operator's bank folder ($DEPLOYBENCH_BANK or --bank-dir),
never in the repository. Each attempt is given one variant of the bank (unseen in its run where
the bank allows), its inputs reach the experiment as VARIANT_<NAME> variables, and its results
are compared with the recorded ones here on the controller. Without a bank the inputs are drawn
at random, the experiment runs the same, and the verdict says `bank: none`: the results were
not compared with anything (docs/verification.md says what such a verifier still proves)."""

from __future__ import annotations

import hashlib
import json
import math
import os
import random
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from deploybench import catalog
from deploybench.catalog import checks as checks_mod
from deploybench.errors import DeployBenchError

BANK_ENV = "DEPLOYBENCH_BANK"
SCHEMA = 1
DEFAULT_REPEATS = 2
SPREAD_FACTOR = 3.0
# How bank.txt marks a result that a constant would pass (weaknesses).
WEAK = "weak:"
_WORD = re.compile(r"^[A-Za-z0-9_.:+-]{1,64}$")


def spec_of(task_id: str) -> dict[str, Any] | None:
    """The task's declared variants (None: its verifier draws none)."""
    return checks_mod.load_variants(catalog.Task(task_id).checks)


def spec_digest(spec: dict[str, Any]) -> str:
    """What a bank was made for: a changed input space or result list makes a bank stale."""
    wanted = {
        "inputs": spec["inputs"],
        "results": [(r["name"], r["file"], r["pattern"]) for r in spec["results"]],
    }
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()[:16]


def root(explicit: Path | str | None = None) -> Path | None:
    """The operator's bank folder: --bank-dir, else $DEPLOYBENCH_BANK, else none."""
    value = explicit or os.environ.get(BANK_ENV)
    return Path(value).expanduser().resolve() if value else None


def bank_file(folder: Path, task_id: str) -> Path:
    return Path(folder) / f"{catalog.Task(task_id).id}.json"


def draw_inputs(spec: dict[str, Any], rng: random.Random) -> dict[str, Any]:
    """One point of the declared input space."""
    inputs: dict[str, Any] = {}
    for name, space in sorted(spec["inputs"].items()):
        if "int" in space:
            inputs[name] = rng.randint(*space["int"])
        elif "float" in space:
            inputs[name] = round(rng.uniform(*space["float"]), 6)
        else:
            inputs[name] = rng.choice(space["choice"])
    return inputs


def preamble(inputs: dict[str, Any]) -> str:
    """The experiment's VARIANT_<NAME> variables. Values are numbers or short words (the schema
    and this check), so nothing here is shell syntax of anyone's choosing."""
    lines = []
    for name, value in sorted(inputs.items()):
        text = repr(value) if isinstance(value, float) else str(value)
        if isinstance(value, bool) or not _WORD.match(text) or not re.match(r"^[a-z0-9_]+$", name):
            raise DeployBenchError(f"variant input {name}={value!r} is not a number or a word")
        lines.append(f"VARIANT_{name.upper()}={text}\nexport VARIANT_{name.upper()}\n")
    return "".join(lines)


def load(folder: Path | None, task_id: str, spec: dict[str, Any]) -> tuple[dict | None, str]:
    """(the task's bank, its state): `present`, `none` (no folder or no file), or `stale` (made
    for another input space or result list, so never used)."""
    if folder is None:
        return None, "none"
    path = bank_file(folder, task_id)
    if not path.is_file():
        return None, "none"
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DeployBenchError(f"{path}: not a readable bank: {exc}") from None
    if not isinstance(data, dict) or not data.get("variants"):
        raise DeployBenchError(f"{path}: not a bank (no variants)")
    if data.get("spec") != spec_digest(spec):
        return None, "stale"
    return data, "present"


def machine_kinds(bank: dict[str, Any]) -> list[str]:
    """The machine kinds a bank's real runs were made on: the image, and `cpu-only` for the CPU
    validation of a GPU task (its floats are not the GPU's)."""
    return sorted({kind(m.get("image") or "", bool(m.get("cpu_only"))) for m in bank["made"]})


def kind(image: str, cpu_only: bool) -> str:
    return f"{image}, cpu-only" if cpu_only else image


def drawn(
    task_id: str,
    folder: Path | None,
    used: set[str],
    rng: random.Random,
    machine: str | None = None,
) -> dict:
    """The variant of one attempt: from the bank, one its run has not used yet where any is
    left; without a bank, inputs drawn here. MACHINE (kind()) is the attempt's machine kind: a
    bank made on other kinds only is not used (`elsewhere`), since what the real code gives
    may depend on the image's libraries (eet's sqlite3, seurat's R) or on the CPU standing in
    for a GPU. What the controller keeps (variant.json)."""
    spec = spec_of(task_id)
    if spec is None:
        return {"bank": "none", "declared": False}
    bank, state = load(folder, task_id, spec)
    if bank is not None and machine is not None and machine not in machine_kinds(bank):
        bank, state = None, "elsewhere"
    if bank is None:
        return {"bank": state, "declared": True, "inputs": draw_inputs(spec, rng)}
    fresh = [v for v in bank["variants"] if v["id"] not in used]
    variant = rng.choice(fresh or bank["variants"])
    return {
        "bank": "present",
        "declared": True,
        "id": variant["id"],
        "reused": not fresh,
        "inputs": variant["inputs"],
        "expected": variant["results"],
        "spread": bank.get("spread", {}),
        "made": bank["made"][-1] if bank.get("made") else None,
    }


def _value(text: str | None, pattern: str) -> str | None:
    if text is None:
        return None
    found = re.findall(pattern, text, re.MULTILINE)
    if not found:
        return None
    got = found[-1]
    return (got[0] if isinstance(got, tuple) else got).strip()


def _read(log_dir: Path, name: str) -> str | None:
    path = (Path(log_dir) / name).resolve()
    if not path.is_relative_to(Path(log_dir).resolve()) or not path.is_file():
        return None
    with open(path, "rb") as f:
        return f.read(checks_mod.MAX_READ).decode("utf-8", errors="replace")


def results_of(spec: dict[str, Any], log_dir: Path) -> dict[str, Any]:
    """The declared results as the experiment's collected files show them (None: not found);
    numbers as floats unless the result is `text`."""
    out: dict[str, Any] = {}
    for result in spec["results"]:
        raw = _value(_read(log_dir, result["file"]), result["pattern"])
        if raw is not None and not result.get("text"):
            try:
                raw = float(raw)
            except ValueError:
                raw = None
        out[result["name"]] = raw
    return out


def tolerance(result: dict[str, Any], expected: float, spread: float) -> float:
    return max(
        result.get("abs", 0.0), result.get("rel", 0.0) * abs(expected), SPREAD_FACTOR * spread
    )


def judge(spec: dict[str, Any], variant: dict[str, Any], log_dir: Path) -> list[dict]:
    """Layer 2 checks `variant_<result>` of an attempt with a bank variant: each result within
    its tolerance of what the real code gave for these inputs."""
    got = results_of(spec, log_dir)
    checks = []
    for result in spec["results"]:
        name = result["name"]
        want = variant["expected"].get(name)
        have = got.get(name)
        where = f"{result['file']} for variant {variant['id']}"
        if have is None:
            ok, detail = False, f"{where}: no value matching {result['pattern']!r}"
        elif result.get("text"):
            ok = have == want
            detail = f"{where}: {have[:80]!r}, the real run gave {str(want)[:80]!r}"
        else:
            tol = tolerance(result, float(want), float(variant["spread"].get(name, 0.0)))
            ok = math.isfinite(have) and abs(have - float(want)) <= tol
            detail = (
                f"{where}: {have:.10g}, the real run gave {float(want):.10g} (tolerance {tol:.3g})"
            )
        if result.get("about"):
            detail = f"{result['about']}: {detail}"
        checks.append(
            {
                "name": f"variant_{name}",
                "passed": bool(ok),
                "detail": detail[: checks_mod.MAX_DETAIL],
            }
        )
    return checks


def record(
    spec: dict[str, Any], runs: list[dict[str, Any]], made: dict[str, Any]
) -> dict[str, Any]:
    """A bank from real runs: each run {inputs, log_dir, seconds}; runs with equal inputs are
    repeats whose spread sets the tolerances. A run whose results are missing is an error (the
    reference passed: its experiment must give every declared result)."""
    variants: dict[str, dict] = {}
    spread: dict[str, float] = {r["name"]: 0.0 for r in spec["results"] if not r.get("text")}
    for run in runs:
        results = results_of(spec, run["log_dir"])
        missing = [k for k, v in results.items() if v is None]
        if missing:
            raise DeployBenchError(
                f"the reference's experiment gave no {', '.join(missing)} for inputs "
                f"{run['inputs']} (see {run['log_dir']})"
            )
        key = json.dumps(run["inputs"], sort_keys=True)
        if key in variants:
            first = variants[key]["results"]
            for name in spread:
                spread[name] = max(spread[name], abs(results[name] - first[name]))
            for result in spec["results"]:
                if result.get("text") and results[result["name"]] != first[result["name"]]:
                    raise DeployBenchError(
                        f"{result['name']} differs between two real runs of {run['inputs']}: "
                        "a text result must be reproducible"
                    )
            variants[key]["seconds"].append(round(run["seconds"], 1))
            continue
        variants[key] = {
            "id": "v" + hashlib.sha256(key.encode()).hexdigest()[:8],
            "inputs": run["inputs"],
            "results": results,
            "seconds": [round(run["seconds"], 1)],
        }
    return {
        "schema": SCHEMA,
        "task": made["task"],
        "spec": spec_digest(spec),
        "made": [made],
        "spread": spread,
        "variants": list(variants.values()),
    }


def plan(spec: dict[str, Any], n: int, rng: random.Random) -> list[dict[str, Any]]:
    """The inputs a bank of n variants is made from: n distinct draws (every variant there is,
    when the input space holds fewer: the bank then covers the whole space), the first
    `repeats` of them run twice (as the last runs, after the machine has warmed)."""
    seen: dict[str, dict] = {}
    for _ in range(n * 50):
        inputs = draw_inputs(spec, rng)
        seen.setdefault(json.dumps(inputs, sort_keys=True), inputs)
        if len(seen) == n:
            break
    draws = list(seen.values())
    return draws + draws[: _repeats(spec, len(draws))]


def _repeats(spec: dict[str, Any], distinct: int) -> int:
    return min(int(spec.get("repeats", DEFAULT_REPEATS)), distinct)


def most_runs(spec: dict[str, Any], n: int) -> int:
    """The most experiments plan(spec, n) asks for (fewer when the input space is smaller)."""
    return n + _repeats(spec, n)


def _merged(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """An earlier bank of the same input space with a new one. A variant in both was run again
    on another machine (validate-references --bank-again): the earlier results stay, and their
    distance from the new ones widens the spread, since repeats on one machine understate how
    far two machines' runs differ (a bank of lightgcn_sigir20 was rejected for that). A text
    result that differs between machines is no answer: nothing is written."""
    spread = {k: max(v, old.get("spread", {}).get(k, 0.0)) for k, v in new["spread"].items()}
    earlier = {v["id"]: v for v in old["variants"]}
    added = []
    for variant in new["variants"]:
        before = earlier.get(variant["id"])
        if before is None:
            added.append(variant)
            continue
        for name, value in variant["results"].items():
            was = before["results"].get(name)
            if name in spread:
                spread[name] = max(spread[name], abs(float(value) - float(was)))
            elif value != was:
                raise DeployBenchError(
                    f"{name} of variant {variant['id']} differs between two machines' real "
                    "runs: a text result must be reproducible (the bank is left as it was)"
                )
        before["seconds"] = before.get("seconds", []) + variant["seconds"]
        before["machines"] = before.get("machines", 1) + 1
    return {
        **new,
        "variants": old["variants"] + added,
        "made": old.get("made", []) + new["made"],
        "spread": spread,
    }


def again(folder: Path | None, task_id: str, spec: dict[str, Any], n: int) -> list[dict]:
    """The inputs of the bank's variants to run once more on a fresh machine (the first n,
    every one when n is 0): their results there give the spread across machines."""
    made, state = load(folder, task_id, spec)
    if made is None:
        raise DeployBenchError(
            f"{task_id}: no bank to run again ({state}): make one first with --bank N"
        )
    variants = made["variants"][:n] if n else made["variants"]
    return [dict(v["inputs"]) for v in variants]


def weaknesses(spec: dict[str, Any], made: dict[str, Any]) -> list[str]:
    """Where one constant answer would pass every variant of the bank: a numeric result whose
    values across the variants lie within twice its tolerance, or a text result that is the
    same for all. Such a result tells a real run from a fake by nothing; the operator reads it
    in bank.txt before trusting the bank."""
    out = []
    variants = made["variants"]
    for result in spec["results"]:
        name = result["name"]
        values = [v["results"].get(name) for v in variants]
        if result.get("text"):
            if len(variants) > 1 and len(set(values)) == 1:
                out.append(f"{name}: every variant gives the same text, so a constant passes")
            continue
        numbers = [float(x) for x in values]
        widest = max(tolerance(result, x, made["spread"].get(name, 0.0)) for x in numbers)
        if len(numbers) > 1 and max(numbers) - min(numbers) <= 2 * widest:
            out.append(
                f"{name}: the variants' values span {max(numbers) - min(numbers):.4g}, within "
                f"twice the tolerance ({widest:.4g}): a constant passes every variant"
            )
    return out


def save(folder: Path, task_id: str, bank: dict[str, Any]) -> Path:
    """Write the bank atomically; a bank made before for the same input space is merged (its
    variants kept, the spread the larger, _merged)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = bank_file(folder, task_id)
    if path.is_file():
        try:
            old = json.loads(path.read_text())
        except ValueError:
            old = None
        if isinstance(old, dict) and old.get("spec") == bank["spec"]:
            bank = _merged(old, bank)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        json.dump(bank, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)
    return path


def now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())

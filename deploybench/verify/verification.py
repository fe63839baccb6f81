"""The hidden verifier's layers and its verdict (contract 4); docs/verification.md tells the
whole path and what it trusts.

Before anything is judged, the machine's integrity: a tamper scan run with the controller's own
static busybox (dpkg's checksums of the system's packages, /etc/ld.so.preload, shadows of system
commands in /usr/local) is judged here (`integrity`); a tampered or broken machine fails with
failure_layer 0. Layer 1 is global and runs on the controller over the logs fetched from the
machine: the rules in verifiers/global/rules.yaml (data: pattern, category, explanation) never go
to the machine. Layer 2 is per task: verifiers/<id>/experiment.sh runs on the machine under the
trusted busybox shell, re-runs the light experiment in the agent's final environment and only
collects files into $LOG_DIR; verifiers/<id>/checks.yaml (data, never sent to the machine)
declares the checks, judged here from those raw files. A task passes only if all pass."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from deploybench import catalog, contracts, runfolder
from deploybench.catalog import checks as checks_mod
from deploybench.errors import DeployBenchError
from deploybench.paths import VERIFIERS_DIR

RULES_FILE = VERIFIERS_DIR / "global" / "rules.yaml"
CATEGORIES = ("dependency", "compilation", "runtime_crash", "oom")
MAX_EVIDENCE = 10
MAX_LINE = 300
EXPERIMENT_LIB = "experiment_lib.sh"
RUNBOOK_STATUS = re.compile(
    r"^[\s#>*_`-]*status[*_`\s]*[:=][\s*_`]*(SUCCESS|PARTIAL|FAILED)\b", re.IGNORECASE
)


@dataclass(frozen=True)
class Rule:
    id: str
    pattern: re.Pattern[str]
    category: str
    explanation: str


def _rules_from(data: Any, where: str) -> list[Rule]:
    if not isinstance(data, list) or not data:
        raise DeployBenchError(f"{where}: must be a non-empty list of rules")
    rules, seen = [], set()
    for i, item in enumerate(data):
        at = f"{where}: rule {i + 1}"
        if not isinstance(item, dict):
            raise DeployBenchError(f"{at}: must be a mapping")
        missing = [k for k in ("id", "pattern", "category", "explanation") if not item.get(k)]
        if missing:
            raise DeployBenchError(f"{at}: field {missing[0]}: required field is missing")
        if item["category"] not in CATEGORIES:
            raise DeployBenchError(
                f"{at} ({item['id']}): field category: {item['category']!r} is not one of "
                f"{', '.join(CATEGORIES)}"
            )
        if item["id"] in seen:
            raise DeployBenchError(f"{at}: field id: {item['id']!r} is used twice")
        seen.add(item["id"])
        try:
            pattern = re.compile(item["pattern"])
        except re.error as exc:
            raise DeployBenchError(f"{at} ({item['id']}): field pattern: {exc}") from None
        rules.append(Rule(item["id"], pattern, item["category"], item["explanation"]))
    return rules


@cache
def _load(path: Path) -> tuple[Rule, ...]:
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise DeployBenchError(f"Layer 1 rules not readable: {path}: {exc.strerror}") from None
    return tuple(_rules_from(data, str(path)))


def load_rules(path: Path | str = RULES_FILE) -> list[Rule]:
    """The Layer 1 rules, in priority order, checked (fields, category, regex)."""
    return list(_load(Path(path).resolve()))


def match_line(line: str, rules: Iterable[Rule]) -> Rule | None:
    """The first rule matching this line, or None."""
    for rule in rules:
        if rule.pattern.search(line):
            return rule
    return None


def layer1(
    log_texts: Mapping[str, str] | Iterable[str], rules: list[Rule] | None = None
) -> dict[str, Any]:
    """Run the rules over the logs: {passed, category, evidence}.

    log_texts: {log name: text} (evidence lines are then prefixed "name:lineno: ") or texts.
    Each line is attributed to its first matching rule; the category is that of the highest
    priority rule that matched anywhere; evidence is up to MAX_EVIDENCE matching lines in log
    order (a rule's first hit always included)."""
    rules = load_rules() if rules is None else rules
    order = {rule.id: i for i, rule in enumerate(rules)}
    if isinstance(log_texts, Mapping):
        named = sorted(log_texts.items())
    else:
        named = [("", text) for text in log_texts]
    hits: list[tuple[str, Rule]] = []
    for name, text in named:
        for lineno, line in enumerate(text.splitlines(), 1):
            rule = match_line(line, rules)
            if rule is not None:
                shown = line.strip()[:MAX_LINE]
                hits.append((f"{name}:{lineno}: {shown}" if name else shown, rule))
    if not hits:
        return {"passed": True, "category": None, "evidence": []}
    top = min((rule for _, rule in hits), key=lambda r: order[r.id])
    first_of_top = next(text for text, rule in hits if rule.id == top.id)
    evidence = [first_of_top]
    for text, _ in hits:
        if len(evidence) >= MAX_EVIDENCE:
            break
        if text not in evidence:
            evidence.append(text)
    return {"passed": False, "category": top.category, "evidence": evidence}


def read_logs(log_dir: Path | str) -> dict[str, str]:
    """Every *.log under log_dir (recursively), by path relative to it."""
    root = Path(log_dir)
    return {
        str(p.relative_to(root)): p.read_text(errors="replace")
        for p in sorted(root.rglob("*.log"))
        if p.is_file()
    }


def build_verdict(
    layer1_result: dict[str, Any],
    checks: list[dict[str, Any]] | None,
    seconds: float,
    machine: dict[str, Any] | None = None,
    experiment_files: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """contract 4. Layer 2 passes only with at least one check and every check passed; no
    checks (the experiment was not run) is a Layer 2 failure. `machine` is the integrity
    judgment (deploybench.verify.integrity.judge); a machine that failed it fails the attempt."""
    if checks is None:
        checks = [
            {
                "name": "checks_judged",
                "passed": False,
                "detail": "the experiment did not run, so no check could be judged",
            }
        ]
    machine = machine or {"passed": True, "category": None, "evidence": []}
    layer2_passed = bool(checks) and all(c["passed"] is True for c in checks)
    verdict = {
        "passed": bool(machine["passed"]) and bool(layer1_result["passed"]) and layer2_passed,
        "machine": {
            "passed": bool(machine["passed"]),
            "category": machine.get("category"),
            "evidence": list(machine.get("evidence", [])),
            "recorded": list(machine.get("recorded", [])),
        },
        "layer1": {
            "passed": bool(layer1_result["passed"]),
            "category": layer1_result.get("category"),
            "evidence": list(layer1_result.get("evidence", [])),
        },
        "layer2": {"passed": layer2_passed, "checks": checks},
        "seconds": round(float(seconds), 3),
    }
    if experiment_files is not None:
        verdict["layer2"]["experiment_files"] = experiment_files
    contracts.check(contracts.VERDICT, verdict, runfolder.VERDICT)
    return verdict


def verdict_from_logs(
    log_dir: Path | str,
    seconds: float,
    checks_spec: list[dict[str, Any]] | None,
    timed_out: bool = False,
    rules: list[Rule] | None = None,
    machine: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The verdict of a fetched LOG_DIR: Layer 1 over its *.log, Layer 2 by judging the task's
    declared checks (None: the experiment did not run) over the files it collected. An
    experiment that overran its budget gets a failing check `verifier_finished`."""
    checks = None if checks_spec is None else checks_mod.judge_all(checks_spec, log_dir)
    if timed_out:
        checks = (checks or []) + [
            {
                "name": "verifier_finished",
                "passed": False,
                "detail": f"the verifier did not finish within its budget ({seconds:.0f}s)",
            }
        ]
    files = None if checks_spec is None else checks_mod.experiment_files(checks_spec, log_dir)
    return build_verdict(layer1(read_logs(log_dir), rules), checks, seconds, machine, files)


def failure_of(
    verdict: dict[str, Any] | None, timed_out: bool = False
) -> tuple[int | None, str | None]:
    """(failure_layer, failure_category) for results.jsonl (contract 3).

    Passed: (None, None). The machine failed its integrity judgment: (0, "tampered" or
    "machine_broken"), whatever else happened (its logs cannot be trusted). Verifier overran its
    budget: (2, "verifier_timeout"). Layer 1 failed: (1, its category). Otherwise Layer 2 failed:
    (2, "task_check")."""
    machine = (verdict or {}).get("machine") or {}
    if machine.get("passed") is False:
        return 0, machine.get("category") or "machine_broken"
    if timed_out:
        return 2, "verifier_timeout"
    if verdict is None:
        return 2, "task_check"
    if verdict.get("passed"):
        return None, None
    layer1_result = verdict.get("layer1") or {}
    if not layer1_result.get("passed", True):
        return 1, layer1_result.get("category") or "runtime_crash"
    return 2, "task_check"


def runbook_status(text: str | None) -> str | None:
    """The status of RUNBOOK.MD: the first line like `STATUS: SUCCESS` (also `Status: partial`,
    `**STATUS:** FAILED`, `## Status: SUCCESS`), upper-cased; None when there is none."""
    if not text:
        return None
    for line in text.splitlines():
        m = RUNBOOK_STATUS.match(line)
        if m:
            return m.group(1).upper()
    return None


def _verifier(task_id: str) -> catalog.Task:
    """The task's verifier (verifiers/<task_id>/ holding experiment.sh and checks.yaml), checked."""
    task = catalog.Task(task_id)
    for part in (task.experiment, task.checks):
        if not part.is_file():
            raise DeployBenchError(f"no Layer 2 verifier for {task_id}: {part}")
    return task


def load_checks(task_id: str) -> list[dict[str, Any]]:
    """The task's declared Layer 2 checks (verifiers/<id>/checks.yaml), validated."""
    return checks_mod.load(_verifier(task_id).checks)


def machine_script(
    task_id: str, cpu_only: bool = False, inputs: Mapping[str, Any] | None = None
) -> str:
    """What runs on the machine: the shared preamble, then the task's experiment.sh. Both run
    under the controller's busybox shell; neither holds a check (those stay here). CPU_ONLY is
    set here, by the controller, never taken from the machine: 1 only in the CPU validation of a
    GPU task, where an experiment that names its device asks for the CPU instead. INPUTS are the
    attempt's variant (verify/bank.py): VARIANT_<NAME> variables, numbers or words only."""
    from deploybench.verify import bank

    lib = (VERIFIERS_DIR / "global" / EXPERIMENT_LIB).read_text()
    experiment = _verifier(task_id).experiment.read_text()
    if inputs is None:  # by hand or in a test: a variant drawn here, as without a bank
        import random

        spec = bank.spec_of(task_id)
        inputs = bank.draw_inputs(spec, random.SystemRandom()) if spec else {}
    mode = f"CPU_ONLY={int(cpu_only)}\n" + bank.preamble(dict(inputs))
    # It ends with exit 0, so only the trusted `timeout` gives 124, 137 or 143 (its budget ran out).
    return f"{lib}\n{mode}# ---- {task_id}/{catalog.EXPERIMENT_SCRIPT} ----\n{experiment}\nexit 0\n"


CPU_NOTE = (
    "a CPU validation: run on a machine without a GPU, judged without the task's GPU-evidence "
    "checks (left_out); not a full validation"
)


def cpu_judgment(
    verdict: dict[str, Any], checks_spec: list[dict[str, Any]], timed_out: bool = False
) -> dict[str, Any]:
    """The CPU validation's judgment of a GPU task's attempt on a machine without a GPU.

    The attempt's verdict stays the normal one (every check, so such a run FAILS it); this is a
    second judgment over that verdict with the task's GPU-evidence checks (checks.is_gpu_evidence,
    marked in checks.yaml) left out. It passes only when the machine and Layer 1 passed, every
    other declared check was judged and passed, and nothing else failed (a verifier timeout, logs
    not collected, the experiment not run)."""
    left_out = [c["name"] for c in checks_spec if checks_mod.is_gpu_evidence(c)]
    kept = [c["name"] for c in checks_spec if not checks_mod.is_gpu_evidence(c)]
    judged = {c["name"]: c for c in verdict["layer2"]["checks"]}
    problems = []
    if not left_out:
        problems.append("checks.yaml marks no check as GPU evidence: validate it normally")
    if not kept:
        problems.append("checks.yaml has nothing but GPU evidence: a CPU run shows nothing")
    if timed_out:
        problems.append("the verifier did not finish within its budget")
    for part in ("machine", "layer1"):
        result = verdict.get(part) or {"passed": True}
        if not result["passed"]:
            problems.append(f"{part} failed ({result.get('category')})")
    for name in kept:
        check = judged.get(name)
        if check is None or not check["passed"]:
            problems.append(f"{name}: {check['detail'] if check else 'not judged'}")
    for name, check in judged.items():
        if name not in left_out and name not in kept and not check["passed"]:
            problems.append(f"{name}: {check['detail']}")
    return {
        "passed": not problems,
        "cpu_only": True,
        "left_out": left_out,
        "problems": problems,
        "note": CPU_NOTE,
    }

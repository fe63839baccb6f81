"""Failure diagnosis (docs/measurements.md section 9): one diagnosis per failed attempt, mapped
to the five failure patterns by keyword rules (failure_patterns.yaml).

With a model configured, a prompt of our own (diagnose_prompt.md.j2: the final
machine state, the verifier output and the task's reference setup as ground truth) goes to an
OpenAI-compatible `<base_url>/chat/completions`, and the root cause it names is mapped. With no
model, the rules read the verifier output and the logs alone."""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jinja2
import yaml

from deploybench import runfolder
from deploybench.errors import DeployBenchError

PATTERNS_FILE = Path(__file__).with_name("failure_patterns.yaml")
TEMPLATES = Path(__file__).parent  # the .j2 files sit beside the code (package data)
_TAIL_BYTES = 4000
ATTEMPTS = 3  # tries per request to the model server
RETRY_SECONDS = 1.0
_ERROR_LINE = re.compile(
    r"error|fail|not found|denied|killed|traceback|no module|cannot|refused|timed out", re.I
)


@dataclass(frozen=True)
class Pattern:
    name: str
    categories: frozenset[str]
    keywords: tuple[re.Pattern[str], ...]


@cache
def load_patterns(path: Path = PATTERNS_FILE) -> tuple[Pattern, ...]:
    data = yaml.safe_load(Path(path).read_text())
    return tuple(
        Pattern(
            p["name"],
            frozenset(p.get("category") or []),
            tuple(re.compile(k, re.I) for k in p["keywords"]),
        )
        for p in data["patterns"]
    )


def pattern_names() -> list[str]:
    return [p.name for p in load_patterns()]


def map_patterns(text: str, category: str | None = None) -> list[str]:
    """The failure patterns a root-cause text (and optional Layer 1 category) hits."""
    return [
        p.name
        for p in load_patterns()
        if (category in p.categories) or any(k.search(text) for k in p.keywords)
    ]


def _tail(path: Path, size: int = _TAIL_BYTES) -> str:
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            end = fh.tell()
            fh.seek(max(0, end - size))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


def rules_root_cause(
    result: dict[str, Any], verdict: dict[str, Any] | None, folder: Path | None
) -> tuple[str, list[str]]:
    """A root-cause summary from the verifier output and the logs alone: (text, evidence)."""
    evidence: list[str] = []
    parts: list[str] = []
    if verdict:
        layer1 = verdict.get("layer1") or {}
        if not layer1.get("passed", True):
            parts.append(f"Layer 1 found a {layer1.get('category') or 'problem'} error")
            evidence += list(layer1.get("evidence") or [])[:5]
        failed = [c for c in (verdict.get("layer2") or {}).get("checks", []) if not c["passed"]]
        if failed:
            parts.append("Layer 2 checks failed: " + "; ".join(c["name"] for c in failed))
            evidence += [f"{c['name']}: {c['detail']}" for c in failed[:5]]
    elif result.get("failure_category"):
        parts.append(f"the verifier reported {result['failure_category']}")
    if folder is not None:
        for log in (
            folder / runfolder.VERIFIER_DIR / runfolder.VERIFIER_STDOUT,
            folder / runfolder.AGENT_LOG,
        ):
            lines = [ln.strip() for ln in _tail(log).splitlines() if _ERROR_LINE.search(ln)]
            evidence += [f"{log.name}: {ln}" for ln in lines[-3:]]
    if not parts:
        parts.append("the verifier rejected the attempt without a recorded reason")
    return ". ".join(parts) + ".", evidence


def diagnose_by_rules(
    result: dict[str, Any], verdict: dict[str, Any] | None, folder: Path | None
) -> dict[str, Any]:
    text, evidence = rules_root_cause(result, verdict, folder)
    category = ((verdict or {}).get("layer1") or {}).get("category") or result.get(
        "failure_category"
    )
    return {
        "source": "rules",
        "root_cause": text,
        "evidence": evidence,
        "patterns": map_patterns(text + "\n" + "\n".join(evidence), category),
    }


def _read(path: Path, limit: int) -> str:
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return ""
    return text if len(text) <= limit else text[:limit] + f"\n... ({len(text) - limit} more)"


def reference_text(reference_dir: Path, limit: int = 8000) -> str:
    if not reference_dir.is_dir():
        return ""
    chunks = []
    for path in sorted(reference_dir.rglob("*")):
        if path.is_file() and path.suffix in (".yml", ".yaml", ".j2", ".sh", ".md", ".txt"):
            chunks.append(f"--- {path.relative_to(reference_dir)}\n{_read(path, 3000)}")
    text = "\n".join(chunks)
    return text[:limit]


def render_prompt(
    result: dict[str, Any],
    verdict: dict[str, Any] | None,
    folder: Path,
    task: dict[str, Any] | None,
    reference_dir: Path,
    commands: list[dict[str, Any]],
) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        undefined=jinja2.ChainableUndefined,
        keep_trailing_newline=True,
    )
    state = []
    for name in (runfolder.RUNBOOK,):
        if (folder / name).is_file():
            state.append((name, _read(folder / name, 2000)))
    state_dir = folder / runfolder.STATE_DIR
    if state_dir.is_dir():
        for path in sorted(state_dir.iterdir()):
            if path.is_file():
                state.append((f"state/{path.name}", _read(path, 1500)))
    logs = []
    verifier_dir = folder / runfolder.VERIFIER_DIR
    if verifier_dir.is_dir():
        for path in sorted(verifier_dir.glob("*.log")):
            logs.append((path.name, _tail(path, 1500)))
    task = dict(task or {"id": result["task_id"]})
    return env.get_template("diagnose_prompt.md.j2").render(
        task=task,
        result=result,
        verdict=verdict,
        reference=reference_text(reference_dir),
        verifier_logs=logs,
        state=state,
        last_commands=commands[-15:],
    )


def ask_model(prompt: str, model: str, base_url: str, timeout: float = 120) -> str:
    """One chat completion from an OpenAI-compatible server; the answer's text."""
    body = json.dumps(
        {
            "model": model,
            "temperature": 0,
            "messages": [
                {"role": "system", "content": "You diagnose failed software deployments."},
                {"role": "user", "content": prompt},
            ],
        }
    ).encode()
    headers = {"Content-Type": "application/json"}
    key = os.environ.get("OPENAI_API_KEY")
    if key:
        headers["Authorization"] = f"Bearer {key}"
    # imported here: urllib.request (http.client, email, ssl) is dear to import, and the
    # report, which runs the rules only, never calls a model
    import urllib.error
    import urllib.request

    url = base_url.rstrip("/") + "/chat/completions"
    data = None
    for attempt in range(1, ATTEMPTS + 1):
        request = urllib.request.Request(url, data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                data = json.loads(response.read())
            break
        except urllib.error.HTTPError as exc:
            # Rate limits and server errors pass; a 4xx other than 429 will not.
            if exc.code not in (429, 500, 502, 503, 504) or attempt == ATTEMPTS:
                raise DeployBenchError(f"model server {url} answered HTTP {exc.code}") from None
        except (urllib.error.URLError, TimeoutError) as exc:
            if attempt == ATTEMPTS:
                reason = getattr(exc, "reason", exc)
                raise DeployBenchError(f"model server {url} not reachable: {reason}") from None
        except json.JSONDecodeError:
            raise DeployBenchError(f"model server {url} did not answer JSON") from None
        time.sleep(RETRY_SECONDS * attempt)
    try:
        return data["choices"][0]["message"]["content"] or ""
    except (KeyError, IndexError, TypeError):
        raise DeployBenchError(f"model server {url}: no choices[0].message.content") from None


def parse_answer(text: str) -> tuple[str, list[str]]:
    """(root cause, evidence) from the model's answer; a non-JSON answer is the root cause."""
    match = re.search(r"\{.*\}", text, re.S)
    if match:
        try:
            data = json.loads(match.group(0))
            evidence = data.get("evidence") or []
            if isinstance(evidence, str):
                evidence = [evidence]
            return str(data.get("root_cause") or text).strip(), [str(e) for e in evidence]
        except json.JSONDecodeError:
            pass
    return text.strip(), []


def diagnose_with_model(prompt: str, model: str, base_url: str) -> dict[str, Any]:
    root_cause, evidence = parse_answer(ask_model(prompt, model, base_url))
    return {
        "source": f"model:{model}",
        "root_cause": root_cause,
        "evidence": evidence,
        # The root cause alone is mapped: it is the model's judgment of what went wrong first.
        "patterns": map_patterns(root_cause),
    }


def table9(rows: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows of Table 9 from dicts with task_id, passed and patterns (failed attempts only
    carry patterns): per task group, tasks hitting each pattern and patterns per task."""
    by_task: dict[str, dict[str, Any]] = {}
    for row in rows:
        entry = by_task.setdefault(row["task_id"], {"passed": 0, "failed": 0, "patterns": set()})
        if row["passed"]:
            entry["passed"] += 1
        else:
            entry["failed"] += 1
            entry["patterns"].update(row.get("patterns") or [])
    groups = {"all-fail tasks": [], "mixed-outcome tasks": []}
    for entry in by_task.values():
        if entry["failed"] and not entry["passed"]:
            groups["all-fail tasks"].append(entry)
        elif entry["failed"]:
            groups["mixed-outcome tasks"].append(entry)
    out = []
    for group, entries in groups.items():
        row: dict[str, Any] = {"group": group, "tasks": len(entries)}
        for name in pattern_names():
            row[name] = sum(1 for e in entries if name in e["patterns"])
        total = sum(len(e["patterns"]) for e in entries)
        row["patterns per task"] = round(total / len(entries), 2) if entries else None
        out.append(row)
    return out

"""One static page per attempt inside the report folder (`attempts/<n>.html`), reached from its
mark in the outcome matrix: the verdict with every check and its evidence, the trajectory as a
timeline, the runbook, the diagnosis and the end of the verifier's log. Everything on a page
came from the agent's machine or was shaped by the agent, so it is escaped by the template
(jinja2 autoescape) and capped in size; nothing in it is interpreted, and the pages load
nothing from elsewhere (they work from file://)."""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from deploybench import runfolder

TEMPLATES = Path(__file__).parent
FOLDER = "attempts"
# What a page shows at most: a long trajectory's first events, each output's end.
EVENTS_SHOWN = 2000
OUTPUT_CHARS = 2000
TEXT_CHARS = 64_000
LOG_TAIL = 8_000


def _text(path: Path, cap: int = TEXT_CHARS, tail: bool = False) -> str | None:
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    text = raw.decode("utf-8", "replace")
    if len(text) <= cap:
        return text
    return ("[... cut ...]\n" + text[-cap:]) if tail else (text[:cap] + "\n[... cut ...]")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _events(folder: Path) -> tuple[list[dict[str, Any]], int]:
    text = _text(folder / runfolder.TRAJECTORY, cap=64 << 20) or ""
    events, total = [], 0
    for line in runfolder.complete_lines(text, folder / runfolder.TRAJECTORY):
        try:
            event = json.loads(line)
        except json.JSONDecodeError:
            continue
        if not isinstance(event, dict):
            continue
        total += 1
        if len(events) >= EVENTS_SHOWN:
            continue
        output = event.get("output")
        if isinstance(output, str) and len(output) > OUTPUT_CHARS:
            event["output"] = "[... cut ...]\n" + output[-OUTPUT_CHARS:]
        events.append(event)
    return events, total


def _checks(verdict: dict[str, Any] | None) -> list[dict[str, Any]]:
    if not isinstance(verdict, dict):
        return []
    rows = []
    layer1 = verdict.get("layer1")
    if isinstance(layer1, dict):
        rows.append(
            {
                "layer": 1,
                "name": f"layer 1 ({layer1.get('category') or 'no failure'})",
                "passed": layer1.get("passed"),
                "detail": "\n".join(map(str, layer1.get("evidence") or [])),
            }
        )
    layer2 = verdict.get("layer2")
    for check in (layer2 or {}).get("checks") or [] if isinstance(layer2, dict) else []:
        if isinstance(check, dict):
            rows.append(
                {
                    "layer": 2,
                    "name": str(check.get("name")),
                    "passed": check.get("passed"),
                    "detail": str(check.get("detail") or ""),
                }
            )
    return rows


def _esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _timeline(events: list[dict[str, Any]]) -> Markup:
    """The trajectory's items, each of the agent's strings escaped here: a template's per-event
    work made a report of 1,000 attempts three times slower."""
    out = []
    first = True
    for e in events:
        rc, soft = e.get("exit_code"), e.get("soft_timeout")
        bad = (isinstance(rc, int) and rc != 0) or soft is True
        anchor = ' id="first-command"' if first and e.get("kind") == "command" else ""
        first = first and not anchor
        t = e.get("t")
        meta = f"#{_esc(e.get('step'))} · t {t:.1f} s" if isinstance(t, int | float) else "#?"
        meta += f" · {_esc(e.get('kind'))}"
        if rc is not None:
            meta += f" · exit {_esc(rc)}"
        if soft is True:
            meta += " · soft timeout"
        if e.get("tokens_in") is not None:
            meta += f" · {_esc(e.get('tokens_in'))}/{_esc(e.get('tokens_out'))} tokens"
        parts = [f'<li{anchor} class="{"bad" if bad else ""}"><span class="meta">{meta}</span>']
        if e.get("command"):
            parts.append(f"<pre>$ {_esc(e['command'])}</pre>")
        if e.get("path"):
            parts.append(f"<div><code>{_esc(e['path'])}</code></div>")
        if e.get("output"):
            parts.append(f"<pre>{_esc(e['output'])}</pre>")
        out.append("".join(parts) + "</li>")
    return Markup("\n".join(out))


def page_of(folder: Path, row: dict[str, Any]) -> dict[str, Any]:
    """What one attempt's page shows, read from its folder."""
    verdict = _json(folder / runfolder.VERDICT)
    events, total = _events(folder)
    return {
        "row": row,
        "verdict": verdict if isinstance(verdict, dict) else None,
        "checks": _checks(verdict),
        "events": events,
        "timeline": _timeline(events),
        "events_total": total,
        "runbook": _text(folder / runfolder.RUNBOOK),
        "diagnosis": _text(folder / runfolder.DIAGNOSIS),
        "verifier_log": _text(
            folder / runfolder.VERIFIER_DIR / runfolder.VERIFIER_STDOUT, LOG_TAIL, tail=True
        ),
    }


def write(out: Path, rows: list[dict[str, Any]]) -> list[str | None]:
    """A page for each row (results.jsonl's, with `folder` and `label`) whose attempt folder is
    there; the pages' paths relative to the report (None where there is no folder)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=jinja2.select_autoescape(["j2"])
    )
    template = env.get_template("attempt.html.j2")
    (Path(out) / FOLDER).mkdir(parents=True, exist_ok=True)
    hrefs: list[str | None] = []
    for n, row in enumerate(rows, 1):
        folder = Path(str(row.get("folder") or ""))
        if not row.get("folder") or not folder.is_dir():
            hrefs.append(None)
            continue
        href = f"{FOLDER}/{n}.html"
        (Path(out) / href).write_text(template.render(**page_of(folder, row)))
        hrefs.append(href)
    return hrefs

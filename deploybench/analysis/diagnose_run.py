"""`deploybench diagnose`: a diagnosis.json beside every failed attempt and a Table 9 summary."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from deploybench import runfolder
from deploybench.analysis import diagnose, render
from deploybench.analysis.load import read_results, read_trajectory
from deploybench.catalog import Task, load_tasks
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR


@dataclass
class DiagnoseResult:
    count: int
    source: str
    markdown: Path
    csv: Path


def diagnose_run(
    run_dir: Path,
    catalog_dir: Path | None = None,
    model: str | None = None,
    base_url: str | None = None,
    out: Path | None = None,
    agentic: Any = None,
) -> DiagnoseResult:
    """AGENTIC: the agentic diagnosis (run/diagnosis.py's Agentic, made by the command: this
    floor does not reach machines), asked first for each failed attempt; None where the attempt
    has no kept machine."""
    if bool(model) != bool(base_url):
        raise DeployBenchError("--model and --llm-base-url go together (or neither, for rules)")
    run_dir = Path(run_dir)
    catalog_dir = Path(catalog_dir) if catalog_dir else TASKS_DIR
    catalog = load_tasks(catalog_dir) if catalog_dir.is_dir() else {}
    rows, count, agentic_count = [], 0, 0
    for result in read_results(run_dir):
        if result["status"] != "completed":
            continue
        passed = bool(result["passed"])
        row = {"task_id": result["task_id"], "passed": passed, "patterns": []}
        if not passed:
            folder = runfolder.attempt_of(run_dir, result)
            verdict = runfolder.read_verdict(folder) if runfolder.has_verdict(folder) else None
            found = None
            if agentic is not None:
                found = agentic.diagnose(run_dir, result, catalog_dir)
                agentic_count += found is not None
            if found is None and model:
                trajectory = runfolder.trajectory_path(folder)
                events = read_trajectory(trajectory) if trajectory.is_file() else []
                commands = [e for e in events if e["kind"] == "command"]
                prompt = diagnose.render_prompt(
                    result,
                    verdict,
                    folder,
                    catalog.get(result["task_id"]),
                    Task(result["task_id"], root=catalog_dir.parent).role,
                    commands,
                )
                found = diagnose.diagnose_with_model(prompt, model, base_url)
                (folder / runfolder.DIAGNOSIS_PROMPT).write_text(prompt)
            elif found is None:
                found = diagnose.diagnose_by_rules(result, verdict, folder)
            record = {
                "task_id": result["task_id"],
                "agent": result["agent"],
                "model": result["model"],
                "attempt": result["attempt"],
                **found,
            }
            (folder / runfolder.DIAGNOSIS).write_text(json.dumps(record, indent=2) + "\n")
            row["patterns"] = found["patterns"]
            count += 1
        rows.append(row)
    out = Path(out) if out else run_dir / "diagnosis"
    out.mkdir(parents=True, exist_ok=True)
    frame = pd.DataFrame(diagnose.table9(rows)).set_index("group")
    frame.index.name = None
    csv = out / "table9_failure_patterns.csv"
    frame.to_csv(csv, index_label="")
    md = out / "table9_failure_patterns.md"
    md.write_text(
        "# Failure patterns by task group (paper Table 9)\n\n"
        + render.markdown(frame.map(render.fmt))
        + "\n"
    )
    source = f"model {model}" if model else "rules"
    if agentic is not None:
        source = (
            f"agentic ({agentic.name}) on {agentic_count} kept machine(s), "
            f"{source} for the {count - agentic_count} without one"
        )
    return DiagnoseResult(count, source, md, csv)

"""A small hand-made run (two agents, three tasks) whose every number the tests compute by
hand. Kept as code, not files, so the hand computation sits next to what it counts."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from deploybench.paths import TASKS_DIR

TASKS = {
    # id: domain, difficulty, legacy, entry_points (None: from the designated experiment)
    "t1_hand24": ("ai_ml", "easy", False, ["python train.py"]),
    "t2_hand24": ("systems", "hard", True, None),
    "t3_hand24": ("scientific", "medium", False, ["make check"]),
}


def cmd(step, command, exit_code=0, soft=False):
    return {
        "step": step,
        "t": float(step),
        "kind": "command",
        "command": command,
        "exit_code": exit_code,
        "soft_timeout": soft,
    }


def ev(step, kind, **extra):
    return {"step": step, "t": float(step), "kind": kind, **extra}


def verdict(passed, category=None, evidence=(), checks=()):
    return {
        "passed": passed,
        "layer1": {"passed": category is None, "category": category, "evidence": list(evidence)},
        "layer2": {
            "passed": passed,
            "checks": [{"name": n, "passed": p, "detail": d} for n, p, d in checks],
        },
        "seconds": 3.0,
    }


# (agent, model, task, attempt, result fields, trajectory or None, verdict or None)
ATTEMPTS = [
    (
        "alpha",
        "m1",
        "t1_hand24",
        1,
        dict(
            passed=True,
            stop_type="self_stop",
            runbook_status="SUCCESS",
            steps=6,
            tokens_in=1000,
            tokens_out=100,
            agent_seconds=600,
        ),
        [
            cmd(1, "ls -la && cat README.md"),
            cmd(2, "pip install numpy", 1),
            cmd(3, "pip install numpy==1.23.5"),
            cmd(4, "python train.py --epochs 1"),
            cmd(5, "printf 'STATUS: SUCCESS\\n' > RUNBOOK.MD"),
            ev(6, "finish"),
        ],
        verdict(True, checks=[("metrics", True, "ok")]),
    ),
    (
        "alpha",
        "m1",
        "t2_hand24",
        1,
        dict(
            passed=False,
            stop_type="self_stop",
            runbook_status="SUCCESS",
            steps=6,
            tokens_in=2000,
            tokens_out=200,
            agent_seconds=1200,
            failure_layer=1,
            failure_category="compilation",
        ),
        [
            ev(1, "message", output="plan"),
            cmd(2, "make", 2),
            cmd(3, "make", 2),
            cmd(4, "python -c 'import sim'"),
            cmd(5, "echo 'STATUS: SUCCESS' > RUNBOOK.MD"),
            ev(6, "finish"),
        ],
        verdict(
            False,
            "compilation",
            ["build.log:3: sim.c:10: error: unknown type name"],
            [("binary_runs", False, "./bin/sim missing")],
        ),
    ),
    (
        "alpha",
        "m1",
        "t3_hand24",
        1,
        dict(status="infra_error", passed=None, stop_type=None, steps=None, agent_seconds=None),
        None,
        None,
    ),
    (
        "alpha",
        "m1",
        "t3_hand24",
        2,
        dict(
            passed=False,
            stop_type="timeout",
            runbook_status=None,
            steps=3,
            tokens_in=500,
            tokens_out=50,
            agent_seconds=1800,
            failure_layer=2,
            failure_category="task_check",
        ),
        [
            cmd(1, "make check", 2),
            cmd(2, "tail -n 20 build.log"),
            cmd(3, "sleep 100", -1, soft=True),
        ],
        verdict(False, checks=[("check_output", False, "output does not match expected")]),
    ),
    (
        "beta",
        None,
        "t1_hand24",
        1,
        dict(
            passed=False,
            stop_type="self_stop",
            runbook_status="PARTIAL",
            steps=4,
            agent_seconds=300,
            failure_layer=1,
            failure_category="dependency",
        ),
        [
            ev(1, "task_tracker"),
            ev(2, "file_edit", path="train.py"),
            cmd(3, "cat > cfg.ini <<'EOF'\na && b\nEOF\npython train.py --epochs 1", 1),
            ev(4, "finish"),
        ],
        verdict(
            False,
            "dependency",
            ["train.log:1: ModuleNotFoundError: No module named 'numpy'"],
            [("metrics", False, "not run")],
        ),
    ),
    (
        "beta",
        None,
        "t1_hand24",
        2,
        dict(
            passed=True, stop_type="self_stop", runbook_status="SUCCESS", steps=1, agent_seconds=60
        ),
        [ev(1, "finish")],
        None,
    ),  # no verdict.json: the report notes it
    (
        "beta",
        None,
        "t2_hand24",
        1,
        dict(
            passed=True, stop_type="self_stop", runbook_status="SUCCESS", steps=2, agent_seconds=900
        ),
        [cmd(1, "./bin/sim --steps 3"), ev(2, "finish")],
        verdict(True, checks=[("binary_runs", True, "ok")]),
    ),
    (
        "beta",
        None,
        "t3_hand24",
        1,
        dict(
            passed=False,
            stop_type="max_steps",
            runbook_status=None,
            steps=2,
            agent_seconds=600,
            failure_layer=1,
            failure_category="runtime_crash",
        ),
        [cmd(1, "timeout 5 make check", -1, soft=True), cmd(2, "")],
        verdict(False, "runtime_crash", ["run.log:5: Segmentation fault (core dumped)"]),
    ),
]


def write_catalog(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASKS_DIR / "schema.json", folder / "schema.json")
    for task_id, (domain, difficulty, legacy, points) in TASKS.items():
        task = {
            "id": task_id,
            "title": task_id,
            "venue": "hand",
            "year": 2024,
            "domain": domain,
            "difficulty": difficulty,
            "gpu": False,
            "qemu": False,
            "legacy": legacy,
            "languages": ["Python"],
            "repo": {
                "url": "https://example.org/x.git",
                "commit": "0" * 40,
                "commit_date": "2024-01-01",
                "ref": "main",
                "pin_reason": "made up for the analysis tests",
            },
            "paper": {"title": "A made-up paper", "url": "https://example.org/x.pdf"},
            "agent_minutes": 30,
            "verify_minutes": 10,
            "max_steps": 100,
            "machine": {"type": "1cpu", "vcpus": 1, "memory_gb": 1, "disk_gb": 1, "gpu_count": 0},
            "designated_experiment": "Build, then run `./bin/sim --steps 3`.",
            "validated": None,
        }
        if points:
            task["entry_points"] = points
        (folder / task_id).mkdir(exist_ok=True)
        (folder / task_id / "task.yaml").write_text(yaml.safe_dump(task))
    return folder


def write_run(run_dir: Path) -> Path:
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for agent, model, task_id, attempt, fields, trajectory, verdict_ in ATTEMPTS:
        row = {
            "run_id": run_dir.name,
            "task_id": task_id,
            "agent": agent,
            "model": model,
            "backend": "local",
            "attempt": attempt,
            "status": "completed",
            "stop_type": None,
            "runbook_status": None,
            "passed": None,
            "failure_layer": None,
            "failure_category": None,
            "agent_seconds": None,
            "verify_seconds": 3.0,
            "steps": None,
            "tokens_in": None,
            "tokens_out": None,
            "cost_usd": None,
            "started_at": "2026-01-01T00:00:00Z",
            "finished_at": "2026-01-01T00:10:00Z",
        }
        row.update(fields)
        lines.append(json.dumps(row))
        folder = run_dir / task_id / agent / str(attempt)
        if trajectory is not None:
            folder.mkdir(parents=True, exist_ok=True)
            (folder / "trajectory.jsonl").write_text(
                "".join(json.dumps(e) + "\n" for e in trajectory)
            )
        if verdict_ is not None:
            (folder / "verdict.json").write_text(json.dumps(verdict_))
    (run_dir / "results.jsonl").write_text("\n".join(lines) + "\n")
    return run_dir


def build(tmp: Path) -> tuple[Path, Path]:
    """(run_dir, catalog_dir) of the hand-made run under tmp."""
    return write_run(tmp / "runs" / "hand"), write_catalog(tmp / "tasks")

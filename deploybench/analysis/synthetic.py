"""Synthetic runs in the contract layout, for the benchmark and tests: a small task catalog
and a run folder with results.jsonl, trajectories, verdicts and runbooks. Deterministic for a
seed. Commands come from a realistic vocabulary with varying arguments, so that they repeat the
way agents' commands do (which is what the report's caches rely on)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import yaml

from deploybench import runfolder
from deploybench.catalog import Task
from deploybench.paths import TASKS, TASKS_DIR

# One run folder keeps an attempt at <task>/<agent>/<n>: each agent name appears once here, or
# two agents' attempts would share (and overwrite) one folder.
AGENTS = [
    ("openhands", "gpt-5.3-codex"),
    ("claude-code", "gemini-3.1-pro"),
    ("mini-swe-agent", "grok-4.20"),
    ("codex", None),
]
DOMAINS = ["ai_ml"] * 5 + ["systems"] * 4 + ["scientific"] * 1
DIFFICULTIES = ["easy", "medium", "medium", "hard", "hard"]

_VOCABULARY = [
    "ls -la",
    "ls {dir}",
    "find . -name '*.py' | head -{n}",
    "grep -rn '{word}' {dir}",
    "git status && git log --oneline | head -{n}",
    "cat README.md",
    "cat {dir}/{file}.py",
    "sed -n '1,{n}p' {file}.py",
    "tail -n {n} build.log",
    "nvidia-smi",
    "python3 --version && pip --version",
    "uname -a; df -h",
    "pip list | grep -i {pkg}",
    "sudo apt-get update && sudo apt-get install -y {apt}",
    "pip install {pkg}=={ver}",
    "pip install -r requirements.txt",
    "python3 -m venv env && . env/bin/activate && pip install -U pip",
    "make -j{n}",
    "cmake -S . -B build && cmake --build build -j{n}",
    "cd build && make clean && make",
    "sed -i 's/{word}/{word}2/' {file}.py",
    "cat > {file}.cfg <<'EOF'\n[main]\npath = {dir}\nsteps = {n}\nEOF",
    "export CUDA_HOME=/usr/local/cuda-12.{n}",
    "mkdir -p {dir} && chmod +x scripts/*.sh",
    "wget -q https://example.org/{file}.tar.gz && tar xzf {file}.tar.gz",
    "git clone https://example.org/{word}.git {dir}",
    "python train.py --epochs 1 --out runs/{word}",
    "python -c 'import {pkg}; print({pkg}.__version__)'",
    "pytest -x -q tests/test_{file}.py",
    "./bin/{file} --input data/{file}.txt",
    "nohup python server.py --port 80{n} > server.log 2>&1 &",
    "curl -s localhost:80{n}/health",
    "x=$(ls {dir} && echo done) && echo $x",
    "(cd {dir} && make check) || echo failed",
]
_FILL = {
    "dir": ["src", "data", "scripts", "build", "configs", "third_party"],
    "file": ["main", "model", "utils", "train", "server", "eval", "setup"],
    "word": ["torch", "cuda", "TODO", "error", "config", "seed"],
    "pkg": ["numpy", "torch", "scipy", "flask", "jax", "pandas"],
    "ver": ["1.23.5", "2.0.1", "1.10.1", "2.0.3", "0.4.13"],
    "apt": ["build-essential", "python3-venv", "cmake", "libopenblas-dev"],
    "n": ["1", "2", "4", "8", "20", "50"],
}
_CATEGORIES = ["runtime_crash", "dependency", "compilation", "oom"]


def _fill(rng: random.Random, template: str) -> str:
    out = template
    for key, values in _FILL.items():
        token = "{" + key + "}"
        while token in out:
            out = out.replace(token, rng.choice(values), 1)
    return out


def write_catalog(folder: Path, n_tasks: int, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TASKS_DIR / "schema.json", folder / "schema.json")
    ids = []
    for i in range(n_tasks):
        task_id = f"synth{i:03d}_bench24"
        gpu = rng.random() < 0.4
        task = {
            "id": task_id,
            "title": f"Synthetic task {i}",
            "venue": "bench",
            "year": 2024,
            "domain": DOMAINS[i % len(DOMAINS)],
            "difficulty": DIFFICULTIES[i % len(DIFFICULTIES)],
            "gpu": gpu,
            "qemu": False,
            "legacy": i % 5 == 0,
            "languages": ["Python"],
            "repo": {
                "url": f"https://example.org/{task_id}.git",
                "commit": "0" * 40,
                "commit_date": "2024-01-01",
                "ref": "main",
                "pin_reason": "made up for the analysis tests",
            },
            "paper": {"title": "A made-up paper", "url": f"https://example.org/{task_id}.pdf"},
            "agent_minutes": 30,
            "verify_minutes": 10,
            "max_steps": 100,
            "machine": {
                "type": "1gpu" if gpu else "1cpu",
                "vcpus": 16,
                "memory_gb": 64,
                "disk_gb": 100,
                "gpu_count": int(gpu),
            },
            "entry_points": ["python train.py", "./bin/main"],
            "designated_experiment": "Run `python train.py --epochs 1`.",
            "validated": None,
        }
        home = Task(task_id, tasks_dir=folder)
        home.folder.mkdir(exist_ok=True)
        home.file.write_text(yaml.safe_dump(task, sort_keys=False))
        ids.append(task_id)
    return ids


def write_run(
    run_dir: Path,
    task_ids: list[str],
    n_attempts: int,
    n_commands: int,
    seed: int = 0,
    agents: list[tuple[str, str | None]] | None = None,
) -> None:
    """n_attempts attempts spread over agents x tasks x attempt numbers, n_commands commands
    each (plus messages, thoughts, some structured file actions and a finish)."""
    rng = random.Random(seed)
    agents = agents or AGENTS
    names = [name for name, _ in agents]
    if len(set(names)) != len(names):
        raise ValueError(f"agent names repeat ({names}): their attempts would share folders")
    run_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for k in range(n_attempts):
        agent, model = agents[k % len(agents)]
        task_id = task_ids[(k // len(agents)) % len(task_ids)]
        attempt = k // (len(agents) * len(task_ids)) + 1
        skill = 0.5 - 0.12 * (k % len(agents))
        passed = rng.random() < skill
        stop = "self_stop" if passed or rng.random() < 0.6 else rng.choice(["timeout", "max_steps"])
        folder = runfolder.attempt_dir(run_dir, task_id, agent, attempt)
        folder.mkdir(parents=True, exist_ok=True)
        events, t, tokens_in, tokens_out = [], 0.0, 0, 0
        step = 0
        for _ in range(n_commands):
            step += 1
            t += rng.uniform(1, 20)
            roll = rng.random()
            if roll < 0.1:
                events.append({"step": step, "t": round(t, 2), "kind": "message", "output": "ok"})
            elif roll < 0.13:
                events.append({"step": step, "t": round(t, 2), "kind": "file_read", "path": "x"})
            soft = rng.random() < 0.01
            fail = soft or rng.random() < 0.15
            tin, tout = rng.randint(500, 4000), rng.randint(20, 400)
            tokens_in, tokens_out = tokens_in + tin, tokens_out + tout
            events.append(
                {
                    "step": step,
                    "t": round(t, 2),
                    "kind": "command",
                    "command": _fill(rng, rng.choice(_VOCABULARY)),
                    "exit_code": -1 if soft else (rng.choice([1, 2, 127]) if fail else 0),
                    "soft_timeout": soft,
                    "output": "error: something failed" if fail else "ok",
                    "tokens_in": tin,
                    "tokens_out": tout,
                }
            )
        if stop == "self_stop":
            events.append(
                {
                    "step": step + 1,
                    "t": round(t + 1, 2),
                    "kind": "command",
                    "command": "printf 'STATUS: SUCCESS\\n' > RUNBOOK.MD",
                    "exit_code": 0,
                }
            )
            events.append({"step": step + 2, "t": round(t + 2, 2), "kind": "finish"})
        (folder / runfolder.TRAJECTORY).write_text("".join(json.dumps(e) + "\n" for e in events))
        category = None if passed else rng.choice(_CATEGORIES + ["task_check"] * 4)
        layer = None if passed else (2 if category == "task_check" else 1)
        verdict = {
            "passed": passed,
            "layer1": {
                "passed": layer != 1,
                "category": category if layer == 1 else None,
                "evidence": [f"run.log:3: {category} error"] if layer == 1 else [],
            },
            "layer2": {
                "passed": passed,
                "checks": [
                    {
                        "name": "metrics",
                        "passed": passed,
                        "detail": "ok" if passed else "metrics.json does not match",
                    }
                ],
            },
            "seconds": 12.5,
        }
        (folder / runfolder.VERDICT).write_text(json.dumps(verdict))
        runbook = "SUCCESS" if passed or rng.random() < 0.5 else rng.choice(["PARTIAL", "FAILED"])
        (folder / runfolder.RUNBOOK).write_text(f"STATUS: {runbook}\n")
        lines.append(
            {
                "run_id": run_dir.name,
                "task_id": task_id,
                "agent": agent,
                "model": model,
                "backend": "local",
                "attempt": attempt,
                "status": "completed",
                "stop_type": stop,
                "runbook_status": runbook if stop == "self_stop" else None,
                "passed": passed,
                "failure_layer": layer,
                "failure_category": category,
                "agent_seconds": round(t, 2),
                "verify_seconds": 12.5,
                "steps": step,
                "tokens_in": tokens_in,
                "tokens_out": tokens_out,
                "cost_usd": round(tokens_in * 1e-6 + tokens_out * 4e-6, 4),
                "started_at": "2026-01-01T00:00:00Z",
                "finished_at": "2026-01-01T01:00:00Z",
            }
        )
    with (run_dir / runfolder.RESULTS).open("w") as fh:
        fh.writelines(json.dumps(line, sort_keys=True) + "\n" for line in lines)


def generate(out: Path, n_attempts: int, n_commands: int, n_tasks: int = 50, seed: int = 0):
    """(run_dir, catalog_dir) of a fresh synthetic run under `out`."""
    catalog = out / TASKS
    ids = write_catalog(catalog, n_tasks, seed)
    run_dir = out / "runs" / "synthetic"
    write_run(run_dir, ids, n_attempts, n_commands, seed)
    return run_dir, catalog

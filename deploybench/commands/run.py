"""run and validate-references: thin wrappers over runner.Runner."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
from rich.console import Console
from rich.table import Table

from deploybench.agents import load_agent
from deploybench.backends import get_backend
from deploybench.catalog import load_tasks
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR, runs_dir
from deploybench.runner import Runner, RunOptions, now


def _select_tasks(tasks_arg: str | None, demo: bool) -> dict[str, dict]:
    catalog = load_tasks()
    if demo:
        chosen = {k: v for k, v in catalog.items() if v.get("demo")}
    elif tasks_arg:
        ids = [t.strip() for t in tasks_arg.split(",") if t.strip()]
        unknown = [t for t in ids if t not in catalog]
        if unknown:
            raise DeployBenchError(
                f"unknown task(s): {', '.join(unknown)} (see deploybench tasks list)"
            )
        chosen = {t: catalog[t] for t in ids}
    else:
        raise DeployBenchError("name the tasks: --tasks ID,ID... or --demo")
    if not chosen:
        raise DeployBenchError("no task selected")
    return chosen


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def results_table(rows: list[dict]) -> Table:
    table = Table(
        "task",
        "agent",
        "verdict",
        "failed at",
        "runbook claims",
        "stop",
        "agent s",
        "verify s",
        title="DeployBench results",
    )
    for r in sorted(rows, key=lambda r: (r["task_id"], r["agent"], r["attempt"])):
        if r["status"] != "completed":
            verdict, where = "[yellow]INFRA", "-"
        elif r["passed"]:
            verdict, where = "[green]PASS", "-"
        else:
            verdict, where = "[red]FAIL", f"layer {r['failure_layer']}: {r['failure_category']}"
        claim = r["runbook_status"] or "(no runbook)"
        if r["runbook_status"] == "SUCCESS" and r["passed"] is False:
            claim = "[bold red]SUCCESS (overclaim)"
        table.add_row(
            r["task_id"],
            r["agent"],
            verdict,
            where,
            claim,
            r["stop_type"] or "-",
            _seconds(r["agent_seconds"]),
            _seconds(r["verify_seconds"]),
        )
    return table


def execute(
    backend: str,
    agent: str,
    tasks: str | None,
    demo: bool,
    parallel: int,
    attempts: int,
    run_id: str | None,
    resume: bool,
    agent_config: Path | None,
    agent_seconds: int | None,
    image: str | None,
    upload: str | None,
    yes: bool,
    llm_base_url: str | None = None,
    source_mirror: Path | None = None,
) -> tuple[Path, list[dict]]:
    run_id = run_id or f"run-{now().replace(':', '').replace('-', '').lower()}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", run_id):
        raise DeployBenchError(f"bad --run-id {run_id!r}: letters, digits, . _ - only")
    run_dir = runs_dir() / run_id
    meta_file = run_dir / "run.json"
    if run_dir.exists() and not resume:
        raise DeployBenchError(
            f"run {run_id} exists in {run_dir}: add --resume, or pick a new --run-id"
        )
    if resume and meta_file.is_file():
        meta = json.loads(meta_file.read_text())
        tasks = tasks or ",".join(meta["tasks"])
        agent = agent or ",".join(meta["agents"])
        backend = meta["backend"]
    chosen = _select_tasks(tasks, demo and not tasks)
    agent_names = [a.strip() for a in (agent or "").split(",") if a.strip()]
    if not agent_names:
        raise DeployBenchError("name the agents: --agent reference,nop,...")
    agents = [load_agent(name, agent_config, llm_base_url) for name in agent_names]
    from deploybench import sources

    # Sources before machines: a commit or repository that cannot be had is one line, no machine.
    sources.ensure(chosen, source_mirror)
    chosen_backend = get_backend(backend)
    chosen_backend.sanity_check()
    if backend in ("aws", "gcp"):
        from deploybench import costs

        costs.estimate_and_confirm(backend, chosen, agents, attempts, yes)
    run_dir.mkdir(parents=True, exist_ok=True)
    meta_file.write_text(
        json.dumps(
            {
                "run_id": run_id,
                "backend": backend,
                "tasks": list(chosen),
                "agents": agent_names,
                "attempts": attempts,
                "created_at": now(),
            },
            indent=2,
        )
    )
    runner = Runner(
        RunOptions(
            run_dir=run_dir,
            backend=chosen_backend,
            tasks=chosen,
            agents=agents,
            attempts=attempts,
            parallel=parallel,
            image=image,
            agent_seconds=agent_seconds,
            upload=upload,
        )
    )
    return run_dir, runner.run()


@click.command()
@click.option("--backend", default="local", show_default=True, help="local, aws or gcp.")
@click.option(
    "--agent",
    "--agents",
    "agent",
    default=None,
    help="Agents, comma-separated: reference, nop, overclaim, or a name from --agent-config.",
)
@click.option("--tasks", default=None, help="Task ids, comma-separated.")
@click.option("--demo", is_flag=True, help="All demo tasks.")
@click.option(
    "--parallel",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="Attempts running at once (one machine each).",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 100),
    default=1,
    show_default=True,
    help="Attempts per task and agent.",
)
@click.option("--run-id", default=None, help="Folder name under runs/ (default: a timestamp).")
@click.option("--resume", is_flag=True, help="Continue a run: finished attempts are skipped.")
@click.option(
    "--agent-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="YAML file of command agents: {name: {command, install, model, ...}}.",
)
@click.option(
    "--llm-base-url",
    default=None,
    help="OpenAI-compatible endpoint for command agents ({llm_base_url}; overrides base_url).",
)
@click.option(
    "--agent-seconds",
    type=click.IntRange(1),
    default=None,
    help="Override every task's agent budget (seconds).",
)
@click.option("--image", default=None, help="Machine image (local: debian12 or debian13).")
@click.option(
    "--upload", default=None, help="s3://bucket/prefix: upload each attempt when it ends."
)
@click.option("--yes", is_flag=True, help="Skip the cost confirmation of cloud runs.")
@click.option(
    "--source-mirror",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of git repositories (<owner>/<name> or <owner>+<name>) to take task sources "
    "from instead of the network (see deploybench sources sync).",
)
def run(**kwargs) -> None:
    """Run agents on tasks: a fresh machine per attempt, destroyed after; the hidden verifier
    judges each; results go to runs/<run-id>/results.jsonl. Ctrl-C leaves no machine behind;
    --resume continues where the run stopped."""
    run_dir, rows = execute(**kwargs)
    Console(width=160).print(results_table(rows))
    click.echo(f"results: {run_dir / 'results.jsonl'}")


def record_validated(path: Path, row: dict, image: str) -> None:
    """Rewrite the task's top-level `validated:` entry in place (the rest of the file as is)."""
    text = path.read_text()
    entry = (
        f'validated:\n  at: "{row["finished_at"]}"\n  backend: {row["backend"]}\n'
        f"  image: {image}\n  run_id: {row['run_id']}\n"
    )
    new, count = re.subn(r"^validated:.*\n(?:[ \t]+.*\n)*", entry, text, flags=re.M)
    if count != 1:
        new = text.rstrip("\n") + "\n" + entry
    path.write_text(new)


@click.command("validate-references")
@click.option("--tasks", default=None, help="Task ids, comma-separated.")
@click.option("--demo", is_flag=True, help="All demo tasks.")
@click.option("--backend", default="local", show_default=True)
@click.option("--image", default=None)
@click.option("--parallel", type=click.IntRange(1, 64), default=1, show_default=True)
@click.option(
    "--source-mirror",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="Folder of git repositories (<owner>/<name> or <owner>+<name>) to take task sources "
    "from instead of the network (see deploybench sources sync).",
)
def validate_references(
    tasks: str | None,
    demo: bool,
    backend: str,
    image: str | None,
    parallel: int,
    source_mirror: Path | None,
) -> None:
    """Run the reference setup of each task on a fresh machine and record in its task.yaml
    when and where it passed the verifier. A failure leaves the record as it was."""
    run_dir, rows = execute(
        backend,
        "reference",
        tasks,
        demo or not tasks,
        parallel,
        1,
        None,
        False,
        None,
        None,
        image,
        None,
        True,
        source_mirror=source_mirror,
    )
    Console(width=160).print(results_table(rows))
    failed = []
    for row in rows:
        if row["passed"]:
            record_validated(
                TASKS_DIR / row["task_id"] / "task.yaml",
                row,
                image or get_backend(backend).default_image,
            )
            click.echo(f"{row['task_id']}: validated ({row['finished_at']}, {row['backend']})")
        else:
            why = (
                f"layer {row['failure_layer']} {row['failure_category']}"
                if row["status"] == "completed"
                else "infrastructure error"
            )
            failed.append(row["task_id"])
            click.echo(f"{row['task_id']}: NOT validated ({why}); evidence in {run_dir}")
    if failed:
        raise DeployBenchError(f"reference setup failed for {', '.join(failed)}")

"""sources sync, sources list and stage: thin wrappers over deploybench.catalog.sources and the
stage_task playbook."""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from deploybench import runfolder
from deploybench.catalog import load_tasks, sources, staging
from deploybench.errors import DeployBenchError
from deploybench.progress import status_line

SHOWN_MISSING = 5  # per task in sync's output; staging.json and list --json name every one
MIRROR_HELP = (
    "Folder of existing git repositories (bare or not, <owner>/<name> or <owner>+<name>) "
    "to take sources from instead of the network; papers as DIR/papers/<task>.pdf."
)


def mirror_option(function):
    return click.option(
        "--source-mirror",
        type=click.Path(exists=True, file_okay=False, path_type=Path),
        default=None,
        help=MIRROR_HELP,
    )(function)


def select(tasks_arg: str | None) -> dict[str, dict[str, Any]]:
    """The named tasks, or every catalog task (demo tasks need no source cache)."""
    catalog = load_tasks()
    if not tasks_arg:
        return {k: v for k, v in catalog.items() if not sources.is_demo(v)}
    ids = [t.strip() for t in tasks_arg.split(",") if t.strip()]
    unknown = [t for t in ids if t not in catalog]
    if unknown:
        raise DeployBenchError(
            f"unknown task(s): {', '.join(unknown)} (see deploybench tasks list)"
        )
    return {t: catalog[t] for t in ids}


def human(size: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return str(size)


@click.group("sources")
def sources_group() -> None:
    """The controller's source cache: task repositories at their pinned commits, and papers."""


@sources_group.command("sync")
@click.option("--tasks", default=None, help="Task ids, comma-separated (default: every task).")
@mirror_option
def sync(tasks: str | None, source_mirror: Path | None) -> None:
    """Fetch each task's pinned commit (and pinned submodules, and paper PDF) into the cache,
    from the repository's URL or from --source-mirror. Cached commits are not fetched again."""
    chosen = select(tasks)
    problems: list[str] = []
    with status_line(f"syncing sources of {len(chosen)} task(s)", problems) as update:
        records = staging.sync(chosen, source_mirror, on_step=update, problems=problems)
        for task_id, r in records.items():
            needed = sources.needed_missing(chosen[task_id], sources.all_missing(r))
            if needed:  # cached, but it cannot be staged: a run of it would be refused
                problems.append(f"{task_id}: {sources.needed_message(needed)}")
    table = Table(
        "task", "repository", "commit", "submodules", "missing files", "staged", "paper", "from"
    )
    for task_id, r in records.items():
        missing = sources.all_missing(r)
        needed = sources.needed_missing(chosen[task_id], missing)
        table.add_row(
            task_id,
            r["repo"].removesuffix(".git"),
            r["commit"],
            str(len(r["submodules"])),
            f"{len(missing)}" + (f" ([red]{len(needed)} needed[/red])" if needed else ""),
            human(r["staged"]["tar_bytes"]) if "staged" in r else "-",
            r["paper"]["status"],
            r["from"],
        )
    if records:
        Console(width=200).print(table)
    for task_id, r in records.items():
        missing = sources.all_missing(r)
        for path in missing[:SHOWN_MISSING]:
            click.echo(f"{task_id}: the source lacks {path} (not staged)")
        if len(missing) > SHOWN_MISSING:
            click.echo(
                f"{task_id}: ... and {len(missing) - SHOWN_MISSING} more missing files "
                f"(every one: deploybench sources list --json; staging.json of each attempt)"
            )
    for line in problems:
        click.echo(f"deploybench: error: {line}", err=True)
    if problems:
        raise DeployBenchError(f"{len(problems)} of {len(chosen)} task(s) could not be synced")


@sources_group.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print the rows as JSON.")
def list_cached(as_json: bool) -> None:
    """Show each cached repository, the commits checked for which tasks, and its size."""
    rows = sources.listing()
    if as_json:
        click.echo(json.dumps(rows, indent=2))
        return
    if not rows:
        click.echo(f"the source cache is empty ({sources.cache_root()})")
        return
    table = Table("repository", "commit", "tasks", "missing files", "size")
    for row in rows:
        commits = row["commits"] or {"-": {"tasks": [], "missing_files": []}}
        for n, (commit, seen) in enumerate(sorted(commits.items())):
            table.add_row(
                row["repo"].removesuffix(".git") if n == 0 else "",
                commit if commit != "-" else "(no task checked)",
                ", ".join(seen["tasks"]) or "-",
                str(len(seen["missing_files"])),
                human(row["bytes"]) if n == 0 else "",
            )
    Console(width=200).print(table)
    click.echo(f"cache: {sources.cache_root()}")


def _events_seconds(events: list[dict[str, Any]], role: str) -> float | None:
    """Wall seconds of one role's tasks, from ansible-runner's event timestamps."""
    stamps = [
        datetime.fromisoformat(e["created"])
        for e in events
        if (e.get("event_data") or {}).get("role") == role and e.get("created")
    ]
    return (max(stamps) - min(stamps)).total_seconds() if len(stamps) > 1 else None


def _failure(events: list[dict[str, Any]]) -> str:
    for event in reversed(events):
        if event.get("event") in ("runner_on_failed", "runner_on_unreachable"):
            data = event.get("event_data") or {}
            res = data.get("res") or {}
            msg = res.get("msg") or res.get("stderr") or "failed"
            return f"{data.get('task', 'a task')}: {str(msg).strip().splitlines()[-1]}"
    return "the staging playbook failed (see its events in the stage folder)"


@click.command("stage")
@click.option("--task", "task_id", required=True, help="The task to stage.")
@mirror_option
@click.option("--backend", default="local", show_default=True, help="local, aws or gcp.")
@click.option("--image", default=None, help="Machine image (local: debian12 or debian13).")
@click.option("--keep", is_flag=True, help="Keep the machine (ssh in; destroy it later).")
def stage(
    task_id: str, source_mirror: Path | None, backend: str, image: str | None, keep: bool
) -> None:
    """Put one task's pinned tree and paper on a fresh machine, without an agent: the
    validate, prepare and stage part of the run pipeline (playbooks/stage_task.yml). Prints
    the time it took and what was staged; destroys the machine unless --keep."""
    from deploybench.attempt import ansible
    from deploybench.backends import MachineRequest, deployments, get_backend, inventory
    from deploybench.paths import PLAYBOOKS_DIR, runs_dir

    task = select(task_id)[task_id]
    # Sources first: a missing commit or repository is one line, and no machine is made.
    staging.ensure({task_id: task}, source_mirror)
    chosen = get_backend(backend)
    chosen.sanity_check()
    stamp = datetime.now().strftime("%Y%m%dt%H%M%S")
    folder = runs_dir() / f"stage-{stamp}" / task_id
    folder.mkdir(parents=True, exist_ok=True)
    request = MachineRequest(
        run_id=deployments.new_id(),
        image=image,
        disk_gb=max(8, int((task.get("machine") or {}).get("disk_gb", 100))),
        tags={"task": task_id, "stage": "1"},
    )
    started = time.monotonic()
    deployment, machines = deployments.provision(backend, request)
    provisioned = time.monotonic() - started
    events: list[dict[str, Any]] = []
    try:
        result = ansible.run_playbook(
            PLAYBOOKS_DIR / "stage_task.yml",
            inventory.as_data(machines),
            {
                "task_id": task_id,
                "agent": "nop",
                "stage_only": True,
                "attempt_dir": str(folder.resolve()),
            },
            folder / runfolder.ANSIBLE_DIR,
            on_event=events.append,
        )
        if not result.ok:
            raise DeployBenchError(f"{task_id}: staging failed: {_failure(events)}")
        record = runfolder.read_json(folder / runfolder.STAGING)
        _report(task_id, task, record, _events_seconds(events, "artifact_stage"), provisioned)
        click.echo(f"records: {folder / runfolder.STAGING}")
    finally:
        if keep:
            machine = next(iter(machines.values()))
            click.echo(f"kept: {inventory.ssh_command(machine)}")
            click.echo(f"destroy with: deploybench destroy --deployment {deployment.name}")
        else:
            deployments.destroy(deployment.name)


def _report(
    task_id: str,
    task: dict[str, Any],
    record: dict[str, Any],
    seconds: float | None,
    provisioned: float,
) -> None:
    workdir = f"/home/vm/Desktop/{task_id}"
    click.echo(
        f"staged {task_id} at {record['repo']['commit']} into {workdir}: "
        f"git status clean at the pinned commit"
    )
    if "files" in record:
        click.echo(
            f"  {record['files']} files, {human(record['tree_bytes'])} tree, "
            f"tarball {human(record['tar_bytes'])} "
            + (
                "(reused from the cache)"
                if record["reused"]
                else f"(built in {record['build_seconds']:.1f} s)"
            )
        )
    for sub in record.get("submodules", []):
        click.echo(f"  submodule {sub['path']} at {sub['commit']}")
    for path in record.get("missing_files", []):
        click.echo(f"  missing from the source (not staged, not needed): {path}")
    paper = record["paper"]
    if paper["status"] == "cached":
        click.echo("  paper: paper.pdf")
    elif paper["status"] == "text":  # a demo task's paper is its text
        click.echo(f"  paper: {', '.join(paper['staged'])} (the task's paper text)")
    else:
        text = ", ".join(paper["staged"]) or "no paper text either"
        click.echo(f"  paper: MISSING ({paper['reason']}); staged instead: {text}")
    figure = f"{seconds:.1f} s" if seconds is not None else "unknown"
    click.echo(f"stage time: {figure} (machine provisioned in {provisioned:.1f} s)")

"""tasks list | show | validate: thin wrappers over deploybench.catalog."""

from __future__ import annotations

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from deploybench import catalog
from deploybench.catalog.selection import Selection, select
from deploybench.commands.selection import selection_options
from deploybench.errors import DeployBenchError


@click.group()
def tasks() -> None:
    """List, show, validate and add tasks of the catalog (tasks/<id>/task.yaml)."""


def _yes(value: object) -> str:
    return "yes" if value else "no"


@tasks.command("list")
@click.option(
    "--demo/--catalog", "demo", default=None, help="Only demo tasks / only catalog tasks."
)
@click.option(
    "--long",
    "long_",
    is_flag=True,
    help="Add how far each reference setup got where it cannot finish here "
    "(validate-references --until-blocked): steps reached, the step it stopped at, by what, why.",
)
@selection_options(with_ids=False)
def list_tasks(demo: bool | None, long_: bool, selection: Selection) -> None:
    """Print a table of the tasks and, under it, the catalog's counts next to the paper's.

    Columns: id, domain, difficulty, gpu, qemu, legacy, main language, the pinned commit,
    whether the reference setup and the verifier are written (setup/verifier), and when the
    reference setup last passed its verifier. Demo tasks are marked and never counted.
    With --long, the prefix validation's columns too."""
    all_tasks = catalog.load_tasks()
    shown = select(all_tasks, selection) if selection.filtered else all_tasks
    table = Table(
        "id", "domain", "difficulty", "gpu", "qemu", "legacy", "language", "commit",
        "setup/verifier", "demo", "validated",
    )  # fmt: skip
    if long_:
        for column in ("steps ok", "stopped at", "by", "why (prefix validation)"):
            table.add_column(column, overflow="fold")
    for task_id, t in sorted(shown.items()):
        if demo is not None and bool(t.get("demo")) != demo:
            continue
        v = t.get("validated")
        validated = f"{v['at']} ({v['backend']}/{v['image']})" if v else "never"
        if v and v.get("cpu_only"):
            validated += " CPU only, no GPU checks"
        homes = catalog.homes(task_id)
        table.add_row(
            task_id,
            t["domain"],
            t["difficulty"],
            _yes(t["gpu"]),
            _yes(t["qemu"]),
            _yes(t["legacy"]),
            t["languages"][0],
            t["repo"]["commit"][:10],
            f"{_yes(homes['reference_setup'])}/{_yes(homes['verifier'])}",
            _yes(t.get("demo")),
            validated,
            *(_prefix_cells(t.get("prefix_validation")) if long_ else ()),
        )
    console = Console(width=320 if long_ else 200)
    console.print(table)
    if demo is not True:
        console.print(_summary(all_tasks), highlight=False)


def _prefix_cells(prefix: dict | None) -> tuple[str, str, str, str]:
    if not prefix:
        return "", "", "", "not tried"
    at = f" ({prefix['at'][:10]}, {prefix['harness_commit']})"
    # What a machine said, shown as it is: a "[error]" in a build log is no markup.
    return (
        str(prefix["steps_ok"]),
        escape(prefix.get("stopped_at", "(its end)")),
        prefix["stopped_by"],
        escape(prefix["why"][:200] + at),
    )


def _summary(all_tasks: dict[str, dict]) -> str:
    have = catalog.counts(all_tasks)
    want = catalog.PAPER_COUNTS
    catalog_ids = catalog.catalog_tasks(all_tasks)
    written = sum(all(catalog.homes(i).values()) for i in catalog_ids)
    records = [t["validated"] for t in catalog_ids.values() if t.get("validated")]
    cpu = sum(bool(v.get("cpu_only")) for v in records)
    full = len(records) - cpu

    def pair(key: str, label: str) -> str:
        mark = "" if have[key] == want[key] else f" (paper: {want[key]})"
        return f"{have[key]} {label}{mark}"

    demos = len(all_tasks) - len(catalog_ids)
    lines = [
        f"catalog: {pair('tasks', 'tasks')} ({demos} demo tasks apart, not counted)",
        "  domains: " + ", ".join(pair(k, k) for k in ("ai_ml", "systems", "scientific")),
        f"  {pair('gpu', 'GPU')}; {pair('qemu', 'QEMU/kernel')}; {pair('legacy', 'legacy')}",
        "  difficulty: " + ", ".join(pair(k, k) for k in ("easy", "medium", "hard")),
        f"  {pair('languages', 'language ecosystems')}: "
        + ", ".join(sorted({t["languages"][0] for t in catalog_ids.values()})),
        f"  reference setup and verifier written: {written}/{len(catalog_ids)}",
        f"  reference setup passed its verifier here: {full + cpu}/{len(catalog_ids)}"
        f" ({full} in full, {cpu} on the CPU only: --cpu-only)",
        "  equals the paper's counts: "
        + ("yes" if not catalog.count_problems(all_tasks) else "NO"),
    ]
    return "\n".join(lines)


@tasks.command()
@click.argument("task_id")
def show(task_id: str) -> None:
    """Print the task.yaml of TASK_ID."""
    click.echo(catalog.task_file(task_id).read_text(), nl=False)


@tasks.command("new")
@click.argument("task_id")
def new(task_id: str) -> None:
    """Write a new catalog task's three pieces from commented templates: tasks/TASK_ID/task.yaml,
    its reference setup (reference_setups/TASK_ID/, an Ansible role) and its hidden verifier
    (verifiers/TASK_ID/checks.yaml and experiment.sh). Every line to fill says TODO(tasks new);
    `deploybench tasks validate tasks/TASK_ID` names those left. tasks/README.md walks through
    it."""
    from deploybench.catalog import new_task

    for path in new_task.create(task_id):
        click.echo(f"wrote {path.relative_to(catalog.REPO_ROOT)}")
    folder = catalog.Task(task_id).folder.relative_to(catalog.REPO_ROOT)
    click.echo(f"next: fill every {new_task.MARKER} line, then tasks validate {folder}")


@tasks.command()
@click.argument("paths", nargs=-1, type=click.Path())
def validate(paths: tuple[str, ...]) -> None:
    """Check task.yaml files (default: every task) against the schema and the layout.

    Without PATHS, the catalog's counts are also checked against the paper's (see `tasks list`).
    PATHS may be task.yaml files or task folders. Prints one line per problem and exits 1 when
    there is any."""
    problems = catalog.validate_all(paths=list(paths) if paths else None)
    if not paths and not problems:
        # The whole catalog: its counts must be the paper's.
        problems = catalog.count_problems(catalog.load_tasks())
    for line in problems:
        click.echo(line)
    if problems:
        raise DeployBenchError(f"{len(problems)} problem(s) in the task catalog")
    n = len(paths) if paths else len(catalog.task_files())
    click.echo(f"{n} task(s) valid")

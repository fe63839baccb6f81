"""tasks list | show | validate: thin wrappers over deploybench.catalog."""

from __future__ import annotations

import click
from rich.console import Console
from rich.table import Table

from deploybench import catalog
from deploybench.errors import DeployBenchError


@click.group()
def tasks() -> None:
    """List, show and validate the task catalog (tasks/<id>/task.yaml)."""


def _yes(value: object) -> str:
    return "yes" if value else "no"


@tasks.command("list")
@click.option(
    "--demo/--catalog", "demo", default=None, help="Only demo tasks / only catalog tasks."
)
def list_tasks(demo: bool | None) -> None:
    """Print a table of the tasks: id, domain, difficulty, gpu, demo, validated."""
    table = Table("id", "domain", "difficulty", "gpu", "demo", "validated")
    for task_id, t in sorted(catalog.load_tasks().items()):
        if demo is not None and bool(t.get("demo")) != demo:
            continue
        v = t.get("validated")
        validated = f"{v['at']} ({v['backend']}/{v['image']})" if v else "never"
        table.add_row(
            task_id, t["domain"], t["difficulty"], _yes(t["gpu"]), _yes(t.get("demo")), validated
        )
    Console(width=200).print(table)


@tasks.command()
@click.argument("task_id")
def show(task_id: str) -> None:
    """Print the task.yaml of TASK_ID."""
    click.echo(catalog.task_file(task_id).read_text(), nl=False)


@tasks.command()
@click.argument("paths", nargs=-1, type=click.Path())
def validate(paths: tuple[str, ...]) -> None:
    """Check task.yaml files (default: every task) against the schema and the layout.

    PATHS may be task.yaml files or task folders. Prints one line per problem and exits 1 when
    there is any."""
    problems = catalog.validate_all(paths=list(paths) if paths else None)
    for line in problems:
        click.echo(line)
    if problems:
        raise DeployBenchError(f"{len(problems)} problem(s) in the task catalog")
    n = len(paths) if paths else len(catalog.task_files())
    click.echo(f"{n} task(s) valid")

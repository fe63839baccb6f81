"""provision, machines, destroy, image: thin wrappers over deployments and the local images."""

from __future__ import annotations

import json

import click
from rich.console import Console
from rich.table import Table

from deploybench.backends import (
    BACKENDS,
    MachineRequest,
    deployments,
    get_backend,
    inventory,
    kept,
)
from deploybench.local import images
from deploybench.progress import status_line

out = Console()


@click.command()
@click.option(
    "--backend", default="local", show_default=True, help=f"One of {', '.join(BACKENDS)}."
)
@click.option(
    "--machines",
    "count",
    type=click.IntRange(1, 256),
    default=1,
    show_default=True,
    help="How many machines.",
)
@click.option("--image", default=None, help="local: debian12 (default) or debian13.")
@click.option("--gpu", is_flag=True, help="One GPU per machine.")
@click.option("--json", "as_json", is_flag=True, help="Print the machines output (contract 1).")
def provision(backend: str, count: int, image: str | None, gpu: bool, as_json: bool) -> None:
    """Make COUNT fresh machines on BACKEND and render their Ansible inventory.

    The machines outlive this command; `deploybench machines` lists them and
    `deploybench destroy` ends them."""
    get_backend(backend)  # unknown backend: one clear line before anything is made
    request = MachineRequest(run_id=deployments.new_id(), count=count, image=image, gpu=gpu)
    folder, machines = deployments.provision(backend, request)
    if as_json:
        click.echo(json.dumps(machines, indent=2))
        return
    _print_table(machines)
    click.echo(f"inventory: {folder / 'inventory.ini'}")
    click.echo(f"deployment: {folder.name}  (destroy with: deploybench destroy)")


def _print_table(machines: dict) -> None:
    table = Table("name", "address", "port", "backend", "image", "kept", "ssh")
    for name, m in machines.items():
        table.add_row(
            name,
            m["host"],
            str(m["port"]),
            m["backend"],
            m["image"],
            m.get("kept", "-"),
            inventory.ssh_command(m),
        )
    Console(width=250).print(table)


def _with_kept(found: dict) -> dict:
    """Each machine kept after its failed verdict says so: until when, for which attempt."""
    records = {folder.name: record for _, folder, record in kept.listed()}
    for machine in found.values():
        record = records.get(machine.get("deployment", ""))
        if record is not None:
            why = kept.abandoned(record)
            machine["kept"] = (
                f"until {kept.until(record)}"
                + (f", ENDED BY THE NEXT SWEEP: {why}" if why else "")
                + f" ({record['attempt']})"
            )
    return found


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print contract 1 (with the deployment).")
def machines(as_json: bool) -> None:
    """List live machines: name, address, port and an ssh command for each."""
    found = _with_kept(deployments.all_machines())
    if as_json:
        click.echo(json.dumps(found, indent=2))
    elif not found:
        click.echo("no machines")
    else:
        _print_table(found)
        for _, folder, _ in deployments.listed():
            click.echo(f"inventory: {folder / 'inventory.ini'}")


@click.command()
@click.option(
    "--all",
    "everything",
    is_flag=True,
    help="Also end local machines and processes that crashed runs left behind.",
)
@click.option("--deployment", default=None, help="Destroy only this deployment.")
def destroy(everything: bool, deployment: str | None) -> None:
    """Destroy provisioned machines. Safe to run again: nothing left is not an error."""
    done = deployments.destroy(deployment)
    for dep in done:
        click.echo(f"destroyed deployment {dep}")
    if everything:
        for found in get_backend("local").sweep():  # the local sweep checks for root itself
            click.echo(f"ended leftover local machine {found}")
    if not done and not everything:
        click.echo("nothing to destroy")


@click.group()
def image() -> None:
    """The local backend's cached base images (Debian; Ubuntu is not reachable from here)."""


@image.command("list")
def image_list() -> None:
    """Show each image, its recipe digest and when it was built."""
    table = Table("name", "description", "digest", "built", "path")
    for row in images.list_images():
        table.add_row(
            row["name"], row["description"], row["digest"], row["built_at"] or "-", row["path"]
        )
    Console(width=200).print(table)


@image.command("build")
@click.argument("name", default="debian12")
def image_build(name: str) -> None:
    """Build image NAME now (provision builds it on first use otherwise)."""
    get_backend("local").check()
    images.recipe_for(name)
    if images.is_built(name):
        click.echo(f"{name} is built and current: {images.image_path(name)}")
        return
    with status_line(f"building the {name} base image") as update:
        path = images.ensure_image(name, on_line=update)
    click.echo(f"{name}: {path}")

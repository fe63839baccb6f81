"""sweep, upload, download: thin wrappers over the backends' sweep and deploybench.run.storage."""

from __future__ import annotations

from pathlib import Path

import click

from deploybench.backends import BACKENDS, get_backend, kept
from deploybench.run import storage


@click.command()
@click.option(
    "--backend",
    type=click.Choice(sorted(BACKENDS)),
    required=True,
    help="Where to look for leftovers.",
)
@click.option("--dry-run", is_flag=True, help="Only list what would be destroyed.")
def sweep(backend: str, dry_run: bool) -> None:
    """Find and destroy machines that crashed runs left behind.

    aws and gcp: every instance tagged (labelled) with this controller's owner
    (DEPLOYBENCH_OWNER, default "deploybench") whose deployment no longer has Terraform state
    here, then its security group or firewall rule and key pair. Live deployments are kept.

    local: every machine of this host (a sweep cannot tell a leak from a machine in use).

    Every backend: machines kept after a failed verdict (run --keep-failed) whose time to live
    ran out, or whose diagnosis lost its controller (local: every kept machine)."""
    chosen = get_backend(backend)
    found = kept.sweep(backend, dry_run=dry_run, everything=chosen.sweep_ends_every_machine)
    found += chosen.sweep(dry_run=dry_run)
    verb = "would destroy" if dry_run else "destroyed"
    for item in found:
        click.echo(f"{verb} {item}")
    if not found:
        click.echo(f"nothing left behind on {backend}")


def _progress(rel: str, what: str) -> None:
    if what == "sent":
        click.echo(f"  {rel}")


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.argument("s3_url")
def upload(run_dir: Path, s3_url: str) -> None:
    """Upload RUN_DIR to S3_URL (s3://bucket/prefix). Files whose sha256 is already there are
    skipped, so an interrupted upload resumes by running it again. Private keys and
    .terraform folders are never uploaded."""
    result = storage.upload(run_dir, s3_url, on_file=_progress)
    click.echo(result.summary("uploaded"))


@click.command()
@click.argument("s3_url")
@click.argument("dest_dir", type=click.Path(file_okay=False, path_type=Path))
def download(s3_url: str, dest_dir: Path) -> None:
    """Download S3_URL (s3://bucket/prefix) into DEST_DIR, skipping files already there
    with the same sha256."""
    result = storage.download(s3_url, dest_dir, on_file=_progress)
    click.echo(result.summary("downloaded"))

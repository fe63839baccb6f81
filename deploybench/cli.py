"""The `deploybench` command. Subcommands live in deploybench/commands/ and are imported only
when used, so `deploybench --help` stays fast and one broken area cannot break the others."""

from __future__ import annotations

import importlib
import signal
import sys

import click

from deploybench.errors import DeployBenchError
from deploybench.run.signals import Stopped, as_interrupt

# name -> "module:attribute"; each module holds thin click wrappers over plain functions.
SUBCOMMANDS = {
    "image": "deploybench.commands.machines:image",
    "provision": "deploybench.commands.machines:provision",
    "machines": "deploybench.commands.machines:machines",
    "destroy": "deploybench.commands.machines:destroy",
    "tasks": "deploybench.commands.tasks:tasks",
    "run": "deploybench.commands.run:run",
    "validate-references": "deploybench.commands.run:validate_references",
    "sweep": "deploybench.commands.cloud:sweep",
    "upload": "deploybench.commands.cloud:upload",
    "download": "deploybench.commands.cloud:download",
    "report": "deploybench.commands.report:report",
    "diagnose": "deploybench.commands.report:diagnose",
    "sources": "deploybench.commands.sources:sources_group",
    "stage": "deploybench.commands.sources:stage",
    "status": "deploybench.commands.watch:status",
    "logs": "deploybench.commands.watch:logs",
}

HELP = {
    "image": "Build or list the cached base images of the local backend.",
    "provision": "Make fresh machines on a backend (local, aws, gcp).",
    "machines": "List live machines: name, address, port, ssh command.",
    "destroy": "Destroy provisioned machines (--all also cleans what crashed runs left).",
    "tasks": "List, show, validate and add tasks of the catalog.",
    "run": "Run agents on tasks, one fresh machine per attempt, and verify each.",
    "validate-references": "Run the reference setup of tasks and record where it passed.",
    "sweep": "Find and destroy machines that crashed runs left behind.",
    "upload": "Upload a run folder to S3 (resumable, skips unchanged files).",
    "download": "Download a run folder from S3.",
    "report": "Compute the paper's tables and plots from runs.",
    "diagnose": "Diagnose failed attempts and map them to failure patterns.",
    "sources": "Sync and list the source cache (task repositories at pinned commits, papers).",
    "stage": "Stage one task's pinned tree on a fresh machine, without an agent.",
    "status": "Show a run's running attempts: stage, time against budget, tokens so far.",
    "logs": "Print (or follow with -f) one attempt's agent log, live from its machine.",
}


class LazyGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(SUBCOMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        target = SUBCOMMANDS.get(name)
        if target is None:
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # Short help from the table above, so listing commands imports none of them.
        rows = [(name, HELP.get(name, "")) for name in self.list_commands(ctx)]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup)
@click.version_option(package_name="deploybench")
def cli() -> None:
    """DeployBench: measure whether an LLM agent can deploy a research artifact on a bare
    machine, judged by a hidden verifier.

    Quick start on one Linux box, as root: `make demo`. See README.md."""


def main() -> None:
    try:
        with as_interrupt():
            cli.main(prog_name="deploybench", standalone_mode=False)
    except DeployBenchError as exc:
        click.echo(f"deploybench: error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (click.exceptions.Abort, Stopped) as exc:
        stopped = exc if isinstance(exc, Stopped) else exc.__cause__
        if isinstance(stopped, Stopped):
            name = signal.Signals(stopped.signum).name
            click.echo(f"deploybench: stopped by {name} (cleaned up as for Ctrl-C)", err=True)
            sys.exit(128 + stopped.signum)
        click.echo("deploybench: aborted", err=True)
        sys.exit(130)
    except click.UsageError as exc:
        # One line, not the usage block: bad input should read as one clear sentence.
        hint = f" (see: {exc.ctx.command_path} --help)" if exc.ctx else ""
        click.echo(f"deploybench: error: {exc.format_message()}{hint}", err=True)
        sys.exit(exc.exit_code)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)


if __name__ == "__main__":
    main()

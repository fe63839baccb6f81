"""The task selection options shared by run, validate-references and tasks list
(catalog/selection.py holds the rule)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from deploybench.catalog.selection import DOMAINS, RUNS_HERE, Selection


def _many(ctx: click.Context, param: click.Parameter, value: str | None) -> tuple[str, ...]:
    return tuple(v.strip() for v in (value or "").split(",") if v.strip())


def selection_options(with_ids: bool = True) -> Callable:
    """--tasks (ids or `all`), --demo, and the filters; the command gets `selection`."""

    def wrap(command: Callable) -> Callable:
        options = [
            click.option("--domain", callback=_many, default=None,
                         help=f"Only tasks of these domains ({', '.join(DOMAINS)}), "
                         "comma-separated."),
            click.option("--gpu/--no-gpu", "gpu", default=None,
                         help="Only tasks that need a GPU / that do not."),
            click.option("--validated/--not-validated", "validated", default=None,
                         help="Only tasks whose reference setup has passed here / has not."),
            click.option("--runs-here", callback=_many, default=None,
                         help=f"Only tasks whose runs_here.local is one of these "
                         f"({', '.join(RUNS_HERE)}), comma-separated."),
            click.option("--exclude", callback=_many, default=None,
                         help="Task ids to leave out, comma-separated."),
        ]  # fmt: skip
        if with_ids:
            options = [
                click.option("--tasks", default=None,
                             help="Task ids, comma-separated, or `all` (every catalog task; "
                             "the filters narrow it)."),
                click.option("--demo", is_flag=True, help="All demo tasks."),
                *options,
            ]  # fmt: skip

        def inner(**kwargs: Any) -> Any:
            kwargs["selection"] = Selection(
                tasks=kwargs.pop("tasks") if with_ids else None,
                demo=kwargs.pop("demo") if with_ids else False,
                domain=kwargs.pop("domain"),
                gpu=kwargs.pop("gpu"),
                validated=kwargs.pop("validated"),
                runs_here=kwargs.pop("runs_here"),
                exclude=kwargs.pop("exclude"),
            )
            return command(**kwargs)

        inner.__name__ = command.__name__
        inner.__doc__ = command.__doc__
        # Options declared below this decorator were attached to the command already.
        inner.__click_params__ = list(getattr(command, "__click_params__", []))  # type: ignore[attr-defined]
        for option in reversed(options):
            inner = option(inner)
        return inner

    return wrap

"""`deploybench report` and `deploybench diagnose`: thin wrappers over deploybench.analysis."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument(
    "run_dirs",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--catalog",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Task catalog folder (default: the checkout's tasks/).",
)
@click.option(
    "--out", required=True, type=click.Path(file_okay=False, path_type=Path), help="Output folder."
)
@click.option(
    "--prices",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="CSV of token prices (model,input_usd_per_million,output_usd_per_million) for an "
    "estimate of each attempt's money cost.",
)
@click.option(
    "--allow-mixed-catalogs",
    is_flag=True,
    help="Pool runs even where they judged a task with different task files, reference "
    "setups or verifiers (run.json's provenance); the report then says which.",
)
def report(
    run_dirs: tuple[Path, ...],
    catalog: Path | None,
    out: Path,
    prices: Path | None,
    allow_mixed_catalogs: bool,
) -> None:
    """Compute the paper's tables (CSV + Markdown) and one HTML page with plots from one or
    more run folders. Its notes start with what produced each run (harness version, commit)."""
    from deploybench.analysis.report import write_report

    result = write_report(
        list(run_dirs), out, catalog, prices=prices, allow_mixed=allow_mixed_catalogs
    )
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
    click.echo(f"{len(result.tables)} tables: {result.out / 'tables'}/")
    click.echo(f"markdown: {result.markdown}")
    click.echo(f"html: {result.html}")


@click.command()
@click.argument("run_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--catalog",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Task catalog folder (default: the checkout's tasks/).",
)
@click.option("--model", default=None, help="Model name; without it the rules diagnose alone.")
@click.option(
    "--llm-base-url",
    envvar="DEPLOYBENCH_LLM_BASE_URL",
    default=None,
    help="OpenAI-compatible base URL (…/v1); the key comes from OPENAI_API_KEY if set.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Where the summary table goes (default: RUN_DIR/diagnosis).",
)
def diagnose(
    run_dir: Path, catalog: Path | None, model: str | None, llm_base_url: str | None, out
) -> None:
    """Diagnose every failed attempt of RUN_DIR and map it to the five failure patterns."""
    from deploybench.analysis.diagnose_run import diagnose_run

    result = diagnose_run(run_dir, catalog, model, llm_base_url, out)
    click.echo(f"{result.count} failed attempt(s) diagnosed ({result.source})")
    click.echo(f"summary: {result.markdown}")

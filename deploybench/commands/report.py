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
@click.option(
    "--model",
    default=None,
    help="Model name: of the one call per failed attempt (with --llm-base-url), or, with "
    "--agentic, the diagnostic agent's instead of its spec's. Without it the rules diagnose.",
)
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
@click.option(
    "--agentic",
    is_flag=True,
    help="A diagnostic agent on each failed attempt's kept machine (run --keep-failed): it "
    "enters the machine as the agent left it, with the reference setup and the verifier's "
    "outputs, and reports the root cause; the machine is destroyed after. Attempts without a "
    "kept machine get the one-call (or rules) diagnosis.",
)
@click.option(
    "--agent",
    "agent_name",
    default="codex",
    show_default=True,
    help="The diagnostic agent (--agentic): a command agent spec's name.",
)
@click.option(
    "--agent-config",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="The YAML file of agent specs holding --agent (default: the checkout's "
    "agents/<agent>.yaml).",
)
@click.option(
    "--minutes",
    type=click.FloatRange(1, 240),
    default=30.0,
    show_default=True,
    help="The diagnostic agent's time budget per attempt (--agentic).",
)
@click.option(
    "--prices",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Token prices (CSV) for the diagnostic agent's cost (--agentic).",
)
def diagnose(
    run_dir: Path,
    catalog: Path | None,
    model: str | None,
    llm_base_url: str | None,
    out: Path | None,
    agentic: bool,
    agent_name: str,
    agent_config: Path | None,
    minutes: float,
    prices: Path | None,
) -> None:
    """Diagnose every failed attempt of RUN_DIR and map it to the five failure patterns
    (diagnosis.json beside each attempt; Table 9 in RUN_DIR/diagnosis). A verdict or a
    results row is never changed."""
    from deploybench.analysis.diagnose_run import diagnose_run

    how = None
    if agentic:
        how = _agentic(agent_name, agent_config, model, llm_base_url, minutes, prices)
        model = llm_base_url = None  # the attempts without a kept machine: the rules
    result = diagnose_run(run_dir, catalog, model, llm_base_url, out, agentic=how)
    click.echo(f"{result.count} failed attempt(s) diagnosed ({result.source})")
    click.echo(f"summary: {result.markdown}")


def _agentic(name, config, model, base_url, minutes, prices_file):
    """The diagnostic agent, checked before any machine is touched."""
    import os
    from dataclasses import replace

    from deploybench.analysis import token_prices
    from deploybench.attempt.agents import load_agent, missing_keys
    from deploybench.errors import DeployBenchError
    from deploybench.paths import REPO_ROOT
    from deploybench.run.diagnosis import Agentic

    config = config or REPO_ROOT / "agents" / f"{name}.yaml"
    if not config.is_file():
        raise DeployBenchError(f"--agent {name}: no {config}; name its spec file: --agent-config")
    spec = load_agent(name, config, base_url)
    if not spec.behaviour.calls_a_model:
        raise DeployBenchError(f"--agent {name}: a diagnostic agent is a command agent")
    if model:
        spec = replace(spec, model=model)
    missing = missing_keys([spec], os.environ)
    if missing:
        raise DeployBenchError(missing[0])
    prices = token_prices.load(prices_file) if prices_file else None
    return Agentic(agent=spec, minutes=minutes, prices=prices)

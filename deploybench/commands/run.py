"""run and validate-references: thin wrappers over runner.Runner."""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import click
import yaml
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from deploybench import catalog, runfolder
from deploybench.attempt.agents import AgentSpec, load_agent, missing_keys, platform_problems
from deploybench.backends import get_backend
from deploybench.catalog import load_tasks
from deploybench.catalog.selection import Selection, select
from deploybench.commands.selection import selection_options
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR, runs_dir
from deploybench.run import provenance
from deploybench.run.runner import Runner, RunOptions, now
from deploybench.verify import verification


def _select_tasks(selection: Selection) -> dict[str, dict]:
    return select(load_tasks(), selection)


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


DEFAULTS = {"backend": "local", "attempts": 1, "parallel": 1}


@dataclass
class RunRequest:
    """What `deploybench run` (or validate-references) was asked on the command line."""

    backend: str | None = None
    agent: str | None = None
    tasks: str | None = None
    demo: bool = False
    parallel: int | None = None
    attempts: int | None = None
    run_id: str | None = None
    resume: bool = False
    agent_config: Path | None = None
    agent_seconds: int | None = None
    image: str | None = None
    upload: str | None = None
    yes: bool = False
    llm_base_url: str | None = None
    source_mirror: Path | None = None
    cpu_only: bool = False
    selection: Selection | None = None
    bank_dir: Path | None = None
    bank: int = 0
    bank_again: bool = False
    max_tokens: int | None = None
    max_cost_usd: float | None = None
    prices: Path | None = None
    model: str | None = None
    retry: str | None = None
    infra_retries: int | None = None
    keep_failed: int = 0
    keep_hours: float = 4.0
    until_blocked: bool = False
    step_seconds: int = 0

    def __post_init__(self) -> None:
        if self.selection is not None:
            self.tasks, self.demo = self.selection.tasks, self.selection.demo


def _run_dir(request: RunRequest) -> tuple[str, Path]:
    if request.resume and not request.run_id:
        raise DeployBenchError("--resume needs the --run-id of the run to continue")
    run_id = request.run_id or f"run-{now().replace(':', '').replace('-', '').lower()}"
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", run_id):
        raise DeployBenchError(f"bad --run-id {run_id!r}: letters, digits, . _ - only")
    run_dir = runs_dir() / run_id
    if run_dir.exists() and not request.resume:
        raise DeployBenchError(
            f"run {run_id} exists in {run_dir}: add --resume, or pick a new --run-id"
        )
    return run_id, run_dir


def _resumed(request: RunRequest, run_dir: Path) -> runfolder.RunSpec:
    """The run's own spec (its run.json); an option given again that differs is an error."""
    if (
        request.agent_config is not None
        or request.llm_base_url is not None
        or request.max_tokens is not None
        or request.max_cost_usd is not None
    ):
        raise DeployBenchError(
            "--resume takes the agents' specs from the run (run.json): "
            "leave out --agent-config, --llm-base-url, --max-tokens and --max-cost-usd"
        )
    return runfolder.RunSpec.read(run_dir).resumed(
        {
            "backend": request.backend,
            "tasks": _split(request.tasks) or None,
            "agents": _split(request.agent) or None,
            "attempts": request.attempts,
            "agent_seconds": request.agent_seconds,
            "image": request.image,
            "upload": request.upload,
            "cpu_only": request.cpu_only or None,
            "parallel": request.parallel,
            "bank_dir": _bank_folder(request.bank_dir),
        }
    )


# The most variants one bank run makes (and --bank-again runs: all of a bank, up to this).
MAX_BANK = 500


def _bank_folder(given: Path | None) -> str | None:
    """--bank-dir as run.json keeps it (resolved); None when not given on the command line."""
    from deploybench.verify import bank

    folder = bank.root(given) if given else None
    return str(folder) if folder else None


def _new(request: RunRequest, run_id: str) -> runfolder.RunSpec:
    names = _split(request.agent)
    if not names:
        raise DeployBenchError("name the agents: --agent reference,nop,...")
    agents = [load_agent(name, request.agent_config, request.llm_base_url) for name in names]
    agents = with_models(agents, _split(request.model))
    caps = {"max_tokens": request.max_tokens, "max_cost_usd": request.max_cost_usd}
    if any(v is not None for v in caps.values()):
        # The command line's caps are every agent's (each attempt's, at the run's gateway),
        # kept in run.json with the specs so a resumed run keeps them.
        agents = [replace(a, **{k: v for k, v in caps.items() if v is not None}) for a in agents]
    chosen = _select_tasks(request.selection or Selection(tasks=request.tasks, demo=request.demo))
    click.echo(f"{len(chosen)} task(s): {', '.join(chosen)}")
    return runfolder.RunSpec(
        run_id=run_id,
        backend=request.backend or DEFAULTS["backend"],
        tasks=list(chosen),
        agents=[a.name for a in agents],
        attempts=request.attempts or DEFAULTS["attempts"],
        parallel=request.parallel or DEFAULTS["parallel"],
        agent_specs=[asdict(a) for a in agents],
        agent_seconds=request.agent_seconds,
        image=request.image,
        upload=request.upload,
        cpu_only=request.cpu_only or None,
        until_blocked=request.until_blocked or None,
        agent_config=str(request.agent_config) if request.agent_config else None,
        bank_dir=_bank_folder(request.bank_dir or _env_bank()),
        created_at=now(),
        provenance=provenance.record(list(chosen), agents),
    )


def execute(request: RunRequest) -> tuple[Path, list[dict]]:
    run_id, run_dir = _run_dir(request)
    spec = _resumed(request, run_dir) if request.resume else _new(request, run_id)
    kinds = tuple(_split(request.retry))
    for kind in kinds:
        if kind not in runfolder.RETRY_KINDS:
            raise DeployBenchError(f"--retry {kind}: one of {', '.join(runfolder.RETRY_KINDS)}")
    if kinds and not request.resume:
        raise DeployBenchError("--retry reruns attempts of a run: add --resume and its --run-id")
    chosen = _select_tasks(Selection(tasks=",".join(spec.tasks)))
    agents = [AgentSpec(**a) for a in spec.agent_specs]
    prices = None
    if request.prices is not None:
        from deploybench.analysis import token_prices

        prices = token_prices.load(request.prices)
    if request.max_cost_usd is not None and not prices:
        raise DeployBenchError("--max-cost-usd needs --prices FILE (a cost is counted from them)")
    cpu_only = bool(spec.cpu_only)
    _check_runnable(chosen, agents, cpu_only)
    from deploybench.catalog import staging

    # Sources before machines: a commit or repository that cannot be had is one line, no machine.
    staging.ensure(chosen, request.source_mirror)
    chosen_backend = get_backend(spec.backend)
    # Pre-flight: the image the backend offers and what the agents' scaffolds need of it.
    chosen_backend.image_python(spec.image)
    image = spec.image or chosen_backend.default_image
    offered = chosen_backend.image_pythons
    for problem in platform_problems(agents, image, offered, chosen_backend.fetches_python):
        raise DeployBenchError(problem)
    for problem in missing_keys(agents, os.environ):
        raise DeployBenchError(problem)
    from deploybench.attempt import provider_check

    for problem in provider_check.problems(agents, os.environ):
        raise DeployBenchError(problem)
    chosen_backend.check()
    if not request.resume and spec.provenance is not None:
        # What the machines start from, named as the backend can (a local image's package set).
        spec.provenance["image"] = chosen_backend.image_identity(spec.image)
    # A resumed run draws from its own bank folder (run.json), whatever the environment says now.
    folder = (Path(spec.bank_dir) if spec.bank_dir else None) if request.resume else _env_bank()
    banks = _banks(request, folder if request.resume else request.bank_dir or folder, chosen)
    if not request.resume:
        from deploybench.run import costs

        # A backend that bills nothing (local) asks nothing.
        from deploybench.run.runner import STAGING_SECONDS

        tries = 1 + (
            RunOptions.infra_retries if request.infra_retries is None else request.infra_retries
        )
        costs.estimate_and_confirm(
            chosen_backend,
            chosen,
            agents,
            spec.attempts,
            request.yes,
            agent_seconds=spec.agent_seconds,
            prices=prices,
            # The most an attempt holds machines: its wall-clock limit (the runner's), each try.
            ceiling=lambda a: tries * (a.budget_minutes * 60 + STAGING_SECONDS) / 3600,
            kept=(request.keep_failed, request.keep_hours) if request.keep_failed else None,
            bank_runs=_bank_runs(request, banks, chosen),
        )
    if kinds:
        again = runfolder.to_retry(run_dir, kinds)
        runfolder.ResultsStore(run_dir).supersede(again)
        click.echo(f"--retry {','.join(kinds)}: {len(again)} attempt(s) to run again")
    # Owner only: the run folder holds the agents' logs and the machines' state.
    runs_dir().mkdir(parents=True, exist_ok=True)
    run_dir.mkdir(mode=0o700, exist_ok=True)
    run_dir.chmod(0o700)
    if not request.resume:
        spec.write(run_dir)
    runner = Runner(
        RunOptions(
            run_dir=run_dir,
            backend=chosen_backend,
            tasks=chosen,
            agents=agents,
            attempts=spec.attempts,
            parallel=spec.parallel,
            image=spec.image,
            agent_seconds=spec.agent_seconds,
            upload=spec.upload,
            cpu_only=cpu_only,
            until_blocked=bool(spec.until_blocked),
            step_seconds=request.step_seconds,
            bank_dir=banks,
            bank_size=request.bank or (MAX_BANK if request.bank_again else 0),
            bank_again=request.bank_again,
            prices=prices,
            keep_failed=request.keep_failed,
            keep_hours=request.keep_hours,
            **({} if request.infra_retries is None else {"infra_retries": request.infra_retries}),
        )
    )
    return run_dir, runner.run()


def _env_bank() -> Path | None:
    from deploybench.verify import bank

    return bank.root(None)


def _banks(request: RunRequest, given: Path | None, chosen: dict[str, dict]) -> Path | None:
    """The bank folder (given: --bank-dir, else $DEPLOYBENCH_BANK, else a resumed run's); for
    --bank N, checked before any machine: a folder to write, tasks that declare variants."""
    from deploybench.verify import bank

    folder = bank.root(given) if given else None
    if not request.bank and not request.bank_again:
        return folder
    if folder is None:
        raise DeployBenchError(
            f"--bank needs a folder for the banks: --bank-dir PATH or ${bank.BANK_ENV} (the "
            "operator's, outside the repository: a bank holds the verifiers' answers)"
        )
    without = [t for t in chosen if bank.spec_of(t) is None]
    if without:
        raise DeployBenchError(
            f"--bank: no variants declared in the checks.yaml of {', '.join(without)}"
        )
    if request.bank_again:
        for task_id in chosen:
            bank.again(folder, task_id, bank.spec_of(task_id), request.bank)
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def _bank_runs(request: RunRequest, folder: Path | None, chosen: dict[str, dict]) -> dict:
    """task id -> the bank's experiments its passing reference runs after its verdict (at most:
    --bank N draws N and repeats some; --bank-again runs the bank's variants), for the cost
    estimate: the machine is held for each, up to the task's verify_minutes."""
    from deploybench.verify import bank

    if not (request.bank or request.bank_again) or folder is None:
        return {}
    out = {}
    for task_id in chosen:
        spec = bank.spec_of(task_id)
        if request.bank_again:
            out[task_id] = len(bank.again(folder, task_id, spec, request.bank))
        else:
            out[task_id] = bank.most_runs(spec, request.bank)
    return out


def with_models(agents: list[AgentSpec], models: list[str]) -> list[AgentSpec]:
    """--model a,b: each agent that calls a model, once per model, named <agent>+<model> (its
    column in the report reads "agent / model"); other agents as they are."""
    if not models:
        return agents
    out = []
    for agent in agents:
        if not agent.behaviour.calls_a_model:
            out.append(agent)
            continue
        for model in models:
            out.append(replace(agent, name=runfolder.model_agent(agent.name, model), model=model))
    names = [a.name for a in out]
    if len(set(names)) != len(names):
        raise DeployBenchError(f"--model: two models give one name: {', '.join(models)}")
    return out


def _split(names: str | None) -> list[str]:
    return [n.strip() for n in (names or "").split(",") if n.strip()]


def _check_runnable(tasks: dict[str, dict], agents: list[AgentSpec], cpu_only: bool) -> None:
    """Refuse, before any machine is made, what would fail only after a whole attempt."""
    for task_id, task in tasks.items():
        if cpu_only and not task.get("gpu"):
            raise DeployBenchError(
                f"--cpu-only is the CPU validation of GPU tasks; {task_id} is not one "
                "(gpu: false): run or validate it normally"
            )
        home = catalog.Task(task_id)
        if not home.verifier.is_dir():
            raise DeployBenchError(
                f"task {task_id} has no verifier ({home.verifier}/): it cannot be run"
            )
        needs_reference = any(a.behaviour.needs_reference_setup for a in agents)
        if needs_reference and not home.homes()["reference_setup"]:
            raise DeployBenchError(f"task {task_id} has no reference setup ({home.role}/)")
    for agent in agents:
        for problem in agent.behaviour.problems(agent):
            raise DeployBenchError(problem)


CPU_ONLY_HELP = (
    "The CPU validation of GPU tasks: machines without a GPU, the reference setups' CPU mode, "
    "the experiments' CPU form. Verdicts stay the normal ones (they fail without GPU evidence); "
    "each attempt also gets a CPU judgment that leaves out the checks checks.yaml marks as GPU "
    "evidence."
)


@click.command()
@click.option("--backend", default=None, help="local (default), aws or gcp.")
@click.option(
    "--agent",
    "--agents",
    "agent",
    default=None,
    help="Agents, comma-separated: reference, nop, overclaim, or a name from --agent-config.",
)
@selection_options()
@click.option(
    "--model",
    default=None,
    help="Models, comma-separated: each agent that calls a model runs once per model, with "
    "the model in place of its spec's (one column each in the report: agent / model).",
)
@click.option(
    "--parallel",
    type=click.IntRange(1, 256),
    default=None,
    help="Attempts running at once, one machine each (default 1; --resume may change it).",
)
@click.option(
    "--attempts",
    type=click.IntRange(1, 100),
    default=None,
    help="Attempts per task and agent (default 1).",
)
@click.option("--run-id", default=None, help="Folder name under runs/ (default: a timestamp).")
@click.option(
    "--resume",
    is_flag=True,
    help="Continue run --run-id with the options it was started with (run.json); finished "
    "attempts are skipped. Options given again must equal the run's, except --parallel.",
)
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
@click.option("--cpu-only", is_flag=True, help=CPU_ONLY_HELP)
@click.option(
    "--retry",
    default=None,
    help="With --resume: run again the attempts whose last row is an infrastructure error of "
    "these kinds (infra, provider_error; comma-separated). Their old rows are kept, marked "
    "superseded; nothing else reruns.",
)
@click.option(
    "--infra-retries",
    type=click.IntRange(0, 20),
    default=None,
    help="Tries after an infrastructure error before an attempt's row says infra_error "
    "(default 2).",
)
@click.option(
    "--max-tokens",
    type=click.IntRange(1),
    default=None,
    help="Cap each attempt's model tokens (input and output, counted by the run's model "
    "gateway): past it every further call is refused and the attempt stops as budget_tokens. "
    "Overrides the agents' specs.",
)
@click.option(
    "--max-cost-usd",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="Cap each attempt's model cost in USD (needs --prices): past it every further call is "
    "refused and the attempt stops as budget_cost.",
)
@click.option(
    "--prices",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    default=None,
    help="Token prices (CSV: model,input_usd_per_million,output_usd_per_million) for the "
    "gateway's cost of each call and attempt.",
)
@click.option(
    "--bank-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The operator's folder of variant banks (default: $DEPLOYBENCH_BANK). Each attempt's "
    "verifier draws a variant of its task's bank there; without one its inputs are drawn at "
    "random and its verdict says bank: none.",
)
@click.option(
    "--keep-failed",
    type=click.IntRange(0),
    default=0,
    show_default=True,
    help="Keep the machines of up to N failed attempts after their verdict is written, for "
    "`deploybench diagnose RUN --agentic`; `deploybench machines` shows them, `sweep` ends them "
    "once --keep-hours ran out, `destroy` at any time.",
)
@click.option(
    "--keep-hours",
    type=click.FloatRange(0, 72, min_open=True),
    default=4.0,
    show_default=True,
    help="How long a kept machine may live.",
)
def run(**kwargs) -> None:
    """Run agents on tasks: a fresh machine per attempt, destroyed after; the hidden verifier
    judges each; results go to runs/<run-id>/results.jsonl. Ctrl-C leaves no machine behind;
    --resume continues where the run stopped."""
    run_dir, rows = execute(RunRequest(**kwargs))
    Console(width=160).print(results_table(rows))
    if runfolder.RunSpec.read(run_dir).cpu_only:
        for row in rows:
            click.echo(_cpu_line(run_dir, row))
    click.echo(f"results: {runfolder.results_path(run_dir)}")


def _cpu_line(run_dir: Path, row: dict) -> str:
    judgment = runfolder.read_cpu_judgment(runfolder.attempt_of(run_dir, row))
    who = f"{row['task_id']} {row['agent']} #{row['attempt']}"
    if judgment is None:
        return f"{who}: no CPU judgment (the attempt did not complete)"
    if judgment["passed"]:
        return f"{who}: CPU judgment PASS without {', '.join(judgment['left_out'])}"
    return f"{who}: CPU judgment FAIL ({'; '.join(judgment['problems'])[:300]})"


def _put_block(path: Path, key: str, entry: str) -> None:
    """Rewrite the task file's top-level `key:` block in place (the rest of the file as is), or
    add it at the end."""
    text = path.read_text()
    new, count = re.subn(rf"^{key}:.*\n(?:[ \t]+.*\n)*", entry, text, flags=re.M)
    if count != 1:
        new = text.rstrip("\n") + "\n" + entry
    path.write_text(new)


def record_validated(path: Path, row: dict, image: str, left_out: list[str] | None = None) -> None:
    """Rewrite the task's top-level `validated:` entry in place (the rest of the file as is).
    `left_out`: a CPU validation, recorded as such (cpu_only, the GPU checks it left out)."""
    entry = (
        f'validated:\n  at: "{row["finished_at"]}"\n  backend: {row["backend"]}\n'
        f"  image: {image}\n  run_id: {row['run_id']}\n"
    )
    if left_out:
        entry = (
            f"validated:\n  # {verification.CPU_NOTE}\n"
            + entry.split("\n", 1)[1]
            + f"  cpu_only: true\n  left_out: [{', '.join(left_out)}]\n"
        )
    _put_block(path, "validated", entry)


def _step(step: dict | None) -> str:
    return f"{step['name']} ({step['path']})" if step else ""


def prefix_entry(run_dir: Path, row: dict, image: str) -> dict | None:
    """The task's `prefix_validation` record of one --until-blocked attempt: how far its role
    got and why it stopped (attempt/prefix.py), or None when the attempt left no verdict."""
    attempt = runfolder.attempt_of(run_dir, row)
    prefix = runfolder.read_prefix(attempt)
    if row["status"] != "completed" or prefix is None:
        return None
    spec = runfolder.RunSpec.read(run_dir)
    harness = (spec.provenance or {}).get("harness") or {}
    commit = (harness.get("commit") or "unknown")[:12] + ("+dirty" if harness.get("dirty") else "")
    entry = {
        "at": row["finished_at"],
        "backend": row["backend"],
        "image": image,
        "run_id": row["run_id"],
        "harness_commit": commit,
        "steps_ok": prefix["steps_ok"],
    }
    if prefix.get("last_ok"):
        entry["last_ok"] = _step(prefix["last_ok"])
    stopped_by, why = prefix["stopped_by"], prefix["why"]
    if stopped_by == "none" and not row["passed"]:
        # The role ran to its end; its verifier said no.
        verdict = runfolder.read_verdict(attempt)
        failed = [c["name"] for c in verdict["layer2"].get("checks", []) if not c.get("passed")]
        if not verdict["layer1"]["passed"]:
            failed.insert(0, f"layer 1 {verdict['layer1'].get('category')}")
        stopped_by = "verifier"
        why = "failed: " + (", ".join(failed[:6]) or "see verdict.json")
    elif stopped_by == "none":
        why = "the reference setup passed its verifier"
    runs_here = ((load_tasks().get(row["task_id"]) or {}).get("runs_here") or {}).get("local")
    if stopped_by == "image" and runs_here in ("yes", "with_changes"):
        # Its file says it runs on this machine: what the distribution lacks is the role's.
        stopped_by, why = "defect", f"runs_here says {runs_here}, but {why}"
    if prefix.get("stopped_at"):
        entry["stopped_at"] = _step(prefix["stopped_at"])
    return entry | {"stopped_by": stopped_by, "why": why}


def record_prefix(path: Path, entry: dict) -> None:
    """Rewrite the task's top-level `prefix_validation:` entry in place."""
    _put_block(
        path,
        "prefix_validation",
        yaml.safe_dump(
            {"prefix_validation": entry}, sort_keys=False, width=100, allow_unicode=True
        ),
    )


def _bank_lines(run_dir: Path, rows: list[dict]) -> None:
    from deploybench.verify.bank import WEAK

    for row in rows:
        note = runfolder.attempt_of(run_dir, row) / runfolder.VARIANTS_DIR / "bank.txt"
        lines = note.read_text().strip().splitlines() if note.is_file() else ["no bank made"]
        for line in [x for x in lines[:-1] if x.startswith(WEAK)] + lines[-1:]:
            click.echo(f"{row['task_id']}: {line}")


# How a role may stop in --until-blocked without failing the command: at a step this machine
# cannot take (a GPU, an unreachable host, the cloud image's own packages, the operator's
# input), or cut by the per-step limit.
BLOCKED = ("gpu", "host", "budget", "input", "image")


def _stageable(
    selection: Selection, mirror: Path | None, backend: str, image: str
) -> tuple[Selection, dict[str, dict]]:
    """The selected tasks whose sources can be had here, and the prefix records of the others
    (stopped before any machine, at its staging; written after the run, so the run's own
    provenance sees the checkout as it was), so one missing repository does not stop the
    others' validation."""
    from deploybench.catalog import staging

    harness = provenance.harness()
    commit = (harness["commit"] or "unknown")[:12] + ("+dirty" if harness["dirty"] else "")
    kept, unstaged = [], {}
    for task_id, task in _select_tasks(selection).items():
        try:
            staging.ensure({task_id: task}, mirror)
        except DeployBenchError as exc:
            entry = {
                "at": now(),
                "backend": backend,
                "image": image,
                "harness_commit": commit,
                "steps_ok": 0,
                "stopped_at": "staging its sources (before any machine)",
                "stopped_by": "host",
                "why": f"its sources cannot be had here: {exc}"[:400],
            }
            unstaged[task_id] = entry
            click.echo(f"{task_id}: stopped at its staging, by host: {exc}")
        else:
            kept.append(task_id)
    if not kept:
        for task_id, entry in unstaged.items():
            record_prefix(catalog.Task(task_id, tasks_dir=TASKS_DIR).file, entry)
        raise DeployBenchError("no selected task's sources can be had here: nothing to run")
    return Selection(tasks=",".join(kept)), unstaged


def _record_prefixes(run_dir: Path, rows: list[dict], image: str) -> dict[str, str]:
    """Each attempt's prefix record into its task.yaml, and a table of them; {task: by what
    it stopped}."""
    table = Table("task", "steps ok", "stopped at", "by", "why", title="prefix validation")
    stopped = {}
    for row in rows:
        entry = prefix_entry(run_dir, row, image)
        if entry is None:
            table.add_row(row["task_id"], "", "", "", "infrastructure error: nothing recorded")
            continue
        stopped[row["task_id"]] = entry["stopped_by"]
        record_prefix(catalog.Task(row["task_id"], tasks_dir=TASKS_DIR).file, entry)
        table.add_row(
            row["task_id"],
            str(entry["steps_ok"]),
            # What a machine said, shown as it is: a "[error]" in a build log is no markup.
            escape(entry.get("stopped_at", "")),
            entry["stopped_by"],
            escape(entry["why"][:160]),
        )
    Console(width=200).print(table)
    return stopped


@click.command("validate-references")
@selection_options()
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
@click.option(
    "--cpu-only",
    is_flag=True,
    help="GPU tasks on a machine without a GPU: recorded as a CPU validation (cpu_only, the "
    "GPU-evidence checks left out), never as a full one. " + CPU_ONLY_HELP,
)
@click.option(
    "--bank-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="The operator's folder of variant banks (default: $DEPLOYBENCH_BANK). Each attempt's "
    "verifier draws a variant of its task's bank there; without one its inputs are drawn at "
    "random and its verdict says bank: none.",
)
@click.option(
    "--bank",
    type=click.IntRange(0, MAX_BANK),
    default=0,
    help="After a reference passes, run its verifier's experiment again on N drawn variants "
    "(and a few twice, for the spread) on its final machine, and record their results as the "
    "task's bank in --bank-dir (any backend: a GPU task's bank is made on its GPU).",
)
@click.option(
    "--bank-again",
    is_flag=True,
    help="Instead of drawing new variants, run the ones already in each task's bank (the "
    "first N with --bank N, else all) on this reference's fresh machine: how far its results "
    "lie from the recorded ones widens the bank's spread (one machine's repeats understate "
    "the spread across machines), and a text result that differs leaves the bank as it was.",
)
@click.option(
    "--until-blocked",
    is_flag=True,
    help="Run each role on a machine without a GPU until its first step that needs a GPU or a "
    "host this machine cannot reach, and record in its task.yaml (prefix_validation) how far "
    "it got: the last step reached, where and why it stopped (gpu, host, budget, input, image, "
    "defect; verifier or none when it ran to its end), the date and the harness commit. "
    "Without --tasks: every catalog task not validated yet. Fails only for a role stopped by a "
    "defect of its own or a verifier that said no.",
)
@click.option(
    "--step-minutes",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="With --until-blocked: the longest one step of a role may run (default 30); past it "
    "the role stops there, by budget.",
)
@click.option(
    "--minutes",
    type=click.FloatRange(0, min_open=True),
    default=None,
    help="The reference setup's whole budget, instead of each task's agent_minutes.",
)
def validate_references(
    selection: Selection,
    backend: str,
    image: str | None,
    parallel: int,
    source_mirror: Path | None,
    cpu_only: bool,
    bank_dir: Path | None,
    bank: int,
    bank_again: bool,
    until_blocked: bool,
    step_minutes: float | None,
    minutes: float | None,
) -> None:
    """Run the reference setup of each task on a fresh machine and record in its task.yaml
    when and where it passed the verifier. A failure leaves the record as it was. With
    --cpu-only, a GPU task passes on the CPU judgment instead, and a full record is kept.
    With --until-blocked, how far each role got on this machine is recorded instead."""
    if step_minutes is not None and not until_blocked:
        raise DeployBenchError("--step-minutes is a limit of --until-blocked: add it")
    if until_blocked and (bank or bank_again):
        raise DeployBenchError("--bank needs a passing reference, not a prefix: leave one out")
    if selection.tasks or selection.demo or selection.filtered:
        chosen = selection
    elif until_blocked:
        chosen = Selection(tasks="all", validated=False)
    else:
        chosen = Selection(demo=True)  # nothing named: a quick check of the machinery
    unstaged: dict[str, dict] = {}
    if until_blocked:
        chosen, unstaged = _stageable(
            chosen, source_mirror, backend, image or get_backend(backend).default_image
        )
    run_dir, rows = execute(
        RunRequest(
            backend=backend,
            agent="reference",
            selection=chosen,
            agent_seconds=int(minutes * 60) if minutes else None,
            until_blocked=until_blocked,
            step_seconds=int((step_minutes or 30) * 60) if until_blocked else 0,
            parallel=parallel,
            image=image,
            yes=True,
            source_mirror=source_mirror,
            cpu_only=cpu_only,
            bank_dir=bank_dir,
            bank=bank,
            bank_again=bank_again,
        )
    )
    Console(width=160).print(results_table(rows))
    if bank or bank_again:
        _bank_lines(run_dir, rows)
    stopped = (
        _record_prefixes(run_dir, rows, image or get_backend(backend).default_image)
        if until_blocked
        else {}
    )
    for task_id, entry in unstaged.items():
        record_prefix(catalog.Task(task_id, tasks_dir=TASKS_DIR).file, entry)
    failed = []
    for row in rows:
        task_file = catalog.Task(row["task_id"], tasks_dir=TASKS_DIR).file
        judgment = runfolder.read_cpu_judgment(runfolder.attempt_of(run_dir, row))
        if cpu_only and row["status"] == "completed" and judgment is not None:
            click.echo(_cpu_line(run_dir, row))
            if not judgment["passed"]:
                failed.append(row["task_id"])
                click.echo(f"{row['task_id']}: NOT validated on the CPU; evidence in {run_dir}")
                continue
            current = yaml.safe_load(task_file.read_text()).get("validated")
            if current and not current.get("cpu_only"):
                click.echo(f"{row['task_id']}: CPU judgment passed; its full validation is kept")
                continue
            record_validated(
                task_file,
                row,
                image or get_backend(backend).default_image,
                left_out=judgment["left_out"],
            )
            click.echo(
                f"{row['task_id']}: validated on the CPU only ({row['finished_at']}, "
                f"{row['backend']}; left out: {', '.join(judgment['left_out'])})"
            )
        elif row["passed"] and not cpu_only:
            record_validated(task_file, row, image or get_backend(backend).default_image)
            click.echo(f"{row['task_id']}: validated ({row['finished_at']}, {row['backend']})")
        elif stopped.get(row["task_id"]) in BLOCKED:
            continue  # stopped where this machine cannot go on: the prefix is the record
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

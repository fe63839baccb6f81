"""What a cloud run will cost, before any machine is made.

Each attempt's machine is charged its whole time budget (the agent's budget as the run gives it:
--agent-seconds, else the spec's, else the task's; the scaffold's install time when it has one;
the verification budget) plus a fixed overhead for booting, preparing and staging, at the
on-demand hourly price of its machine type from prices.csv (which names the source and date of
each price). Both clouds bill by the second, so a run that ends early costs less. Its model
calls are charged their cap: --max-cost-usd, or --max-tokens at the dearer of the model's two
token prices (--prices); an agent that calls a model with neither cap has no bound, and the
estimate says so instead of calling itself an upper bound. The ceiling beside it charges every
attempt its wall-clock limit (run/runner.py) and every infrastructure retry."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

import click

from deploybench.backends import Backend, get_backend
from deploybench.errors import DeployBenchError

# Boot, prepare and stage before the agent's clock starts, and destroy after the verifier.
DEFAULT_OVERHEAD_MINUTES = 15.0


@dataclass(frozen=True)
class Price:
    backend: str
    machine_type: str
    gpu: bool
    region: str
    usd_per_hour: float
    source: str
    as_of: str
    note: str = ""


@dataclass(frozen=True)
class Attempt:
    """One attempt to price: its task, whether it needs the GPU machine, and its budget."""

    task_id: str
    gpu: bool
    budget_minutes: float
    # The model calls' cap in USD; None when the agent calls a model with no cap.
    model_usd: float | None = 0.0
    agent: str = ""


@dataclass
class Row:
    task_id: str
    machine_type: str
    attempts: int
    hours_each: float
    usd_per_hour: float
    usd: float


@dataclass
class Estimate:
    backend: str
    rows: list[Row] = field(default_factory=list)
    prices: list[Price] = field(default_factory=list)
    total_usd: float = 0.0
    machine_hours: float = 0.0
    machines: int = 0
    model_usd: float = 0.0
    unbounded: list[str] = field(default_factory=list)  # agents whose model cost has no cap
    ceiling_usd: float | None = None  # wall-clock limits and every retry (machines only)
    # --keep-failed N --keep-hours H: up to N failed attempts' machines live H hours more (the
    # dearest N planned, as which attempts fail is not known before).
    kept: tuple[int, float] | None = None
    kept_usd: float = 0.0

    @property
    def bounded(self) -> bool:
        return not self.unbounded


def load_prices() -> list[Price]:
    text = resources.files("deploybench").joinpath("prices.csv").read_text()
    return [
        Price(
            backend=r["backend"],
            machine_type=r["machine_type"],
            gpu=r["gpu"] == "true",
            region=r["region"],
            usd_per_hour=float(r["usd_per_hour"]),
            source=r["source"],
            as_of=r["as_of"],
            note=r.get("note", ""),
        )
        for r in csv.DictReader(text.splitlines())
    ]


def _backend(backend: Backend | str) -> Backend:
    return get_backend(backend) if isinstance(backend, str) else backend


def machine_type(backend: Backend | str, gpu: bool) -> str:
    """The type the backend will ask for (the backend's own answer)."""
    chosen = _backend(backend)
    mtype = chosen.machine_type(gpu)
    if mtype is None:
        raise DeployBenchError(f"no prices for backend {chosen.name!r}")
    return mtype


def price_for(backend: Backend | str, gpu: bool, prices: list[Price] | None = None) -> Price:
    chosen = _backend(backend)
    mtype = machine_type(chosen, gpu)
    rows = prices if prices is not None else load_prices()
    table = {(p.backend, p.machine_type): p for p in rows}
    found = table.get((chosen.name, mtype))
    if found is None:
        raise DeployBenchError(
            f"no price for {chosen.name} {mtype} in deploybench/prices.csv: "
            "add a row with its source"
        )
    return found


def _as_attempt(item: Attempt | tuple | dict) -> Attempt:
    if isinstance(item, Attempt):
        return item
    if isinstance(item, dict):
        return Attempt(item["task_id"], bool(item["gpu"]), float(item["budget_minutes"]))
    return Attempt(item[0], bool(item[1]), float(item[2]), *item[3:])


def estimate(
    attempts: Iterable[Attempt | tuple | dict],
    backend: Backend | str,
    overhead_minutes: float = DEFAULT_OVERHEAD_MINUTES,
) -> Estimate:
    """Price attempts (task_id, gpu, budget_minutes): one machine each, for its whole budget
    plus overhead. Rows are one per task and machine type, in first-seen order."""
    prices = load_prices()
    backend = _backend(backend)
    est = Estimate(backend=backend.name)
    by_key: dict[tuple[str, str, float], Row] = {}
    for item in attempts:
        att = _as_attempt(item)
        price = price_for(backend, att.gpu, prices)
        if price not in est.prices:
            est.prices.append(price)
        hours = (att.budget_minutes + overhead_minutes) / 60
        key = (att.task_id, price.machine_type, hours)
        row = by_key.get(key)
        if row is None:
            row = Row(att.task_id, price.machine_type, 0, hours, price.usd_per_hour, 0)
            by_key[key] = row
            est.rows.append(row)
        row.attempts += 1
        row.usd = round(row.attempts * hours * price.usd_per_hour, 4)
        est.machines += 1
        est.machine_hours += hours
        if att.model_usd is None:
            if att.agent not in est.unbounded:
                est.unbounded.append(att.agent)
        else:
            est.model_usd += att.model_usd
    est.model_usd = round(est.model_usd, 2)
    est.total_usd = round(sum(r.usd for r in est.rows) + est.model_usd, 2)
    est.machine_hours = round(est.machine_hours, 2)
    return est


def format_estimate(est: Estimate) -> str:
    kind = "upper bound" if est.bounded else "machines only: model cost not bounded"
    lines = [f"Cost estimate ({est.backend}, on-demand, {kind}):"]
    width = max([len(r.task_id) for r in est.rows] + [4])
    lines.append(f"  {'task':<{width}}  {'machine':<15} {'n':>4} {'h each':>7} {'$/h':>8} {'$':>9}")
    for r in est.rows:
        lines.append(
            f"  {r.task_id:<{width}}  {r.machine_type:<15} {r.attempts:>4} "
            f"{r.hours_each:>7.2f} {r.usd_per_hour:>8.4f} {r.usd:>9.2f}"
        )
    if est.model_usd:
        lines.append(f"  model calls: at most ${est.model_usd:.2f} (each attempt's cap)")
    if est.unbounded:
        lines.append(
            f"  model calls of {', '.join(est.unbounded)}: NOT bounded (give --max-cost-usd, "
            "or --max-tokens with --prices)"
        )
    total = f"at most ${est.total_usd:.2f}" if est.bounded else f"${est.total_usd:.2f} + models"
    lines.append(
        f"  total: {est.machines} machines, {est.machine_hours:.2f} machine-hours, {total}"
    )
    if est.kept:
        lines.append(
            f"  kept failed machines (--keep-failed {est.kept[0]}, {est.kept[1]:g} h each): "
            f"at most ${est.kept_usd:.2f}, in the total"
        )
    if est.ceiling_usd is not None:
        lines.append(
            f"  ceiling for the machines: ${est.ceiling_usd:.2f} (every attempt at its "
            "wall-clock limit, every infrastructure retry used)"
        )
    for p in est.prices:
        lines.append(f"  price {p.machine_type} ({p.region}): {p.source} as of {p.as_of}")
    return "\n".join(lines)


def _budget_minutes(task: Mapping, agent: Any, agent_seconds: int | None) -> float:
    seconds = agent_seconds or getattr(agent, "agent_seconds", None)
    minutes = seconds / 60 if seconds else float(task.get("agent_minutes") or 60)
    if getattr(agent, "install", None):
        minutes += getattr(agent, "install_seconds", 0) / 60
    return minutes + float(task.get("verify_minutes") or 0)


def model_cap_usd(agent: Any, prices: Mapping[str, tuple[float, float]] | None) -> float | None:
    """What one attempt's model calls may cost at most: 0 for an agent that calls no model,
    None when nothing caps them."""
    behaviour = getattr(agent, "behaviour", None)
    if behaviour is None or not behaviour.calls_a_model:
        return 0.0
    if agent.max_cost_usd is not None:
        return float(agent.max_cost_usd)
    price = (prices or {}).get(agent.model or "")
    if agent.max_tokens is not None and price:
        return agent.max_tokens * max(price) / 1e6
    return None


def attempts_of(
    tasks: Mapping[str, Mapping],
    agents: Sequence,
    attempts: int = 1,
    agent_seconds: int | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    bank_runs: Mapping[str, int] | None = None,
) -> list[Attempt]:
    """One Attempt per task x agent x repetition, each with its budget (_budget_minutes) and
    its model cap (model_cap_usd). bank_runs: task id -> the experiments a passing reference's
    machine runs after its verdict for validate-references --bank (each within the task's
    verify_minutes): the machine is held for them too."""
    out = []
    for task_id, task in tasks.items():
        after = (bank_runs or {}).get(task_id, 0) * float(task.get("verify_minutes") or 0)
        for agent in agents:
            one = Attempt(
                task_id,
                bool(task.get("gpu")),
                _budget_minutes(task, agent, agent_seconds) + after,
                model_cap_usd(agent, prices),
                getattr(agent, "name", str(agent)),
            )
            out += [one] * attempts
    return out


def confirm(
    attempts: Iterable[Attempt | tuple | dict],
    backend: Backend | str,
    yes: bool = False,
    echo: Callable[[str], None] = click.echo,
    overhead_minutes: float = DEFAULT_OVERHEAD_MINUTES,
    ceiling: Callable[[Attempt], float] | None = None,
    kept: tuple[int, float] | None = None,
) -> Estimate | None:
    """Print the estimate of a cloud run and ask before spending; `yes` skips the question.
    A backend that bills nothing (local) is never asked about (returns None). Raises
    click.Abort when the user declines or there is no terminal to ask on."""
    backend = _backend(backend)
    if not backend.billed:
        return None
    planned = [_as_attempt(a) for a in attempts]
    est = estimate(planned, backend, overhead_minutes)
    if ceiling is not None:
        est.ceiling_usd = round(
            sum(ceiling(a) * price_for(backend, a.gpu, est.prices).usd_per_hour for a in planned),
            2,
        )
    if kept and kept[0]:
        rates = sorted(
            (price_for(backend, a.gpu, est.prices).usd_per_hour for a in planned), reverse=True
        )
        est.kept = kept
        est.kept_usd = round(sum(rates[: kept[0]]) * kept[1], 2)
        est.total_usd = round(est.total_usd + est.kept_usd, 2)
        if est.ceiling_usd is not None:
            est.ceiling_usd = round(est.ceiling_usd + est.kept_usd, 2)
    echo(format_estimate(est))
    if not yes:
        money = (
            f"at most ${est.total_usd:.2f}"
            if est.bounded
            else f"${est.total_usd:.2f} of machines and models without a cap"
        )
        click.confirm(f"Start {est.machines} {backend.name} machines for {money}?", abort=True)
    return est


def estimate_and_confirm(
    backend: Backend | str,
    tasks: Mapping[str, Mapping],
    agents: Sequence,
    attempts: int = 1,
    yes: bool = False,
    echo: Callable[[str], None] = click.echo,
    agent_seconds: int | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    ceiling: Callable[[Attempt], float] | None = None,
    kept: tuple[int, float] | None = None,
    bank_runs: Mapping[str, int] | None = None,
) -> Estimate | None:
    """What `deploybench run` calls before a cloud run: tasks (id -> task.yaml data) x agents
    x attempts machines, each for its budget; asks unless `yes` (--yes). ceiling(attempt)
    gives the hours one attempt may hold machines at most (its wall-clock limit, retries
    included); kept = (--keep-failed, --keep-hours); bank_runs as attempts_of takes them."""
    planned = attempts_of(tasks, agents, attempts, agent_seconds, prices, bank_runs)
    return confirm(planned, backend, yes=yes, echo=echo, ceiling=ceiling, kept=kept)

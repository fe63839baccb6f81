"""What a cloud run will cost at most, before any machine is made.

The estimate is an upper bound: every attempt is charged its whole time budget (agent plus
verification) plus a fixed overhead for booting, preparing and staging, at the on-demand
hourly price of its machine type from prices.csv (which names the source and date of each
price). Both clouds bill by the second, so a run that ends early costs less."""

from __future__ import annotations

import csv
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import resources

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
    task_id, gpu, minutes = item
    return Attempt(task_id, bool(gpu), float(minutes))


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
    est.total_usd = round(sum(r.usd for r in est.rows), 2)
    est.machine_hours = round(est.machine_hours, 2)
    return est


def format_estimate(est: Estimate) -> str:
    lines = [f"Cost estimate ({est.backend}, on-demand, upper bound):"]
    width = max([len(r.task_id) for r in est.rows] + [4])
    lines.append(f"  {'task':<{width}}  {'machine':<15} {'n':>4} {'h each':>7} {'$/h':>8} {'$':>9}")
    for r in est.rows:
        lines.append(
            f"  {r.task_id:<{width}}  {r.machine_type:<15} {r.attempts:>4} "
            f"{r.hours_each:>7.2f} {r.usd_per_hour:>8.4f} {r.usd:>9.2f}"
        )
    lines.append(
        f"  total: {est.machines} machines, {est.machine_hours:.2f} machine-hours, "
        f"at most ${est.total_usd:.2f}"
    )
    for p in est.prices:
        lines.append(f"  price {p.machine_type} ({p.region}): {p.source} as of {p.as_of}")
    return "\n".join(lines)


def attempts_of(tasks: Mapping[str, Mapping], agents: Sequence, attempts: int = 1) -> list[Attempt]:
    """One Attempt per task x agent x repetition; the budget is the task's agent_minutes plus
    its verify_minutes (task.yaml, contract 2)."""
    out = []
    for task_id, task in tasks.items():
        minutes = float(task.get("agent_minutes") or 60) + float(task.get("verify_minutes") or 0)
        out += [Attempt(task_id, bool(task.get("gpu")), minutes)] * (len(agents) * attempts)
    return out


def confirm(
    attempts: Iterable[Attempt | tuple | dict],
    backend: Backend | str,
    yes: bool = False,
    echo: Callable[[str], None] = click.echo,
    overhead_minutes: float = DEFAULT_OVERHEAD_MINUTES,
) -> Estimate | None:
    """Print the estimate of a cloud run and ask before spending; `yes` skips the question.
    A backend that bills nothing (local) is never asked about (returns None). Raises
    click.Abort when the user declines or there is no terminal to ask on."""
    backend = _backend(backend)
    if not backend.billed:
        return None
    est = estimate(attempts, backend, overhead_minutes)
    echo(format_estimate(est))
    if not yes:
        click.confirm(
            f"Start {est.machines} {backend.name} machines for at most ${est.total_usd:.2f}?",
            abort=True,
        )
    return est


def estimate_and_confirm(
    backend: Backend | str,
    tasks: Mapping[str, Mapping],
    agents: Sequence,
    attempts: int = 1,
    yes: bool = False,
    echo: Callable[[str], None] = click.echo,
) -> Estimate | None:
    """What `deploybench run` calls before a cloud run: tasks (id -> task.yaml data) x agents
    x attempts machines, each for its task's budget; asks unless `yes` (--yes)."""
    return confirm(attempts_of(tasks, agents, attempts), backend, yes=yes, echo=echo)

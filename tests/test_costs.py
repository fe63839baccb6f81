"""The cost estimate shown before a cloud run, and its confirmation."""

from __future__ import annotations

import click
import pytest
from click.testing import CliRunner

from deploybench.errors import DeployBenchError
from deploybench.run import costs
from tests.conftest import REPO


def test_price_table_names_source_and_date_of_every_price():
    prices = costs.load_prices()
    types = {(p.backend, p.machine_type, p.gpu) for p in prices}
    assert {
        ("aws", "m6i.4xlarge", False),
        ("aws", "g6.4xlarge", True),
        ("gcp", "n2-standard-16", False),
        ("gcp", "g2-standard-16", True),
    } <= types
    for p in prices:
        assert p.usd_per_hour > 0
        assert p.source.startswith("https://") and p.as_of[:4].isdigit()


def test_estimate_is_machines_times_budget_times_price():
    attempts = [("a_cpu", False, 45)] * 3 + [("b_gpu", True, 105)] * 2
    est = costs.estimate(attempts, "aws", overhead_minutes=15)
    assert est.machines == 5
    cpu, gpu = est.rows
    assert (cpu.task_id, cpu.machine_type, cpu.attempts, cpu.hours_each) == (
        "a_cpu", "m6i.4xlarge", 3, 1.0,
    )  # fmt: skip
    assert (gpu.machine_type, gpu.attempts, gpu.hours_each) == ("g6.4xlarge", 2, 2.0)
    assert cpu.usd == pytest.approx(3 * 0.768)
    assert gpu.usd == pytest.approx(2 * 2 * 1.3232)
    assert est.total_usd == pytest.approx(round(3 * 0.768 + 4 * 1.3232, 2))
    assert est.machine_hours == 7.0
    text = costs.format_estimate(est)
    assert "at most $7.60" in text and "as of" in text and "g6.4xlarge" in text


def test_gcp_uses_the_papers_machine_types():
    est = costs.estimate(
        [costs.Attempt("x", False, 60), {"task_id": "y", "gpu": True, "budget_minutes": 60}],
        "gcp",
        overhead_minutes=0,
    )
    assert [r.machine_type for r in est.rows] == ["n2-standard-16", "g2-standard-16"]


def test_instance_type_override_without_a_price_is_refused(monkeypatch):
    monkeypatch.setenv("DEPLOYBENCH_AWS_GPU_TYPE", "g6.12xlarge")
    with pytest.raises(DeployBenchError, match="no price for aws g6.12xlarge"):
        costs.estimate([("t", True, 30)], "aws")


def _confirm_command(yes: bool):
    @click.command()
    def cmd():
        est = costs.confirm([("t", False, 45)], "aws", yes=yes)
        click.echo(f"went ahead: {est.total_usd}")

    return cmd


def test_confirmation_asks_and_yes_skips():
    runner = CliRunner()
    declined = runner.invoke(_confirm_command(False), input="n\n")
    assert declined.exit_code == 1 and "went ahead" not in declined.output
    assert "Start 1 aws machines for at most $0.77?" in declined.output
    accepted = runner.invoke(_confirm_command(False), input="y\n")
    assert accepted.exit_code == 0 and "went ahead: 0.77" in accepted.output
    skipped = runner.invoke(_confirm_command(True))
    assert skipped.exit_code == 0 and "Start" not in skipped.output
    assert "Cost estimate (aws" in skipped.output
    # No terminal to answer on: nothing starts.
    assert runner.invoke(_confirm_command(False), input="").exit_code == 1


def test_local_backend_costs_nothing_and_asks_nothing():
    assert costs.confirm([("t", True, 60)], "local") is None
    assert costs.estimate_and_confirm("local", {"t": {"gpu": True}}, ["nop"], 3) is None


def test_run_estimate_is_tasks_times_agents_times_attempts():
    """The call `deploybench run` makes: tasks from task.yaml, agents, attempts each."""
    tasks = {
        "adalora_iclr23": {"gpu": True, "agent_minutes": 45, "verify_minutes": 15},
        "silt_sosp11": {"gpu": False, "agent_minutes": 30, "verify_minutes": 15},
    }
    lines: list[str] = []
    est = costs.estimate_and_confirm(
        "aws", tasks, ["nop", "reference"], attempts=2, yes=True, echo=lines.append
    )
    assert est.machines == 8
    gpu, cpu = est.rows
    assert (gpu.task_id, gpu.machine_type, gpu.attempts, gpu.hours_each) == (
        "adalora_iclr23", "g6.4xlarge", 4, 1.25,
    )  # fmt: skip
    assert (cpu.machine_type, cpu.attempts, cpu.hours_each) == ("m6i.4xlarge", 4, 1.0)
    assert est.total_usd == pytest.approx(round(4 * 1.25 * 1.3232 + 4 * 0.768, 2))
    assert "at most $" in lines[0]


def _mini(**changed):
    from dataclasses import replace

    from deploybench.attempt.agents import load_agent

    return replace(load_agent("mini-swe-agent", REPO / "agents" / "mini-swe-agent.yaml"), **changed)


def test_the_estimate_honours_the_agents_budget_and_caps_its_model_calls():
    from deploybench.attempt.agents import load_agent

    tasks = {"silt_sosp11": {"gpu": False, "agent_minutes": 30, "verify_minutes": 15}}
    nop = load_agent("nop")
    # A 2-hour --agent-seconds is what the machines are held for, not the task's 30 minutes.
    [att] = costs.attempts_of(tasks, [nop], agent_seconds=7200)
    assert att.budget_minutes == 120 + 15 and att.model_usd == 0.0
    est = costs.estimate([att], "aws")
    assert est.machine_hours == pytest.approx((135 + 15) / 60, abs=0.01) and est.bounded
    # A scaffold: its install time counts, and its model calls are capped by its caps.
    capped = _mini(max_cost_usd=4.0)
    [att] = costs.attempts_of(tasks, [capped], agent_seconds=3600)
    assert att.budget_minutes == 60 + capped.install_seconds / 60 + 15
    assert att.model_usd == 4.0
    tokens = _mini(max_tokens=1_000_000, model="m1")
    [att] = costs.attempts_of(tasks, [tokens], prices={"m1": (3.0, 15.0)})
    assert att.model_usd == pytest.approx(15.0)  # a million tokens at the dearer price
    lines: list[str] = []
    est = costs.estimate_and_confirm(
        "aws", tasks, [capped, tokens], attempts=2, yes=True, echo=lines.append,
        prices={"m1": (3.0, 15.0)}, ceiling=lambda a: 3 * (a.budget_minutes + 60) / 60,
    )  # fmt: skip
    assert est.model_usd == pytest.approx(2 * 4.0 + 2 * 15.0) and est.bounded
    text = "\n".join(lines)
    assert "upper bound" in lines[0] and "model calls: at most $38.00" in text, text
    assert est.ceiling_usd > est.total_usd - est.model_usd and "ceiling" in text


def test_an_agent_without_a_cap_makes_the_estimate_say_it_is_no_bound():
    tasks = {"silt_sosp11": {"gpu": False, "agent_minutes": 30, "verify_minutes": 15}}
    lines: list[str] = []
    est = costs.estimate_and_confirm("aws", tasks, [_mini()], yes=True, echo=lines.append)
    assert not est.bounded and est.unbounded == ["mini-swe-agent"]
    assert "upper bound" not in lines[0] and "model cost not bounded" in lines[0]
    assert "NOT bounded" in lines[0] and "+ models" in lines[0]


def test_kept_failed_machines_are_priced_at_the_dearest_and_counted_in_the_total():
    # --keep-failed 2 --keep-hours 4: which attempts fail is unknown, so the two dearest
    # planned machines (the GPU ones) are priced for 4 more hours each.
    tasks = {
        "adalora_iclr23": {"gpu": True, "agent_minutes": 45, "verify_minutes": 15},
        "silt_sosp11": {"gpu": False, "agent_minutes": 30, "verify_minutes": 15},
    }
    lines: list[str] = []
    plain = costs.estimate_and_confirm("aws", tasks, ["nop"], yes=True, echo=lines.append)
    kept = costs.estimate_and_confirm(
        "aws", tasks, ["nop"], yes=True, echo=lines.append, kept=(2, 4.0)
    )
    assert kept.kept_usd == pytest.approx(round((1.3232 + 0.768) * 4, 2))
    assert kept.total_usd == pytest.approx(round(plain.total_usd + kept.kept_usd, 2))
    assert "kept failed machines (--keep-failed 2, 4 h each): at most $8.36" in lines[-1]

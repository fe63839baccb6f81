"""The report's numbers on the hand-made run (tests/analysis/handmade.py), against values
computed by hand. The hand computation is written beside each check."""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
from click.testing import CliRunner

from deploybench.analysis.report import compute, write_report
from deploybench.commands.report import report
from deploybench.errors import DeployBenchError
from tests.analysis import handmade

A, B, ALL = "alpha / m1", "beta", "all agents"


@pytest.fixture(scope="module")
def computed(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("hand")
    run_dir, catalog = handmade.build(tmp)
    frames, tables = compute([run_dir], catalog)
    return frames, {t.key: t for t in tables}, run_dir, catalog


def close(a, b):
    return math.isclose(float(a), float(b), abs_tol=0.01)


def test_labels_and_notes(computed):
    f, _, _, _ = computed
    # beta's model is null: labelled by the agent alone. alpha's infra_error attempt is out.
    assert f.labels == [A, B]
    assert len(f.attempts) == 7
    assert any("infra_error" in n for n in f.notes)
    assert any("no verdict.json" in n and n.startswith("1 ") for n in f.notes)


def test_success(computed):
    _, t, _, _ = computed
    rates, counts = t["1_success"].frame, t["1_success"].extra["counts"]
    # alpha first attempts: t1 pass, t2 fail, t3 attempt 2 fail (attempt 1 was infra) -> 1/3
    # beta first attempts: t1 attempt 1 fail, t2 pass, t3 fail -> 1/3
    assert counts.loc["Overall", A] == "1/3" and close(rates.loc["Overall", A], 33.3)
    assert counts.loc["Overall", B] == "1/3"
    # domains: t1 AI/ML, t2 Systems, t3 Scientific
    assert rates.loc["Domain: AI/ML", A] == 100.0 and rates.loc["Domain: AI/ML", B] == 0.0
    assert rates.loc["Domain: Systems", A] == 0.0 and rates.loc["Domain: Systems", B] == 100.0
    assert rates.loc["Domain: Scientific", A] == 0.0
    # difficulty: t1 easy, t2 hard, t3 medium
    assert rates.loc["Difficulty: easy", A] == 100.0 and rates.loc["Difficulty: hard", B] == 100.0
    # age: t2 legacy; t1, t3 recent -> alpha recent 1/2, beta legacy 1/1
    assert counts.loc["Age: recent", A] == "1/2" and rates.loc["Age: recent", A] == 50.0
    assert counts.loc["Age: legacy", B] == "1/1"
    # pass@k: beta passes t1 on attempt 2 and t2 -> 2/3; alpha 1/3
    assert counts.loc["pass@k (any attempt)", B] == "2/3"
    assert close(rates.loc["pass@k (any attempt)", B], 66.7)
    assert counts.loc["pass@k (any attempt)", A] == "1/3"


def test_cost_and_time(computed):
    _, t, _, _ = computed
    c = t["2_cost_time"].frame
    # alpha: steps 6, 6, 3 -> 5.0; tokens 1100, 2200, 550 -> 1283.33; in (1000+2000+500)/3
    assert c.loc[A, "attempts"] == 3 and close(c.loc[A, "avg steps"], 5.0)
    assert close(c.loc[A, "avg tokens total"], 1283.33)
    assert close(c.loc[A, "avg tokens in"], 1166.67) and close(c.loc[A, "avg tokens out"], 116.67)
    # solved: t1 only (1100 = 1000 in + 100 out); failed: (2200 + 550) / 2 = 1375,
    # in (2000 + 500) / 2 = 1250, out (200 + 50) / 2 = 125
    assert close(c.loc[A, "avg tokens total, solved"], 1100)
    assert close(c.loc[A, "avg tokens in, solved"], 1000)
    assert close(c.loc[A, "avg tokens out, solved"], 100)
    assert close(c.loc[A, "avg tokens total, failed"], 1375)
    assert close(c.loc[A, "avg tokens in, failed"], 1250)
    assert close(c.loc[A, "avg tokens out, failed"], 125)
    # no --prices: no estimate
    assert pd.isna(c.loc[A, "avg cost USD, estimate from --prices"])
    # minutes: (600+1200+1800)/3/60 = 20; solved 600/60 = 10; failed (1200+1800)/2/60 = 25
    assert close(c.loc[A, "avg runtime min (total)"], 20)
    assert close(c.loc[A, "avg runtime min, solved"], 10)
    assert close(c.loc[A, "avg runtime min, failed"], 25)
    # beta: steps 4, 1, 2, 2 -> 2.25; no tokens recorded; minutes (300+60+900+600)/4/60 = 7.75
    assert close(c.loc[B, "avg steps"], 2.25) and pd.isna(c.loc[B, "avg tokens total"])
    assert close(c.loc[B, "avg runtime min (total)"], 7.75)
    # solved (60+900)/2/60 = 8.0; failed (300+600)/2/60 = 7.5
    assert close(c.loc[B, "avg runtime min, solved"], 8.0)
    assert close(c.loc[B, "avg runtime min, failed"], 7.5)


def test_cost_estimate_from_a_price_table(computed, tmp_path):
    _, _, run_dir, catalog = computed
    prices = tmp_path / "prices.csv"
    prices.write_text(
        "model,input_usd_per_million,output_usd_per_million\nm1,2000,10000\nother,1,1\n"
    )
    _, tables = compute([run_dir], catalog, prices)
    c = {t.key: t for t in tables}["2_cost_time"].frame
    # alpha (m1): 1000*2000/1e6 + 100*10000/1e6 = 3.0; 2000 in/200 out -> 6.0; 500/50 -> 1.5
    assert close(c.loc[A, "avg cost USD, estimate from --prices"], 3.5)
    # beta has no model, so no price
    assert pd.isna(c.loc[B, "avg cost USD, estimate from --prices"])


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("model,price\nm1,1\n", "line 1: the columns must be"),
        ("model,input_usd_per_million,output_usd_per_million\nm1,x,1\n", "line 2: prices"),
        ("model,input_usd_per_million,output_usd_per_million\nm1,1,-1\n", "line 2: a model"),
        ("model,input_usd_per_million,output_usd_per_million\nm1,1,1\nm1,2,2\n", "priced twice"),
    ],
)
def test_bad_price_table_is_one_line(computed, tmp_path, text, reason):
    _, _, run_dir, catalog = computed
    prices = tmp_path / "prices.csv"
    prices.write_text(text)
    with pytest.raises(DeployBenchError, match=reason):
        compute([run_dir], catalog, prices)


def test_failures(computed):
    _, t, _, _ = computed
    f = t["3_failures"].frame
    # failed: alpha t2 (L1 compilation), alpha t3#2 (L2), beta t1#1 (L1 dependency),
    # beta t3 (L1 runtime crash) -> all: 1 crash, 1 dependency, 1 compilation, L1 3, L2 1
    assert f.loc["Layer 1: runtime crash", f"{ALL} n"] == 1
    assert f.loc["Layer 1: dependency error", f"{ALL} %"] == 25.0
    assert f.loc["Layer 1 total", f"{ALL} n"] == 3 and f.loc["Layer 1 total", f"{ALL} %"] == 75.0
    assert f.loc["Layer 2 total", f"{ALL} %"] == 25.0
    assert f.loc["Layer 1: compilation error", f"{A} %"] == 50.0
    assert f.loc["Layer 2 total", f"{B} n"] == 0
    assert t["3_failures"].paper.loc["Layer 1 total", "paper %"] == 46.1


def test_trajectory_length(computed):
    _, t, _, _ = computed
    n = t["4_trajectory_length"].frame
    # alpha commands 5, 4, 3 -> 4.0; sub-commands 6 (ls && cat splits), 4, 3 -> 4.33
    assert close(n.loc[A, "avg shell commands"], 4.0)
    assert close(n.loc[A, "avg sub-commands"], 4.33)
    # beta commands 1, 0, 1, 2 -> 1.0; sub-commands 2 (heredoc, then python), 0, 1, 1 -> 1.0
    # (an empty command has no sub-command)
    assert close(n.loc[B, "avg shell commands"], 1.0)
    assert close(n.loc[B, "avg sub-commands"], 1.0)


def test_phases(computed):
    _, t, _, _ = computed
    p = t["5_phases"].frame
    # successful attempts' sub-commands: alpha t1 ls(Explore) cat(FileRead) pip pip(Install)
    # python(Run/Test) printf>RUNBOOK(Finish); beta t2 ./bin/sim(Run/Test) -> 7
    assert p.loc["sub-commands (n)", f"{ALL}, success %"] == 7
    assert close(p.loc["Install", f"{ALL}, success %"], 28.6)  # 2/7
    assert close(p.loc["Run/Test", f"{ALL}, success %"], 28.6)  # 2/7
    assert close(p.loc["Explore", f"{ALL}, success %"], 14.3)  # 1/7
    # failed: make make (Build) python -c (Run/Test) echo>RUNBOOK (Finish); make check
    # (Run/Test) tail (FileRead) sleep (Other); cat>cfg heredoc (FileEdit) python train.py
    # (Run/Test); timeout 5 make check (Run/Test) -> 10: Build 20, Run/Test 40, rest 10 each
    assert p.loc["sub-commands (n)", f"{ALL}, failed %"] == 10
    assert p.loc["Build", f"{ALL}, failed %"] == 20.0
    assert p.loc["Run/Test", f"{ALL}, failed %"] == 40.0
    for phase in ("Finish", "FileRead", "Other", "FileEdit"):
        assert p.loc[phase, f"{ALL}, failed %"] == 10.0


def test_phase_taxonomy_is_a_table(computed):
    _, t, _, _ = computed
    tax = t["5_phase_taxonomy"].frame
    assert list(tax.index)[:3] == ["Explore", "Env. Inspect", "FileRead"]
    assert "runbook" in tax.loc["Finish", "what it covers"]
    assert tax.loc["Other", "what it covers"] == "no phase rule matched"


def test_tool_use(computed):
    _, t, _, _ = computed
    u = t["6_tool_use"].frame
    # beta: a task tracker, a structured file edit and a heredoc, all in t1#1
    assert u.loc[B, "used the task tracker"] == 1 and u.loc[A, "used the task tracker"] == 0
    assert u.loc[B, "structured file actions"] == 1 and u.loc[B, "contain a heredoc"] == 1
    w = t["6_waits_and_limits"].frame
    # soft timeouts: alpha sleep 1 of 12 commands = 8.3%; beta 1 of 4 = 25%
    assert close(w.loc[A, "soft timeouts / commands %"], 8.3)
    assert w.loc[B, "soft timeouts / commands %"] == 25.0
    # step limit: beta t3; messages: alpha 1 of 15 events = 6.7%
    assert w.loc[B, "ended by the step limit"] == 1 and w.loc[A, "ended by the step limit"] == 0
    assert close(w.loc[A, "message share of events %"], 6.7)


def test_recovery(computed):
    _, t, _, _ = computed
    r = t["7_recovery"].frame
    # success: alpha t1 `pip install numpy` then `pip install numpy==1.23.5` -> rule 5 Adapt
    assert r.loc["Adapt", "success n"] == 1 and r.loc["Adapt", "success %"] == 100.0
    # failed: alpha t2 make->make (3 Other), make->python -c (7 Adapt); alpha t3 make check ->
    # tail (4 Inspect), sleep soft-timeout, nothing after (1 Abort); beta t1 -> finish
    # (1 Abort); beta t3 soft timeout -> empty input (2 Loop): 6 in all
    assert r.loc["Abort", "failed n"] == 2 and close(r.loc["Abort", "failed %"], 33.3)
    for label in ("Inspect", "Adapt", "Loop", "Other"):
        assert r.loc[label, "failed n"] == 1
    per = t["7_recovery_per_agent"].frame
    # alpha: Adapt once in its solved t1 and once in its failed t2; beta's are all in failures
    assert per.loc["Adapt", f"{A}, success"] == 1 and per.loc["Adapt", f"{A}, failed"] == 1
    assert per.loc["Loop", f"{B}, failed"] == 1 and per.loc["Abort", f"{B}, failed"] == 1
    assert per.loc["Loop", f"{B}, success"] == 0  # zeros shown: the shape never changes
    assert list(per.columns) == [f"{A}, success", f"{A}, failed", f"{B}, success", f"{B}, failed"]
    rules = t["7_recovery_rules"].frame["failed commands"].tolist()
    assert rules == [2, 1, 1, 1, 1, 0, 1, 0, 0]


def test_completion_and_stop_types(computed):
    _, t, _, _ = computed
    c = t["8_completion"].frame
    # failed self-stops: alpha t2 (claimed SUCCESS; last check `python -c 'import sim'` is
    # shallow: t2's entry points come from its prose, `./bin/sim --steps 3`); beta t1#1
    # (PARTIAL; `... python train.py --epochs 1` runs t1's entry point: meaningful)
    assert c.loc["self-stops among failures", A] == 1
    assert c.loc["of those, RUNBOOK claimed SUCCESS", A] == 1
    assert c.loc["of those, shallow check only", A] == 1
    assert c.loc["of those, RUNBOOK said PARTIAL", B] == 1
    assert c.loc["of those, meaningful check before finishing", B] == 1
    assert c.loc["failed attempts", ALL] == 4 and c.loc["self-stops among failures", ALL] == 2
    assert t["8_completion"].paper.loc["self-stops among failures", "paper"] == 97
    s = t["8_stop_types"].frame
    assert s.loc["self_stop, success", B] == 2 and s.loc["max_steps, failed", B] == 1
    assert s.loc["timeout, failed", A] == 1 and s.loc["self_stop, failed", A] == 1
    # every stop type has its rows, also where none occurred
    assert list(s.index) == [
        f"{stop}, {o}"
        for stop in ("self_stop", "timeout", "max_steps", "unknown")
        for o in ("success", "failed")
    ]
    assert s.loc["max_steps, success", A] == 0 and s.loc["unknown, failed", B] == 0


def test_failure_patterns(computed):
    _, t, _, _ = computed
    p = t["9_failure_patterns"].frame
    # t3: every attempt failed -> all-fail; alpha (output does not match: artifact) and beta
    # (Segmentation fault: system) -> 2 patterns on 1 task
    assert p.loc["all-fail tasks", "tasks"] == 1
    assert p.loc["all-fail tasks", "artifact/output mismatch"] == 1
    assert p.loc["all-fail tasks", "system/VM-level execution"] == 1
    assert p.loc["all-fail tasks", "patterns per task"] == 2.0
    # mixed: t1 (beta: dependency category + failed `metrics` check: dependency, artifact),
    # t2 (alpha: compilation: native build) -> 3 patterns over 2 tasks = 1.5
    assert p.loc["mixed-outcome tasks", "tasks"] == 2
    assert p.loc["mixed-outcome tasks", "dependency/package/version"] == 1
    assert p.loc["mixed-outcome tasks", "native build/toolchain"] == 1
    assert p.loc["mixed-outcome tasks", "patterns per task"] == 1.5


def test_cli_writes_every_table_and_the_page(computed, tmp_path):
    _, tables, run_dir, catalog = computed
    out = tmp_path / "out"
    result = CliRunner().invoke(
        report, [str(run_dir), "--catalog", str(catalog), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    for key in tables:
        assert (out / "tables" / f"{key}.csv").is_file()
        assert (out / "tables" / f"{key}.md").read_text().startswith("## ")
    md = (out / "report.md").read_text()
    for table in tables.values():
        assert f"## {table.title}" in md
    page = (out / "report.html").read_text()
    assert page.count('<svg class="plot"') == 5
    assert "<script src" not in page and "http://" not in page.split("<svg")[0]
    # the paper's figures are beside ours
    assert "GPT-5.3-Codex" in page and "53.9" in md
    frame = pd.read_csv(out / "tables" / "3_failures.csv", index_col=0)
    assert frame.loc["Layer 1 total", "all agents n"] == 3


def test_two_runs_together(tmp_path):
    run1, catalog = handmade.build(tmp_path / "a")
    run2, _ = handmade.build(tmp_path / "b")
    f, tables = compute([run1, run2], catalog)
    assert len(f.attempts) == 14
    success = {t.key: t for t in tables}["1_success"]
    # the same tasks twice: first attempts per label and task are still 3
    assert success.extra["counts"].loc["Overall", A] == "1/3"


def test_malformed_trajectory_line_names_file_and_line(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "t1_hand24" / "alpha" / "1" / "trajectory.jsonl"
    lines = path.read_text().splitlines()
    lines[2] = lines[2][:-5]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DeployBenchError, match=r"trajectory.jsonl:3: not JSON"):
        compute([run_dir], catalog)


def test_event_against_the_contract(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "t1_hand24" / "alpha" / "1" / "trajectory.jsonl"
    lines = path.read_text().splitlines()
    event = json.loads(lines[1])
    event["kind"] = "shell"
    lines[1] = json.dumps(event)
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DeployBenchError, match=r"trajectory.jsonl:2: field kind"):
        compute([run_dir], catalog)


def test_malformed_results_line(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "results.jsonl"
    path.write_text(path.read_text() + '{"run_id": "hand"}\n')
    with pytest.raises(DeployBenchError, match=r"results.jsonl:9: field"):
        compute([run_dir], catalog)


def test_not_a_run_folder(tmp_path):
    with pytest.raises(DeployBenchError, match="no results.jsonl"):
        write_report([tmp_path], tmp_path / "out")


def test_cut_off_last_results_line_is_skipped_and_noted(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "results.jsonl"
    path.write_text(path.read_text() + '{"run_id": "hand", "task_id": "t1_')
    f, _ = compute([run_dir], catalog)
    assert len(f.attempts) == 7
    assert any("cut off" in n for n in f.notes)


def test_disagreeing_verdict_is_noted(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "t2_hand24" / "beta" / "1" / "verdict.json"
    data = json.loads(path.read_text())
    data["passed"] = False
    path.write_text(json.dumps(data))
    f, _ = compute([run_dir], catalog)
    assert any(n.startswith("1 attempt(s) where results.jsonl and verdict.json") for n in f.notes)


def test_run_without_any_trajectory_still_reports(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    for path in run_dir.rglob("trajectory.jsonl"):
        path.unlink()
    result = write_report([run_dir], tmp_path / "out", catalog)
    assert any(
        n.startswith("7 completed attempt(s) have no trajectory.jsonl") for n in result.notes
    )
    length = pd.read_csv(tmp_path / "out" / "tables" / "4_trajectory_length.csv", index_col=0)
    # steps come from results.jsonl (alpha 6, 6, 3); no command was recorded
    assert length.loc[A, "avg steps"] == 5.0 and length.loc[A, "avg shell commands"] == 0
    assert result.html.read_text().count('<svg class="plot"') == 5


def test_only_infra_errors_is_one_clear_error(tmp_path):
    run_dir, catalog = handmade.build(tmp_path)
    path = run_dir / "results.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps({**r, "status": "infra_error"}) + "\n" for r in rows))
    with pytest.raises(DeployBenchError, match="no completed attempts"):
        compute([run_dir], catalog)

"""The report says how its verdicts were obtained (docs/verification.md, the trust model)."""

from deploybench.analysis.frames import trust_note


def test_the_note_counts_each_way_a_verdict_was_obtained():
    verdicts = [{"trust": "host"}, {"trust": "host"}, {"trust": "machine"}, {}, {"trust": "x"}]
    note = trust_note(verdicts)
    assert note.startswith("How the verdicts were obtained: 2 from the host")
    assert "1 through the machine's own login" in note
    assert "2 by a harness that did not record how" in note
    assert trust_note([]) == "How the verdicts were obtained: no verdicts."


def test_bank_note_counts_what_was_compared_with_a_bank():
    from deploybench.analysis.frames import bank_note

    verdicts = [{"bank": "present"}, {"bank": "present"}, {"bank": "none"}, {"trust": "host"}]
    assert bank_note(verdicts) == (
        "Verifier variants: 2 compared with a variant bank's real runs; "
        "1 with no bank (no result compared with a real run's)."
    )
    assert bank_note([{"trust": "host"}, "not a verdict"]) is None


def test_agents_whose_scaffold_installed_system_packages_are_marked(tmp_path):
    import json
    import shutil
    from pathlib import Path

    from deploybench import runfolder
    from deploybench.analysis import load

    demo = Path(__file__).parent / "fixtures" / "demo_run"
    run = shutil.copytree(demo, tmp_path / "run")
    rows = load.read_results(run)
    assert not [n for n in load.load_runs([run]).notes if "not a bare machine" in n]
    marked = rows[0]
    (runfolder.attempt_of(run, marked) / runfolder.SCAFFOLD).write_text(
        json.dumps({"from": "built", "system_packages": ["tmux"]})
    )
    notes = [n for n in load.load_runs([run]).notes if "not a bare machine" in n]
    assert notes == [
        f"{marked['agent']}: 1 attempt(s) on a machine its scaffold changed with system "
        "packages (tmux): not a bare machine"
    ]

"""The report says how its verdicts were obtained (docs/verification.md, the trust model)."""

from deploybench.analysis.frames import trust_note


def test_the_note_counts_each_way_a_verdict_was_obtained():
    verdicts = [{"trust": "host"}, {"trust": "host"}, {"trust": "machine"}, {}, {"trust": "x"}]
    note = trust_note(verdicts)
    assert note.startswith("How the verdicts were obtained: 2 from the host")
    assert "1 through the machine's own login" in note
    assert "2 by a harness that did not record how" in note
    assert trust_note([]) == "How the verdicts were obtained: no verdicts."

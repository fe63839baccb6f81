"""The column form of the recovery rules gives label_attempt's answer on every failed command."""

import random

import numpy as np
import pandas as pd
import pytest

from deploybench.analysis import frames, recovery, recovery_columns
from deploybench.analysis.load import load_runs
from deploybench.analysis.recovery import Action, label_attempt
from deploybench.analysis.synthetic import generate

# commands that reach every rule: runbook writes, Ctrl-C and empty input, repeats (also with
# other white space), reads, pinned installs, clean-ups, action phases, plain waits, nothing
POOL = [
    "make",
    "make  ",
    " make",
    "echo SUCCESS > RUNBOOK.MD",
    "cat >> /root/RUNBOOK.MD <<'EOF'\nstatus\nEOF",
    "C-c",
    "",
    "   ",
    "q",
    "tail -n 50 build.log",
    "sudo cat /var/log/syslog",
    "env/bin/pip show torch",
    "pip install torch==2.0.1",
    "env/bin/pip install 'numpy<2' --index-url x/cu12",
    "echo torch==2.0 && pip install torch",
    "make clean && make",
    "rm -rf build",
    "git clean -fdx",
    "python train.py --epochs 1",
    "sed -i 's/a/b/' f.py",
    "export X=1",
    "sleep 30",
    "echo waited",
    "nvidia-smi",
    "ls -la",
    None,
]
PATHS = [None, "/root/RUNBOOK.MD", "/root/runbook.md", "src/train.py"]


def random_attempt(rng: random.Random, size: int) -> list[Action]:
    out = []
    for _ in range(size):
        kind = rng.choices(recovery.ACTION_KINDS, weights=[20, 2, 2, 1])[0]
        if kind == "command":
            code = rng.choice([0, 0, 1, 2, None])
            out.append(Action("command", rng.choice(POOL), code, rng.random() < 0.15))
        else:
            out.append(Action(kind, path=rng.choice(PATHS)))
    return out


def by_columns(attempts: list[list[Action]]):
    flat = [(n, a) for n, actions in enumerate(attempts) for a in actions]
    command, distinct = pd.factorize(np.array([a.command for _, a in flat], dtype=object))
    kind = np.array([recovery_columns.KINDS[a.kind] for _, a in flat], dtype=np.int64)
    runbook = np.array(
        [a.kind == "file_edit" and bool(a.path) and "RUNBOOK" in a.path.upper() for _, a in flat]
    )
    at, rule, label = recovery_columns.label_columns(
        kind,
        command,
        distinct.tolist(),
        np.array([bool(a.soft_timeout) for _, a in flat]),
        np.array([a.failed for _, a in flat]),
        runbook,
        np.array([n for n, _ in flat], dtype=np.int64),
    )
    return [(int(p), int(r), recovery.LABELS[i]) for p, r, i in zip(at, rule, label, strict=True)]


def by_attempt(attempts: list[list[Action]]):
    out, offset = [], 0
    for actions in attempts:
        out += [(offset + i, r, lab) for i, r, lab in label_attempt(actions)]
        offset += len(actions)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_random_attempts_get_the_same_labels(seed):
    rng = random.Random(seed)
    attempts = [random_attempt(rng, rng.randint(1, 12)) for _ in range(400)]
    expected = by_attempt(attempts)
    assert by_columns(attempts) == expected
    # every rule was reached, so every test's column form was compared
    assert {r for _, r, _ in expected} == set(range(1, 10))


def test_a_synthetic_run_gets_the_same_labels(tmp_path):
    run_dir, _ = generate(tmp_path, n_attempts=120, n_commands=40, n_tasks=6)
    runs = load_runs([run_dir])
    events = frames._events(runs.events)
    got = frames._recovery(events)
    acts = events[events["kind"].isin(recovery.ACTION_KINDS)]
    expected = []
    for a, group in acts.groupby("a", sort=True):
        actions = [
            Action(
                k,
                c if isinstance(c, str) else None,
                None if e != e else int(e),
                bool(s),
                p if isinstance(p, str) else None,
            )
            for k, c, e, s, p in zip(
                group["kind"],
                group["command"],
                group["exit_code"],
                group["soft_timeout"],
                group["path"],
                strict=True,
            )
        ]
        expected += [(a, r, lab) for _, r, lab in label_attempt(actions)]
    assert len(expected) > 100
    assert list(got.itertuples(index=False, name=None)) == expected


def test_no_failed_command():
    attempts = [[Action("command", "ls", 0), Action("finish")]]
    assert by_columns(attempts) == [] == by_attempt(attempts)

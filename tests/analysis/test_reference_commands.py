"""The phase and recovery rules on a few hundred real commands: those the reference setups
run (tests/analysis/fixtures/real_commands/, README there says how they were taken). People
wrote them to deploy the catalog's artifacts, as an agent would type them: pip by path in a
venv, `timeout`, `sudo`, compilers by version, loops and subshells. What each sub-command is
classed as is pinned by its counts, the ones a reader would expect in a phase must be there,
and docs/measurements.md lists what is still Other and why."""

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from deploybench.analysis import recovery, recovery_columns
from deploybench.analysis.phases import OTHER, classify
from deploybench.analysis.shell_split import split_subcommands

DATA = Path(__file__).parent / "fixtures" / "real_commands"


def _lines(name: str) -> list[dict]:
    return [json.loads(line) for line in (DATA / name).read_text().splitlines()]


ROLES = _lines("reference_roles.jsonl")  # {role, command}: every command/shell task, rendered
RUNS = _lines("reference_runs.jsonl")  # {task, run, commands: [[command, exit code], ...]}


def commands() -> list[str]:
    # the distinct shell commands; "# ansible <module>" lines stand for a module, not a shell
    found = {r["command"] for r in ROLES}
    found |= {c for run in RUNS for c, _ in run["commands"] if not c.startswith("# ansible")}
    return sorted(found)


def subcommands() -> list[str]:
    return [s for c in commands() for s in split_subcommands(c)]


def test_there_are_a_few_hundred():
    assert len(commands()) >= 250
    assert len({r["role"] for r in ROLES}) >= 40  # from most of the catalog's tasks


# 279 distinct commands, 399 sub-commands
PHASE_COUNTS = {
    "Run/Test": 87,
    "Config": 75,
    "Install": 59,
    "Other": 53,
    "Env. Inspect": 46,
    "Build": 38,
    "Assets": 13,
    "Service": 9,
    "FileEdit": 6,
    "Explore": 6,
    "FileRead": 4,
    "Finish": 3,
}


def test_phase_counts():
    subs = subcommands()
    assert len(commands()) == 279 and len(subs) == 399
    assert Counter(map(classify, subs)) == PHASE_COUNTS


# Real sub-commands of these roles and the phase each must get: tools by path, in a venv,
# behind wrappers, and the other languages' package managers the catalog needs.
MUST = {
    "env/bin/pip install --no-input tensorflow-cpu==2.15.1 tf-slim==1.1.0 'numpy<2'": "Install",
    "python3 -m venv env": "Install",
    "opam install -y ctypes.0.11.5 ctypes-foreign atdgen dum": "Install",
    "luarocks install loadcaffe": "Install",
    "raco pkg install --auto --scope user ./serval": "Install",
    "R CMD INSTALL --no-test-load --library=Rlib .": "Install",
    "env/bin/python setup.py build_ext --inplace": "Build",
    "/usr/local/bin/stack build --fast": "Build",
    "g++-11 --version": "Env. Inspect",
    "lspci -d 10de:": "Env. Inspect",
    "raco pkg show serval": "Env. Inspect",
    "git -C lib/custom_error checkout -q --detach bcd01b14": "Config",
    "umount mount-point.dir/proc": "Config",
    "env/bin/python LightGCN.py --dataset gowalla_smoke --regs '[1e-4]' --embed_size 64"
    " --layer_size '[64,64,64]' --lr 0.001 --batch_size 2048 --epoch 20": "Run/Test",
    "out-perf/benchmarks/dbtest --verbose --bench tpcc --num-threads 2 --scale-factor 2"
    " --runtime 10": "Run/Test",
    "raco test racket/test/rv64/verify-alu32-x.rkt": "Run/Test",
}


@pytest.mark.parametrize(("sub", "phase"), MUST.items())
def test_real_subcommands_get_their_phase(sub, phase):
    assert sub in subcommands()  # a real one, not made up here
    assert classify(sub) == phase


# What is still Other, by kind (docs/measurements.md, section 5, says why for each).
OTHER_KINDS = {
    # a for/while/if compound is one sub-command: the split never goes into its body
    "compound": r"^(for|while|if)\b",
    # an assignment from a command substitution, or eval of one
    "assignment": r"^([A-Za-z_]\w*=\$\(|eval\s)",
    # a shell utility writing a file by redirect: data preparation
    "redirect": r"^(: |head |sort ).*>",
    # printing a marker, or nothing at all
    "marker": r"^(echo\b|true$|(ba)?sh -c 'echo\b)",
    # an artifact's program reached through a variable
    "by variable": r'^"\$\w+/',
    # tools no phase names: OS bootstrapping, a database client, cargo plugins, a Lua one-liner
    "unnamed tool": r"^(debootstrap|chroot|dpkg-deb|mariadb|cargo|/root/\.cargo/bin/cargo|th -e"
    r"|timeout 30 git ls-remote)\b",
}


def test_what_is_still_other():
    import re

    kinds = Counter()
    for sub in subcommands():
        if classify(sub) != OTHER:
            continue
        kind = [k for k, p in OTHER_KINDS.items() if re.search(p, sub)]
        assert len(kind) == 1, sub  # every Other is of exactly one known kind
        kinds[kind[0]] += 1
    assert kinds == {
        "compound": 12,
        "assignment": 14,
        "redirect": 9,
        "marker": 8,
        "by variable": 2,
        "unnamed tool": 8,
    }
    assert sum(kinds.values()) == PHASE_COUNTS[OTHER]


def test_argv_commands_keep_their_quotes():
    # the runs were converted with shlex.join: a -c script is one sub-command, not split at `;`
    scripts = [c for run in RUNS for c, _ in run["commands"] if " -c '" in c]
    assert len(scripts) >= 5
    assert all(len(split_subcommands(c)) == 1 for c in scripts)


def _actions(run):
    return [recovery.Action("command", c, e) for c, e in run["commands"]] + [
        recovery.Action("finish")
    ]


def test_recovery_labels_of_the_real_failures():
    got = []
    for run in RUNS:
        actions = _actions(run)
        for i, rule, label in recovery.label_attempt(actions):
            got.append((run["task"], actions[i].command.split()[0], rule, label))
    assert sorted(got) == sorted(
        [
            # the driver install fails on a machine without a GPU and the role stops there
            ("hyena_icml23", "env/bin/pip", 1, "Abort"),
            # the dgsh probe fails offline; the next steps build with pinned packages
            ("pashjit_osdi22", "timeout", 5, "Adapt"),
            ("pashjit_osdi22", "#", 1, "Abort"),
            # `git apply --check -R` failing means "not applied yet", and the patch is applied
            ("pashjit_osdi22", "git", 7, "Adapt"),
            ("pashjit_osdi22", "git", 1, "Abort"),
            ("pashjit_osdi22", "git", 4, "Inspect"),
            ("pashjit_osdi22", "#", 1, "Abort"),
        ]
    )


def test_the_column_form_agrees_on_the_real_runs():
    flat = [(n, a) for n, run in enumerate(RUNS) for a in _actions(run)]
    command, distinct = pd.factorize(np.array([a.command for _, a in flat], dtype=object))
    at, rule, label = recovery_columns.label_columns(
        np.array([recovery_columns.KINDS[a.kind] for _, a in flat], dtype=np.int64),
        command,
        distinct.tolist(),
        np.zeros(len(flat), dtype=bool),
        np.array([a.failed for _, a in flat]),
        np.zeros(len(flat), dtype=bool),
        np.array([n for n, _ in flat], dtype=np.int64),
    )
    expected, offset = [], 0
    for run in RUNS:
        actions = _actions(run)
        expected += [(offset + i, r, lab) for i, r, lab in recovery.label_attempt(actions)]
        offset += len(actions)
    got = [(int(p), int(r), recovery.LABELS[i]) for p, r, i in zip(at, rule, label, strict=True)]
    assert got == expected and len(got) == 7

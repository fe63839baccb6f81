"""Each of the nine recovery rules: a sequence it must label, and a near miss it must not
(which then falls to the later rule named beside it)."""

import pytest

from deploybench.analysis.recovery import Action, label_attempt, label_failure, load_rules
from deploybench.trajectories.openhands import INPUT_PREFIX


def C(command, code=0, soft=False):
    return Action("command", command, -1 if soft else code, soft)


FINISH = Action("finish")
READ = Action("file_read", path="build.log")
EDIT = Action("file_edit", path="setup.py")
FAIL = C("make", 2)
SOFT = C("python train.py", soft=True)
# Keys sent to a running command, as OpenHands' converter writes them (its own prefix).
KEYS = INPUT_PREFIX

# rule id -> (actions, index of the failed command) that rule must label
MUST = {
    1: [
        ([FAIL], 0),  # nothing after it
        ([FAIL, FINISH], 0),
        ([FAIL, C("printf 'STATUS: FAILED' > RUNBOOK.MD"), FINISH], 0),
        ([FAIL, Action("file_edit", path="RUNBOOK.MD")], 0),
        ([FAIL, READ, Action("message")], 0),  # no later *shell* action
    ],
    2: [
        ([C("python train.py", soft=True), C("")], 0),
        ([C("python train.py", soft=True), C("C-c")], 0),
        ([C("python train.py", soft=True), C("tail log", soft=True)], 0),
        ([SOFT, C(f"{KEYS}C-c")], 0),
        ([SOFT, C(f"{KEYS}C-d")], 0),
        ([SOFT, C(KEYS)], 0),  # an empty input: "show me more output"
        ([SOFT, C(KEYS.rstrip())], 0),
    ],
    3: [([FAIL, C("  make ")], 0), ([C("pip  install x", 1), C("pip install x")], 0)],
    4: [
        ([FAIL, C("tail -n 50 build.log")], 0),
        ([FAIL, C("make -j2", 2), C("grep -n error build.log")], 0),
        ([FAIL, READ, C("make")], 0),
        ([FAIL, C("cd src && sed -n '1,20p' main.c")], 0),
        ([C("python -c 'import flask'", 1), C("pip show flask")], 0),
    ],
    5: [
        ([C("pip install torch", 1), C("pip install torch==2.0.1")], 0),
        ([FAIL, C("sudo apt-get install -y nvidia-driver-535")], 0),
        ([FAIL, C("pip install opencv-python-headless")], 0),
        ([FAIL, C("export X=1"), C("uv pip install --python python3.10 x")], 0),
    ],
    6: [
        ([FAIL, C("make clean && make")], 0),
        ([FAIL, C("rm -rf build")], 0),
        ([FAIL, C("cargo clean")], 0),
        ([FAIL, C("pip uninstall -y torch")], 0),
        ([FAIL, C("echo x"), C("git clean -fdx")], 0),
    ],
    7: [
        ([FAIL, C("export CXXFLAGS=-std=gnu++11")], 0),
        ([FAIL, EDIT, C("make")], 0),
        ([FAIL, C("sed -i 's/register //' src/a.cpp")], 0),
        ([FAIL, C("python train.py")], 0),
    ],
    8: [
        ([FAIL, C("frobnicate", 1), C("frobnicate", 1), C("frobnicate")], 0),
        ([FAIL, C("echo a", 1), C("echo b"), C("echo a")], 0),
    ],
    9: [
        ([FAIL, C("echo a"), C("echo b"), C("echo c")], 0),
        ([FAIL, C("frobnicate")], 0),
    ],
}

# rule id -> (actions, index, the rule that labels it instead)
MUST_NOT = {
    1: [([FAIL, C("make -j1")], 0, 7), ([FAIL, C("echo RUNBOOK is next")], 0, 9)],
    2: [
        ([C("python train.py", 1), C("")], 0, 9),  # not a soft timeout
        ([C("python t.py", soft=True), C("python t2.py")], 0, 7),
        ([C("python train.py", 1), C(f"{KEYS}C-c")], 0, 9),  # not a soft timeout
        ([SOFT, C(f"{KEYS}yes")], 0, 9),  # text typed into it, not a key or an empty input
        ([SOFT, C(f"{KEYS}C-c && rm -rf build")], 0, 9),
        ([SOFT, C("echo C-c")], 0, 9),
        ([SOFT, C("# C-c")], 0, 9),  # another comment is not the converter's prefix
    ],
    3: [([FAIL, C("make -j4")], 0, 7), ([FAIL, READ, C("make")], 0, 4)],
    4: [
        ([FAIL, C("echo a"), C("echo b"), C("echo c"), C("cat log")], 0, 9),  # outside window
        ([FAIL, C("catalog --x")], 0, 9),
    ],
    5: [
        ([FAIL, C("pip install torch")], 0, 7),  # no pin: Install is an action phase
        ([FAIL, C("echo torch==2.0")], 0, 9),
    ],
    6: [([FAIL, C("rm build.log")], 0, 7), ([FAIL, C("echo make clean")], 0, 9)],
    7: [([FAIL, C("echo x")], 0, 9), ([FAIL, C("nvidia-smi")], 0, 9)],
    8: [
        ([FAIL, C("a", 1), C("b", 1), C("c", 1)], 0, 9),  # three distinct
        ([FAIL, C("frobnicate"), C("frobnicate")], 0, 9),
    ],  # nothing fails again
}


def test_nine_rules_in_order():
    _, rules = load_rules()
    assert [r.id for r in rules] == list(range(1, 10))
    assert [r.label for r in rules] == [
        "Abort",
        "Loop",
        "Other",
        "Inspect",
        "Adapt",
        "Adapt",
        "Adapt",
        "Loop",
        "Other",
    ]
    assert set(MUST) == set(range(1, 10))
    assert set(MUST_NOT) == set(range(1, 9))  # rule 9 always holds


@pytest.mark.parametrize(
    ("rule", "actions", "index"),
    [(r, a, i) for r, cases in MUST.items() for a, i in cases],
)
def test_must_match(rule, actions, index):
    assert label_failure(actions, index)[0] == rule


@pytest.mark.parametrize(
    ("rule", "actions", "index", "instead"),
    [(r, a, i, n) for r, cases in MUST_NOT.items() for a, i, n in cases],
)
def test_must_not_match(rule, actions, index, instead):
    got = label_failure(actions, index)[0]
    assert got != rule
    assert got == instead


def test_label_attempt_labels_every_failed_command():
    actions = [C("make", 2), C("make", 2), C("make clean"), C("echo ok"), FINISH]
    # make#1 -> next is the same command (rule 3, Other); make#2 -> window holds make clean
    # (rule 6, Adapt); the commands that succeeded are not labelled.
    assert label_attempt(actions) == [(0, 3, "Other"), (1, 6, "Adapt")]

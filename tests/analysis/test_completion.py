"""Completion judgment: what counts as exercising the artifact comes from the task itself."""

from deploybench.analysis.completion import entry_points, judge, runs_entry_point

TINYTRAIN = {"id": "tinytrain_demo24", "entry_points": ["python train.py", "train.py"]}
LEGACYCALC = {
    "id": "legacycalc_demo24",
    "designated_experiment": "build it, then run `./legacycalc < examples/formulas.txt`; the "
    "output must match examples/expected.txt",
}


def test_entry_points_field_wins_over_prose():
    task = {**TINYTRAIN, "designated_experiment": "run `python other.py`"}
    assert entry_points(task) == ["python train.py", "train.py"]


def test_entry_points_from_the_designated_experiment():
    assert entry_points(LEGACYCALC) == ["./legacycalc < examples/formulas.txt", "./legacycalc"]


def test_verifier_target_is_an_entry_point():
    verdict = {
        "layer2": {
            "checks": [
                {
                    "name": "binary_built",
                    "passed": False,
                    "detail": "no executable ELF binary at "
                    "/home/vm/Desktop/legacycalc_demo24/build/calc",
                },
                {
                    "name": "env",
                    "passed": False,
                    "detail": "no /home/vm/Desktop/legacycalc_demo24/env/bin/python",
                },
                {
                    "name": "data",
                    "passed": False,
                    "detail": "missing /home/vm/Desktop/legacycalc_demo24/out.json",
                },
            ]
        }
    }
    points = entry_points({"id": "legacycalc_demo24"}, verdict)
    assert points == ["build/calc"]
    assert runs_entry_point("cd build && ./calc < in.txt", ["calc"])


def test_meaningful_runs_of_an_entry_point():
    points = entry_points(TINYTRAIN)
    for command in (
        "env/bin/python3 train.py --data d.csv --epochs 1",
        "source env/bin/activate && python train.py",
        "sudo timeout 60 python3.10 train.py",
        "./train.py --epochs 1",
    ):
        assert runs_entry_point(command, points), command


def test_shallow_checks_do_not_exercise_the_artifact():
    points = entry_points(TINYTRAIN)
    for command in (
        "python -c 'import numpy, train'",
        "python train.py --help",
        "python toy_example.py",
        "cat train.py",
        "ls train.py",
    ):
        assert not runs_entry_point(command, points), command


def test_judge_looks_at_the_last_check_before_the_runbook():
    points = entry_points(TINYTRAIN)
    runbook = "printf 'STATUS: SUCCESS' > RUNBOOK.MD"
    assert judge(["pip install numpy", "python train.py --epochs 1", runbook], points) == (
        "meaningful"
    )
    # ran it early, but the last check was an import only: shallow
    assert judge(["python train.py", "python -c 'import train'", runbook], points) == "shallow"
    assert judge([runbook], points) == "none"
    assert judge([], points) == "none"

"""A tool is recognised however an agent invokes it: by path, through `python -m`, under
sudo/env/nohup/timeout/conda run, inside `bash -c '...'`. Each form has examples that must
reach the bare tool and near misses that must not."""

import pytest

from deploybench.analysis.invocation import canonical
from deploybench.analysis.phases import classify
from deploybench.analysis.recovery import Action, label_failure

MUST = [
    ("env/bin/pip install torch==2.1", "pip install torch==2.1"),
    ("./env/bin/pip install -r requirements.txt", "pip install -r requirements.txt"),
    ("./env/bin/python -m pip install numpy", "pip install numpy"),
    ("/opt/x/bin/pip install x", "pip install x"),
    ("/home/vm/Desktop/t/env/bin/python3.10 train.py", "python3.10 train.py"),
    ("python3 -m pip show torch", "pip show torch"),
    ("uv pip install flask", "pip install flask"),
    ("sudo apt-get install -y gcc", "apt-get install -y gcc"),
    ("sudo -E env/bin/pip install x", "pip install x"),
    ("sudo -u vm -H make -j4", "make -j4"),
    ("env CUDA_VISIBLE_DEVICES=0 python train.py", "python train.py"),
    ("env -i PATH=/usr/bin make", "make"),
    ("CUDA_HOME=/usr/local/cuda TORCH_CUDA_ARCH_LIST='8.9' pip install -e .", "pip install -e ."),
    ("nohup python server.py", "python server.py"),
    ("timeout 600 ./env/bin/python -m pytest -x", "python -m pytest -x"),
    ("timeout -s KILL 30 make test", "make test"),
    ("timeout --kill-after=5 60s cmake ..", "cmake .."),
    ("bash -c 'pip install x'", "pip install x"),
    ('sh -lc "make -C src all"', "make -C src all"),
    ("conda run -n nlu pip install transformers==4.4.2", "pip install transformers==4.4.2"),
    ("conda run --no-capture-output -n x python train.py", "python train.py"),
    ("sudo nohup timeout 100 env X=1 /usr/bin/make install", "make install"),
    ("time make -j2", "make -j2"),
    ("nice -n 10 make", "make"),
]
MUST_NOT = [
    # (typed, stays) — a script by path is the artifact itself, not a tool
    ("./bin/server --port 9", "./bin/server --port 9"),
    ("./configure --prefix=/usr", "./configure --prefix=/usr"),
    ("env | grep CUDA", "env | grep CUDA"),
    ("env", "env"),
    ("command -v nvcc", "command -v nvcc"),
    ("X=1", "X=1"),
    ("bash -c 'a' extra", "bash -c 'a' extra"),
    ("echo pip install x", "echo pip install x"),
    ("python -m venv env", "python -m venv env"),
]


@pytest.mark.parametrize(("typed", "bare"), MUST)
def test_forms_reach_the_bare_tool(typed, bare):
    assert canonical(typed) == bare


@pytest.mark.parametrize(("typed", "stays"), MUST_NOT)
def test_near_misses_are_left_alone(typed, stays):
    assert canonical(typed) == stays


@pytest.mark.parametrize(
    ("typed", "phase"),
    [
        ("env/bin/pip install -r requirements.txt", "Install"),
        ("./env/bin/python -m pip install numpy", "Install"),
        ("/opt/x/bin/pip install x", "Install"),
        ("conda run -n x pip install y", "Install"),
        ("bash -c 'apt-get install -y gcc'", "Install"),
        ("env/bin/pip show torch", "Env. Inspect"),
        ("./env/bin/python --version", "Env. Inspect"),
        ("sudo -E timeout 60 /usr/bin/make -j2", "Build"),
        ("env/bin/pip uninstall -y torch", "Install"),
    ],
)
def test_phases_see_the_bare_tool(typed, phase):
    assert classify(typed) == phase


def _cmd(command, exit_code=0):
    return Action(kind="command", command=command, exit_code=exit_code, soft_timeout=False)


@pytest.mark.parametrize(
    ("after", "label"),
    [
        ("env/bin/pip show torch", "Inspect"),
        ("./env/bin/python -m pip show torch", "Inspect"),
        ("sudo env/bin/pip install torch==2.1.0", "Adapt"),
        ("conda run -n x pip install 'numpy<2' numpy<=1.26", "Adapt"),
        ("env/bin/pip uninstall -y torch", "Adapt"),
    ],
)
def test_recovery_rules_see_the_bare_tool(after, label):
    actions = [_cmd("env/bin/python train.py", 1), _cmd(after), _cmd("env/bin/python train.py")]
    assert label_failure(actions, 0)[1] == label

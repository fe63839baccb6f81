"""Every phase has sub-commands it must take and near misses it must not (they fall to the
phase named beside them), so a change to phase_rules.yaml that moves them fails here."""

import pytest

from deploybench.analysis.phases import OTHER, classify, load_rules, phase_names

MUST = {
    "Explore": [
        "ls -la",
        "find . -name '*.py'",
        "grep -rn TODO src",
        "git status",
        "pwd",
        "rg cuda",
        "git log --oneline",
    ],
    "Env. Inspect": [
        "nvidia-smi",
        "python3 --version",
        "pip list",
        "uname -a",
        "df -h",
        "cat /etc/os-release",
        "dpkg -l",
        "which nvcc",
        "free -g",
        "python -c 'import torch; print(torch.__version__)'",
    ],
    "FileRead": [
        "cat README.md",
        "tail -n 50 build.log",
        "head train.py",
        "sed -n '1,40p' a.py",
        "less paper.md",
        "wc -l data.csv",
    ],
    "Install": [
        "sudo apt-get install -y g++",
        "pip install numpy==1.23.5",
        "python3 -m venv env",
        "npm ci",
        "conda create -n x python=3.9",
        "env/bin/python -m pip install -r requirements.txt",
        "cargo install ripgrep",
        "# ansible ansible.builtin.apt: Install the C++ toolchain",
    ],
    "Build": [
        "make -j8",
        "cmake -S . -B build",
        "g++ -O2 -o calc main.cpp",
        "cargo build",
        "python setup.py build_ext --inplace",
        "./configure --prefix=/usr",
        "bazel build //...",
        "make bzImage",
    ],
    "FileEdit": [
        "sed -i 's/a/b/' x.py",
        "patch -p1 < fix.diff",
        "cat > cfg.ini <<EOF\na=1\nEOF",
        "echo 'x=1' >> .env",
        "git apply fix.patch",
        "printf 'a' | tee cfg.txt",
    ],
    "Config": [
        "export CUDA_HOME=/usr/local/cuda",
        "cd src",
        "mkdir -p data",
        "chmod +x run.sh",
        "ln -s /usr/bin/python3 /usr/bin/python",
        "source env/bin/activate",
        "git checkout v1.0",
        "rm -rf build",
    ],
    "Assets": [
        "wget https://x.org/data.tar.gz",
        "git clone https://github.com/a/b",
        "huggingface-cli download bert-base",
        "tar xzf data.tar.gz",
        "curl -LO https://x.org/model.pt",
        "python download_data.py",
    ],
    "Run/Test": [
        "python train.py --epochs 1",
        "pytest -q",
        "./legacycalc < f.txt",
        "env/bin/python server.py --config kv.ini --port 9",
        "make check",
        "bash run_experiment.sh",
        "curl -s localhost:8080/health",
        "sudo timeout 60 python eval.py",
        "python -c 'import torch'",
    ],
    "Service": [
        "nohup python server.py > log 2>&1 &",
        "systemctl restart nginx",
        "qemu-system-x86_64 -kernel bzImage",
        "pkill -f server.py",
        "./server --port 80 &",
        "ps aux",
    ],
    "Finish": [
        "printf 'STATUS: SUCCESS\\n' > RUNBOOK.MD",
        "cat > RUNBOOK.MD <<EOF\nx\nEOF",
        "echo done",
        "exit 0",
        "# ansible ansible.builtin.template: Write RUNBOOK.MD",
    ],
}

# (sub-command, the phase it must NOT get, the phase it gets instead)
MUST_NOT = {
    "Explore": [("git clone https://x/y", "Assets"), ("git checkout main", "Config")],
    "Env. Inspect": [("pip install torch", "Install"), ("python -c 'import torch'", "Run/Test")],
    "FileRead": [("cat > f.txt <<EOF\nx\nEOF", "FileEdit"), ("cat RUNBOOK.MD > x", "Finish")],
    "Install": [("pip list", "Env. Inspect"), ("apt list --installed", "Env. Inspect")],
    "Build": [("make check", "Run/Test"), ("make test", "Run/Test")],
    "FileEdit": [("echo hi > RUNBOOK.MD", "Finish"), ("sed -n 1,5p a.py", "FileRead")],
    "Config": [("git status", "Explore"), ("pip install -e .", "Install")],
    "Assets": [("curl localhost:5000/kv/a", "Run/Test"), ("tail -n 3 data.tar.gz.log", "FileRead")],
    "Run/Test": [("python server.py &", "Service"), ("python3 -m pip install x", "Install")],
    "Service": [("./bin/server --port 9", "Run/Test"), ("pip show flask", "Env. Inspect")],
    "Finish": [("echo hi > notes.md", "FileEdit"), ("echo doneness", OTHER)],
}


def test_every_phase_is_tested_in_the_documented_order():
    names = [p.name for p in load_rules()]
    assert names == list(MUST) == list(MUST_NOT)
    assert names == [
        "Explore",
        "Env. Inspect",
        "FileRead",
        "Install",
        "Build",
        "FileEdit",
        "Config",
        "Assets",
        "Run/Test",
        "Service",
        "Finish",
    ]
    assert phase_names()[-1] == OTHER


@pytest.mark.parametrize(
    ("phase", "subcommand"), [(p, s) for p, items in MUST.items() for s in items]
)
def test_must_match(phase, subcommand):
    assert classify(subcommand) == phase


@pytest.mark.parametrize(
    ("phase", "subcommand", "instead"),
    [(p, s, i) for p, items in MUST_NOT.items() for s, i in items],
)
def test_must_not_match(phase, subcommand, instead):
    got = classify(subcommand)
    assert got != phase
    assert got == instead


def test_unknown_is_other():
    assert classify("frobnicate --all") == OTHER

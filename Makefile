# DeployBench make targets. Every target installs what it needs first (host packages as root,
# then a virtual environment in .venv with the package), so a fresh clone needs only `make`.
VENV     ?= .venv
PYTHON   ?= python3
DB       := $(VENV)/bin/deploybench
BACKEND  ?= local
MACHINES ?= 1
TASKS    ?=
CPU_ONLY ?=
PYTEST_ARGS ?=
SHELL    := /bin/bash
.SHELLFLAGS := -o pipefail -c
# A host's pip configuration may name package indexes that are folders this machine lacks
# (extra-index-url file:///...); pip then warns about each of them for every package, over a
# hundred lines that say nothing about the project. Only those lines are dropped; every other
# line, and pip's exit code (pipefail), is kept.
PIP_NOISE := is ignored: it is neither a file nor a directory

.PHONY: install test check lint demo provision destroy machines bench validate-references report clean

$(VENV)/.installed: pyproject.toml .ci/apt-packages.txt
	scripts/install_host_deps.sh
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	$(VENV)/bin/pip install -q -e '.[dev]' 2>&1 | { grep -v "$(PIP_NOISE)" || true; }
	touch $@

install: $(VENV)/.installed

# Two workers (pytest-xdist): the long tests mostly wait on their machines, so a second worker
# keeps the cores busy meanwhile; worksteal hands a finished worker the other's remaining tests.
test: install
	$(VENV)/bin/pytest -n 2 --dist worksteal $(PYTEST_ARGS)

# The edit loop: every test not marked slow (no machine is made), over the cores.
check: install
	$(VENV)/bin/pytest -m "not slow" -q -n auto $(PYTEST_ARGS)

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	terraform fmt -check -recursive terraform
	$(VENV)/bin/ansible-lint

demo: install
	$(DB) run --backend local --demo --agents reference,nop,overclaim --parallel 2 --run-id demo-$(shell date +%Y%m%d-%H%M%S)

provision: install
	$(DB) provision --backend $(BACKEND) --machines $(MACHINES)

machines: install
	$(DB) machines

destroy: install
	$(DB) destroy

validate-references: install
	$(DB) validate-references $(if $(TASKS),--tasks $(TASKS),--demo) $(if $(SOURCE_MIRROR),--source-mirror $(SOURCE_MIRROR)) $(if $(CPU_ONLY),--cpu-only)

bench: install
	$(VENV)/bin/python scripts/bench_local_machines.py

clean:
	rm -rf $(VENV) build *.egg-info

RUN ?=
report: install
	@test -n "$(RUN)" || { echo "make report RUN=runs/<run-id>"; exit 2; }
	$(DB) report $(RUN) --out $(RUN)/report

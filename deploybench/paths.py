"""Where things live: the checkout (playbooks, roles, terraform) and the host state folder."""

import os
from pathlib import Path

# The package sits inside the checkout; playbooks, roles and terraform are siblings of it.
REPO_ROOT = Path(os.environ.get("DEPLOYBENCH_REPO", Path(__file__).resolve().parent.parent))
TERRAFORM_DIR = REPO_ROOT / "terraform"
PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
ROLES_DIR = REPO_ROOT / "roles"
TASKS_DIR = REPO_ROOT / "tasks"
REFERENCE_SETUPS_DIR = REPO_ROOT / "reference_setups"
VERIFIERS_DIR = REPO_ROOT / "verifiers"


def state_home() -> Path:
    """Host-wide state: cached images, live machines, deployments. Root-owned by default
    because local machines need root; DEPLOYBENCH_HOME moves it (tests use a temp folder)."""
    return Path(os.environ.get("DEPLOYBENCH_HOME", "/var/lib/deploybench"))


def runs_dir() -> Path:
    return Path(os.environ.get("DEPLOYBENCH_RUNS", Path.cwd() / "runs"))

"""Where things live: the checkout (playbooks, roles, terraform) and the host state folder."""

import os
from pathlib import Path

# The package sits inside the checkout; playbooks, roles and terraform are siblings of it.
REPO_ROOT = Path(os.environ.get("DEPLOYBENCH_REPO", Path(__file__).resolve().parent.parent))
TERRAFORM_DIR = REPO_ROOT / "terraform"
PLAYBOOKS_DIR = REPO_ROOT / "playbooks"
ROLES_DIR = REPO_ROOT / "roles"
# A task's three homes, by folder name (the layout of the checkout): its task.yaml, its
# reference setup (a role) and its hidden verifier. Everything else builds its paths from these.
TASKS = "tasks"
REFERENCE_SETUPS = "reference_setups"
VERIFIERS = "verifiers"
TASKS_DIR = REPO_ROOT / TASKS
REFERENCE_SETUPS_DIR = REPO_ROOT / REFERENCE_SETUPS
VERIFIERS_DIR = REPO_ROOT / VERIFIERS


def state_home() -> Path:
    """Host-wide state: cached images, live machines, deployments. Root-owned by default
    because local machines need root; DEPLOYBENCH_HOME moves it (tests use a temp folder)."""
    return Path(os.environ.get("DEPLOYBENCH_HOME", "/var/lib/deploybench"))


def runs_dir() -> Path:
    return Path(os.environ.get("DEPLOYBENCH_RUNS", Path.cwd() / "runs"))

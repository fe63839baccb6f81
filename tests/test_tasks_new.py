"""`deploybench tasks new ID`: the three pieces of a new catalog task from commented templates;
`tasks validate` names every piece and line still to fill, and passes once they are filled."""

import shutil
import subprocess

import pytest
import yaml

from deploybench.catalog import new_task
from tests.conftest import REPO, run_cli

TASK = "demo_x24"


def fill(root):
    """What a newcomer does, reduced to its form: every TODO(tasks new) comment line deleted,
    every value line kept without its TODO comment (a real task puts its own values there)."""
    for path in (p for p in root.rglob("*") if p.is_file() and p.name != "schema.json"):
        lines = []
        for line in path.read_text().splitlines():
            if new_task.MARKER not in line:
                lines.append(line)
            elif not line.lstrip().startswith("#"):
                lines.append(line.split("  #")[0])
        path.write_text("\n".join(lines) + "\n")


@pytest.fixture
def checkout(tmp_path):
    """A checkout of its own for the command to write into (DEPLOYBENCH_REPO), with the schema."""
    (tmp_path / "tasks").mkdir()
    shutil.copy(REPO / "tasks" / "schema.json", tmp_path / "tasks" / "schema.json")
    return tmp_path


def test_new_then_validate_names_the_three_pieces_and_passes_once_filled(checkout):
    env = {"DEPLOYBENCH_REPO": str(checkout)}
    made = run_cli("tasks", "new", TASK, env=env, cwd=checkout).stdout
    print(made)
    pieces = ("tasks/demo_x24/task.yaml", "reference_setups/demo_x24/tasks/main.yml")
    pieces += ("verifiers/demo_x24/checks.yaml", "verifiers/demo_x24/experiment.sh")
    for piece in pieces:
        assert f"wrote {piece}" in made
    for path in checkout.rglob("*.y*ml"):
        yaml.safe_load(path.read_text())  # every template renders to YAML
    proc = run_cli("tasks", "validate", f"tasks/{TASK}", env=env, cwd=checkout, check=False)
    print(proc.stdout)
    assert proc.returncode != 0
    for home in ("tasks/demo_x24/", "reference_setups/demo_x24/", "verifiers/demo_x24/"):
        assert f"{home}" in proc.stdout and "still the template's TODO(tasks new)" in proc.stdout
    # Again: nothing is overwritten.
    again = run_cli("tasks", "new", TASK, env=env, cwd=checkout, check=False)
    assert again.returncode != 0 and "exists already" in again.stderr

    fill(checkout)
    done = run_cli("tasks", "validate", f"tasks/{TASK}", env=env, cwd=checkout)
    assert "1 task(s) valid" in done.stdout


def test_a_bad_id_is_one_line_and_writes_nothing(checkout):
    env = {"DEPLOYBENCH_REPO": str(checkout)}
    proc = run_cli("tasks", "new", "Bad-Id", env=env, cwd=checkout, check=False)
    assert proc.returncode != 0 and "bad task id 'Bad-Id'" in proc.stderr
    assert sorted(p.name for p in checkout.rglob("*")) == ["schema.json", "tasks"]


def test_a_missing_piece_is_named(checkout):
    new_task.create(TASK, checkout)
    fill(checkout)
    shutil.rmtree(checkout / "verifiers")
    from deploybench.catalog import validate_all

    assert validate_all(checkout / "tasks", [checkout / "tasks" / TASK]) == [
        f"tasks/{TASK}/task.yaml: no verifier (verifiers/{TASK}/)"
    ]


@pytest.mark.slow
def test_the_new_role_passes_ansible_lint_as_written(checkout):
    new_task.create(TASK, checkout)
    lint = REPO / ".venv" / "bin" / "ansible-lint"
    proc = subprocess.run(
        [str(lint) if lint.exists() else "ansible-lint", "--profile", "production",
         f"reference_setups/{TASK}"],
        cwd=checkout, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]

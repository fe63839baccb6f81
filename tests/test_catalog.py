"""The task model: tasks/schema.json, catalog.load_tasks / validate_all, `deploybench tasks`."""

import copy
import json
import shutil

import jsonschema
import pytest
import yaml

from deploybench import catalog
from deploybench.errors import DeployBenchError
from deploybench.paths import TASKS_DIR
from tests.conftest import REPO, run_cli

GOOD = {
    "id": "adalora_iclr23",
    "title": "Adaptive Budget Allocation for Parameter-Efficient Fine-Tuning",
    "venue": "ICLR",
    "year": 2023,
    "domain": "ai_ml",
    "difficulty": "medium",
    "gpu": True,
    "qemu": False,
    "legacy": False,
    "languages": ["Python"],
    "repo": {
        "url": "https://github.com/QingruZhang/AdaLoRA",
        "commit": "a" * 40,
        "commit_date": "2023-06-01",
        "ref": "main",
        "pin_reason": "the last commit on the default branch",
    },
    "paper": {
        "title": "Adaptive Budget Allocation for Parameter-Efficient Fine-Tuning",
        "url": "https://arxiv.org/abs/2303.10512",
    },
    "agent_minutes": 30,
    "verify_minutes": 10,
    "max_steps": 120,
    "machine": {"type": "1gpu", "vcpus": 16, "memory_gb": 64, "disk_gb": 200, "gpu_count": 1},
    "entry_points": ["NLU/examples/text-classification/run_glue.py"],
    "designated_experiment": "run_glue.py on CoLA for 30 steps",
    "validated": None,
}
REQUIRED = catalog.schema()["required"]

# For every required field: a value of the wrong type (or out of its range).
WRONG = {
    "id": ("AdaLoRA-ICLR23", "does not match"),
    "title": (42, "is not of type 'string'"),
    "venue": (["ICLR"], "is not of type 'string'"),
    "year": ("2023", "is not of type 'integer'"),
    "domain": ("ml", "is not one of"),
    "difficulty": ("trivial", "is not one of"),
    "gpu": ("yes", "is not of type 'boolean'"),
    "qemu": (0, "is not of type 'boolean'"),
    "legacy": ("no", "is not of type 'boolean'"),
    "languages": ("Python", "is not of type 'array'"),
    "repo": ("https://github.com/x/y", "is not of type 'object'"),
    "paper": ("https://arxiv.org", "is not of type 'object'"),
    "agent_minutes": (90, "is greater than the maximum of 60"),
    "verify_minutes": ("10", "is not of type 'integer'"),
    "machine": ([16, 64], "is not of type 'object'"),
    "designated_experiment": (None, "is not of type 'string'"),
    "validated": ("yesterday", "is not valid under any of the given schemas"),
}


def make_tree(tmp_path, tasks=(GOOD,), with_setups=True):
    """A checkout-like tree: tasks/ (schema, task.yaml), reference_setups/, verifiers/."""
    tasks_dir = tmp_path / "tasks"
    tasks_dir.mkdir()
    shutil.copy(TASKS_DIR / "schema.json", tasks_dir / "schema.json")
    for task in tasks:
        folder = tasks_dir / task["id"]
        folder.mkdir()
        (folder / "task.yaml").write_text(yaml.safe_dump(task, sort_keys=False))
        if with_setups:
            (tmp_path / "reference_setups" / task["id"]).mkdir(parents=True)
            (tmp_path / "verifiers" / task["id"]).mkdir(parents=True)
            (tmp_path / "verifiers" / task["id"] / "experiment.sh").write_text("true\n")
            (tmp_path / "verifiers" / task["id"] / "checks.yaml").write_text(
                "checks:\n  - {name: ran, kind: exists, file: out.txt}\n"
            )
    return tasks_dir


def write(tasks_dir, task_id, data):
    (tasks_dir / task_id / "task.yaml").write_text(yaml.safe_dump(data, sort_keys=False))


def test_schema_is_valid_2020_12():
    schema = catalog.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


def test_good_task_is_valid(tmp_path):
    tasks_dir = make_tree(tmp_path)
    assert catalog.validate_all(tasks_dir) == []
    assert list(catalog.load_tasks(tasks_dir)) == ["adalora_iclr23"]


def test_every_required_field_is_tested():
    assert set(WRONG) == set(REQUIRED)


@pytest.mark.parametrize("field", sorted(set(GOOD) - {"entry_points"}))
def test_missing_required_field_is_named(tmp_path, field):
    tasks_dir = make_tree(tmp_path)
    data = copy.deepcopy(GOOD)
    del data[field]
    write(tasks_dir, "adalora_iclr23", data)
    problems = catalog.validate_all(tasks_dir)
    assert f"tasks/adalora_iclr23/task.yaml: field {field}: required field is missing" in problems
    with pytest.raises(DeployBenchError, match=f"task.yaml: field {field}: required"):
        catalog.load_tasks(tasks_dir)


@pytest.mark.parametrize("field", sorted(WRONG))
def test_wrong_type_is_named_with_reason(tmp_path, field):
    tasks_dir = make_tree(tmp_path)
    value, reason = WRONG[field]
    data = copy.deepcopy(GOOD)
    data[field] = value
    write(tasks_dir, "adalora_iclr23", data)
    problems = catalog.validate_all(tasks_dir)
    lines = [p for p in problems if f": field {field}" in p]
    assert lines, problems
    assert lines[0].startswith("tasks/adalora_iclr23/task.yaml: field ")
    assert reason in lines[0], lines


@pytest.mark.parametrize(
    ("path", "value", "expect"),
    [
        (("repo", "commit"), "abc", "field repo/commit: 'abc' does not match"),
        (("repo", "url"), None, "field repo/url: None is not of type 'string'"),
        (("paper", "url"), 3, "field paper/url: 3 is not of type 'string'"),
        (("machine", "vcpus"), 0, "field machine/vcpus: 0 is less than the minimum of 1"),
        (("machine", "gpu_count"), "1", "field machine/gpu_count: '1' is not of type"),
        (("machine", "disk_gb"), None, "field machine/disk_gb: None is not of type 'number'"),
    ],
)
def test_nested_fields(tmp_path, path, value, expect):
    tasks_dir = make_tree(tmp_path)
    data = copy.deepcopy(GOOD)
    data[path[0]][path[1]] = value
    write(tasks_dir, "adalora_iclr23", data)
    assert any(expect in p for p in catalog.validate_all(tasks_dir)), catalog.validate_all(
        tasks_dir
    )


@pytest.mark.parametrize("field", ["url", "commit"])
def test_missing_nested_required(tmp_path, field):
    tasks_dir = make_tree(tmp_path)
    data = copy.deepcopy(GOOD)
    del data["repo"][field]
    write(tasks_dir, "adalora_iclr23", data)
    assert (
        f"tasks/adalora_iclr23/task.yaml: field repo/{field}: required field is missing"
        in catalog.validate_all(tasks_dir)
    )


def test_agent_minutes_range_depends_on_demo(tmp_path):
    tasks_dir = make_tree(tmp_path)
    data = copy.deepcopy(GOOD)
    data["agent_minutes"] = 5
    write(tasks_dir, "adalora_iclr23", data)
    assert any(
        "field agent_minutes: 5 is less than the minimum of 10" in p
        for p in catalog.validate_all(tasks_dir)
    )
    data["demo"] = True
    problems = catalog.schema_problems(data, "x", catalog.schema())
    assert problems == []


def test_gpu_task_needs_a_gpu(tmp_path):
    data = copy.deepcopy(GOOD)
    data["machine"]["gpu_count"] = 0
    problems = catalog.schema_problems(data, "x", catalog.schema())
    assert problems == ["x: field machine/gpu_count: 0 is less than the minimum of 1"]


def test_validated_record(tmp_path):
    data = copy.deepcopy(GOOD)
    data["validated"] = {
        "at": "2026-11-29T07:40:00Z",
        "backend": "local",
        "image": "debian12",
        "run_id": "r1",
    }
    assert catalog.schema_problems(data, "x", catalog.schema()) == []
    data["validated"]["at"] = "last tuesday"
    assert any(
        "field validated/at" in p for p in catalog.schema_problems(data, "x", catalog.schema())
    )


def test_unknown_field_and_optional_fields(tmp_path):
    data = copy.deepcopy(GOOD)
    data.update(demo=False, entry_points=["python train.py"], max_steps=100)
    assert catalog.schema_problems(data, "x", catalog.schema()) == []
    data["agent_minute"] = 30
    assert catalog.schema_problems(data, "x", catalog.schema()) == [
        "x: field (top level): unknown field ('agent_minute' was unexpected)"
    ]
    data = copy.deepcopy(GOOD)
    data["entry_points"] = "python train.py"
    assert any(
        "field entry_points" in p for p in catalog.schema_problems(data, "x", catalog.schema())
    )


def test_folder_name_must_equal_id(tmp_path):
    tasks_dir = make_tree(tmp_path)
    (tasks_dir / "adalora_iclr23").rename(tasks_dir / "adalora_iclr22")
    problems = catalog.validate_all(tasks_dir)
    assert any("field id: 'adalora_iclr23' does not equal its folder name" in p for p in problems)
    with pytest.raises(DeployBenchError, match="folder name"):
        catalog.load_tasks(tasks_dir)


def test_a_task_without_reference_setup_or_verifier_loads_but_does_not_validate(tmp_path):
    # It loads (tasks list shows it, "no/no"), but `tasks validate` names what it lacks: a
    # catalog task is runnable only with both.
    tasks_dir = make_tree(tmp_path, with_setups=False)
    assert catalog.validate_all(tasks_dir) == [
        "tasks/adalora_iclr23/task.yaml: no reference setup (reference_setups/adalora_iclr23/)",
        "tasks/adalora_iclr23/task.yaml: no verifier (verifiers/adalora_iclr23/)",
    ]
    assert catalog.homes("adalora_iclr23", tmp_path) == {
        "reference_setup": False,
        "verifier": False,
    }
    # A verifier folder without its experiment and its checks is a problem.
    (tmp_path / "verifiers" / "adalora_iclr23").mkdir(parents=True)
    problems = catalog.validate_all(tasks_dir)
    for missing in ("experiment.sh", "checks.yaml"):
        assert (
            "tasks/adalora_iclr23/task.yaml: verifier incomplete: "
            f"verifiers/adalora_iclr23/{missing} does not exist"
        ) in problems
    assert "adalora_iclr23" in catalog.load_tasks(tasks_dir)


@pytest.mark.parametrize(
    ("path", "value", "expect"),
    [
        (("repo", "commit_date"), None, "field repo/commit_date: required field is missing"),
        (("repo", "pin_reason"), None, "field repo/pin_reason: required field is missing"),
        (("paper", "title"), None, "field paper/title: required field is missing"),
        (("machine", "type"), None, "field machine/type: required field is missing"),
        (("repo", "url"), "demo:tasks/x/artifact", "field repo/url: 'demo:tasks/x/artifact'"),
        (("languages",), ["Python 3"], "field languages/0: 'Python 3' is not one of"),
        (("machine", "type"), "1cpu", "field machine/type: '1gpu' was expected"),
    ],
)
def test_catalog_tasks_need_the_c1_facts(path, value, expect):
    data = copy.deepcopy(GOOD)
    target = data
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    problems = catalog.schema_problems(data, "x", catalog.schema())
    assert any(expect in p for p in problems), problems
    # A demo task needs none of them but a main language of the eleven.
    if value is None:
        data["demo"] = True
        data["agent_minutes"] = 10
        assert catalog.schema_problems(data, "x", catalog.schema()) == []


def test_submodules_are_pinned(tmp_path):
    data = copy.deepcopy(GOOD)
    data["repo"]["submodules"] = [
        {"path": "m", "url": "https://github.com/a/b", "commit": "b" * 40}
    ]
    assert catalog.schema_problems(data, "x", catalog.schema()) == []
    data["repo"]["submodules"][0]["commit"] = "master"
    assert any(
        "field repo/submodules/0/commit" in p
        for p in catalog.schema_problems(data, "x", catalog.schema())
    )


def test_counts_are_computed_without_demo_tasks():
    cpu = copy.deepcopy(GOOD) | {"id": "b_x1", "gpu": False, "domain": "systems"}
    cpu["languages"] = ["Rust", "Python"]
    cpu["legacy"] = True
    demo = copy.deepcopy(GOOD) | {"id": "c_demo24", "demo": True}
    have = catalog.counts({"a": GOOD, "b": cpu, "c": demo})
    assert have["tasks"] == 2 and have["ai_ml"] == 1 and have["systems"] == 1
    assert have["gpu"] == 1 and have["legacy"] == 1 and have["languages"] == 2
    assert have["medium"] == 2 and have["easy"] == 0
    problems = catalog.count_problems({"a": GOOD})
    assert "catalog: tasks is 1, the paper has 51" in problems


def test_bad_yaml_is_one_line(tmp_path):
    tasks_dir = make_tree(tmp_path)
    (tasks_dir / "adalora_iclr23" / "task.yaml").write_text("id: [unclosed\n")
    problems = catalog.validate_all(tasks_dir)
    assert len(problems) == 1 and problems[0].startswith(
        "tasks/adalora_iclr23/task.yaml: not valid YAML (line"
    )
    (tasks_dir / "adalora_iclr23" / "task.yaml").write_text("- a list\n")
    assert catalog.validate_all(tasks_dir) == [
        "tasks/adalora_iclr23/task.yaml: field (top level): must be a mapping, got list"
    ]


def test_shipped_catalog_is_valid():
    assert catalog.validate_all() == []
    tasks = catalog.load_tasks()
    demos = [t for t in tasks.values() if t.get("demo")]
    assert len(demos) >= 3


def test_shipped_catalog_has_the_papers_counts():
    tasks = catalog.load_tasks()
    assert catalog.count_problems(tasks) == []
    assert catalog.counts(tasks) == catalog.PAPER_COUNTS
    main = {t["languages"][0] for t in catalog.catalog_tasks(tasks).values()}
    assert main == {
        "Python", "C/C++", "Rust", "Fortran", "Julia", "R", "Haskell", "Lua", "Racket",
        "JavaScript", "Java",
    }  # fmt: skip


def test_shipped_catalog_static_facts():
    """Unique ids, full commits, the authors' repositories, dual variants sharing a commit,
    and `legacy` agreeing with the years: the checks CI can make without the network."""
    tasks = catalog.catalog_tasks(catalog.load_tasks())
    assert len(tasks) == len(set(tasks)) == 51
    for task_id, t in tasks.items():
        assert t["repo"]["url"].startswith("https://github.com/"), task_id
        assert len(t["repo"]["commit"]) == 40, task_id
        for sub in t["repo"].get("submodules", []):
            assert len(sub["commit"]) == 40, (task_id, sub)
        assert t["gpu"] == (t["machine"]["gpu_count"] >= 1), task_id
        # Legacy: released 2011-2018 and untouched since 2020.
        if t["legacy"]:
            assert 2011 <= t["year"] <= 2018, task_id
    for base in ("gan_neurips14", "maml_icml17"):
        cpu, gpu = tasks[f"{base}_cpu"], tasks[f"{base}_gpu"]
        for key in ("url", "commit", "submodules"):
            assert cpu["repo"].get(key) == gpu["repo"].get(key), (base, key)
        assert not cpu["gpu"] and gpu["gpu"]
    for paper_id in (
        "adalora_iclr23", "gan_neurips14_cpu", "gan_neurips14_gpu", "mmseg_github24",
        "silt_sosp11", "kflex_sosp24",
    ):  # fmt: skip
        assert paper_id in tasks


def test_cli_list_prints_the_summary():
    listed = run_cli("tasks", "list").stdout
    assert "catalog: 51 tasks (3 demo tasks apart, not counted)" in listed
    assert "25 ai_ml, 19 systems, 7 scientific" in listed
    assert "22 GPU; 5 QEMU/kernel; 10 legacy" in listed
    assert "12 easy, 20 medium, 19 hard" in listed
    assert "11 language ecosystems" in listed
    assert "equals the paper's counts: yes" in listed
    assert "(paper:" not in listed
    # How many catalog tasks passed here, counted from the task files' records (demo tasks not).
    records = [
        yaml.safe_load(path.read_text()).get("validated")
        for path in sorted(TASKS_DIR.glob("*/task.yaml"))
        if not yaml.safe_load(path.read_text()).get("demo")
    ]
    cpu = sum(bool(v and v.get("cpu_only")) for v in records)
    full = sum(bool(v) for v in records) - cpu
    assert full >= 13 and cpu >= 1, (full, cpu)
    assert (
        f"reference setup passed its verifier here: {full + cpu}/51 ({full} in full, {cpu} on"
        " the CPU only: --cpu-only)" in listed
    )
    demo_only = run_cli("tasks", "list", "--demo").stdout
    assert "legacycalc_demo24" in demo_only and "silt_sosp11" not in demo_only


def test_cli_list_show_validate(tmp_path):
    listed = run_cli("tasks", "list").stdout
    for task_id in ("legacycalc_demo24", "tinytrain_demo24", "kvservice_demo24"):
        assert task_id in listed
    for column in ("domain", "difficulty", "gpu", "demo", "validated"):
        assert column in listed
    shown = run_cli("tasks", "show", "tinytrain_demo24").stdout
    assert yaml.safe_load(shown)["id"] == "tinytrain_demo24"
    missing = run_cli("tasks", "show", "nope_x1", check=False)
    assert missing.returncode != 0 and "unknown task 'nope_x1'" in missing.stderr
    assert "task(s) valid" in run_cli("tasks", "validate").stdout


def test_cli_validate_reports_each_problem(tmp_path):
    tasks_dir = make_tree(tmp_path)
    data = copy.deepcopy(GOOD)
    del data["title"]
    data["repo"]["commit"] = "abc"
    write(tasks_dir, "adalora_iclr23", data)
    proc = run_cli("tasks", "validate", tasks_dir / "adalora_iclr23" / "task.yaml", check=False)
    assert proc.returncode != 0
    lines = proc.stdout.splitlines()
    assert "tasks/adalora_iclr23/task.yaml: field title: required field is missing" in lines
    assert any(
        line.startswith("tasks/adalora_iclr23/task.yaml: field repo/commit: 'abc' does not match")
        for line in lines
    )
    assert "2 problem(s)" in proc.stderr


def test_a_catalog_folder_needs_no_schema_of_its_own(tmp_path):
    tasks_dir = make_tree(tmp_path)
    (tasks_dir / "schema.json").unlink()
    assert catalog.validate_all(tasks_dir) == []
    assert list(catalog.load_tasks(tasks_dir)) == ["adalora_iclr23"]


def test_schema_file_is_json():
    json.loads((TASKS_DIR / "schema.json").read_text())


def test_validate_refuses_a_catalog_task_without_its_reference_setup_or_verifier(tmp_path):
    import shutil

    repo = tmp_path / "repo"
    shutil.copytree(REPO / "tasks" / "silt_sosp11", repo / "tasks" / "silt_sosp11")
    problems = catalog.validate_all(repo / "tasks")
    assert any("no reference setup (reference_setups/silt_sosp11/)" in p for p in problems)
    assert any("no verifier (verifiers/silt_sosp11/)" in p for p in problems)
    for part in ("reference_setups", "verifiers"):
        shutil.copytree(REPO / part / "silt_sosp11", repo / part / "silt_sosp11")
    assert catalog.validate_all(repo / "tasks") == []


def test_the_tasks_readme_has_a_row_for_every_field_of_the_schema():
    # The field table is prose for newcomers; the schema is the contract: a field added to one
    # and not the other fails here.
    import json
    import re

    schema = json.loads((REPO / "tasks" / "schema.json").read_text())
    text = (REPO / "tasks" / "README.md").read_text()
    table = text.split("## task.yaml", 1)[1].split("\n## ", 1)[0]
    named = set()
    for row in re.findall(r"^\| ([^|]+) \|", table, re.M):
        named |= {f.strip() for f in row.split(",")}
    assert set(schema["properties"]) <= named, set(schema["properties"]) - named
    assert named - {"field", "---"} <= set(schema["properties"]), named - set(schema["properties"])

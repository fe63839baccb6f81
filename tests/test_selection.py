"""Task selection (catalog/selection.py) over the real catalog, the same for run,
validate-references and tasks list; run --model: one agent per model, one column each."""

import pytest

from deploybench import runfolder
from deploybench.analysis.frames import label_of
from deploybench.attempt.agents import AgentSpec
from deploybench.catalog import load_tasks
from deploybench.catalog.selection import Selection, select
from deploybench.commands.run import with_models
from deploybench.errors import DeployBenchError
from tests.conftest import run_cli

CATALOG = load_tasks()


def ids(**kw):
    return sorted(select(CATALOG, Selection(**kw)))


def test_all_is_the_catalog_without_the_demos():
    every = ids(tasks="all")
    assert len(every) == 51 and not any(CATALOG[t].get("demo") for t in every)


def test_filters_narrow_by_the_catalogs_own_facts():
    want = sorted(
        t for t, v in CATALOG.items()
        if not v.get("demo") and v["domain"] == "scientific" and v["runs_here"]["local"] == "yes"
    )  # fmt: skip
    assert want and ids(tasks="all", domain=("scientific",), runs_here=("yes",)) == want
    gpu = ids(tasks="all", gpu=True)
    assert len(gpu) == 22 and all(CATALOG[t]["gpu"] for t in gpu)
    validated = ids(tasks="all", validated=True)
    assert validated and all(CATALOG[t].get("validated") for t in validated)
    assert set(ids(tasks="all", validated=False)).isdisjoint(validated)
    assert "silt_sosp11" not in ids(tasks="all", exclude=("silt_sosp11",))
    # Filters alone mean the whole catalog, narrowed; ids are narrowed too.
    assert ids(gpu=False, domain=("systems",)) == ids(tasks="all", gpu=False, domain=("systems",))
    assert ids(tasks="silt_sosp11,adalora_iclr23", gpu=False) == ["silt_sosp11"]


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"tasks": "nope"}, "unknown task"),
        ({"tasks": "all", "exclude": ("nope",)}, "unknown task"),
        ({"tasks": "all,silt_sosp11"}, "stands alone"),
        ({"tasks": "all", "domain": ("biology",)}, "--domain biology"),
        ({"tasks": "all", "runs_here": ("maybe",)}, "--runs-here maybe"),
        ({"tasks": "silt_sosp11", "gpu": True}, "the filters left none"),
        ({}, "name the tasks"),
    ],
)
def test_bad_selections_are_one_line(kw, error):
    with pytest.raises(DeployBenchError, match=error):
        select(CATALOG, Selection(**kw))


def test_the_run_prints_its_selection_before_anything_else(tmp_path):
    proc = run_cli(
        "run", "--agent", "nop", "--tasks", "all", "--runs-here", "yes", "--domain",
        "scientific", "--backend", "gcp", "--run-id", "sel", check=False,
    )  # fmt: skip
    want = ids(tasks="all", runs_here=("yes",), domain=("scientific",))
    assert proc.stdout.splitlines()[0] == f"{len(want)} task(s): {', '.join(want)}", proc.stdout
    listed = run_cli("tasks", "list", "--runs-here", "yes", "--domain", "scientific").stdout
    assert all(t in listed for t in want) and "silt_sosp11" not in listed


def test_each_model_gets_its_own_agent_and_column():
    mini = AgentSpec(name="mini", kind="command", model="spec-model", base_url="http://x/v1")
    nop = AgentSpec(name="nop", kind="scripted")
    got = with_models([mini, nop], ["gpt-4o", "org/model:7b"])
    assert [(a.name, a.model) for a in got] == [
        ("mini+gpt-4o", "gpt-4o"), ("mini+org-model-7b", "org/model:7b"), ("nop", None),
    ]  # fmt: skip
    assert [label_of(a.name, a.model) for a in got] == [
        "mini / gpt-4o", "mini / org/model:7b", "nop",
    ]  # fmt: skip
    assert runfolder.agent_of("mini+gpt-4o", "other") == "mini+gpt-4o"
    with pytest.raises(DeployBenchError, match="one name"):
        with_models([mini], ["a/b", "a:b"])

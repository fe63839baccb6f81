"""run.json's provenance (run/provenance.py) and the report's use of it: the harness's commit
and the digests of what judged each task; runs that judged a task with different inputs are not
pooled unless asked, and the tasks are named."""

import json
import shutil
from pathlib import Path

import pytest

from deploybench import runfolder
from deploybench.analysis import load
from deploybench.attempt.agents import AgentSpec
from deploybench.errors import DeployBenchError
from deploybench.run import provenance
from tests.conftest import REPO

DEMO = Path(__file__).parent / "analysis" / "fixtures" / "demo_run"
IMAGE = {"image": "debian12", "recipe_digest": "0b59204aaf2a", "packages_sha256": "c" * 64}


def test_the_record_names_the_commit_and_changes_with_a_verifier(tmp_path):
    got = provenance.record(["tinytrain_demo24"], [AgentSpec(name="nop", kind="scripted")])
    commit = got["harness"]["commit"]
    assert commit and len(commit) == 40 and isinstance(got["harness"]["dirty"], bool)
    digests = got["tasks"]["tinytrain_demo24"]
    assert set(digests) == {"task", "reference_setup", "verifier", "all"}
    assert all(len(v) == 64 for v in digests.values())
    assert set(got["agents"]) == {"nop"}
    # The same task judged by a changed verifier has another digest.
    copy = tmp_path / "repo"
    for part in ("tasks", "reference_setups", "verifiers"):
        shutil.copytree(REPO / part / "tinytrain_demo24", copy / part / "tinytrain_demo24")
    same = provenance.task_digests(["tinytrain_demo24"], copy)["tinytrain_demo24"]
    assert same == digests
    (copy / "verifiers/tinytrain_demo24/checks.yaml").write_text("checks: []\n")
    changed = provenance.task_digests(["tinytrain_demo24"], copy)["tinytrain_demo24"]
    assert changed["verifier"] != digests["verifier"] and changed["all"] != digests["all"]
    assert changed["task"] == digests["task"]


def _run_with(tmp_path, name, digest):
    run = shutil.copytree(DEMO, tmp_path / name)
    tasks = {r["task_id"] for r in load.read_results(run)}
    meta = {
        "run_id": name,
        "provenance": {
            "harness": {"version": "0.1.0", "commit": "a" * 40, "dirty": False},
            **({"image": IMAGE} if name == "two" else {}),
            "tasks": {t: {"all": digest if t == sorted(tasks)[0] else "same"} for t in tasks},
            "agents": {},
        },
    }
    (run / runfolder.RUN_META).write_text(json.dumps(meta))
    return run, sorted(tasks)[0]


def test_pooling_runs_judged_by_other_inputs_is_refused_naming_the_tasks(tmp_path):
    one, task = _run_with(tmp_path, "one", "x" * 64)
    two, _ = _run_with(tmp_path, "two", "y" * 64)
    notes = load.load_runs([one]).notes
    assert notes[0] == "Run one: deploybench 0.1.0 at commit aaaaaaaaaaaa; image not recorded"
    with pytest.raises(DeployBenchError, match=f"different task files.*{task}"):
        load.load_runs([one, two])
    pooled = load.load_runs([one, two], allow_mixed=True).notes
    assert (
        "Run two: deploybench 0.1.0 at commit aaaaaaaaaaaa; image debian12 (recipe_digest "
        f"0b59204aaf2a, packages_sha256 {'c' * 64})"
    ) in pooled
    assert any(n.startswith("Pooled although 1 task(s)") and task in n for n in pooled)


@pytest.mark.slow
def test_a_local_image_is_named_by_its_recipe_and_its_package_set(root_host):
    # The real image of this host (built now if it was not): the digest is of its dpkg status.
    import hashlib

    from deploybench.backends import get_backend
    from deploybench.local import images

    got = get_backend("local").image_identity(None)
    rootfs = images.image_path("debian12")
    status = (rootfs / "var/lib/dpkg/status").read_bytes()
    assert got["image"] == "debian12"
    assert got["recipe_digest"] == images.recipe_for("debian12").digest()
    assert got["packages_sha256"] == hashlib.sha256(status).hexdigest()
    assert b"Package: openssh-server" in status

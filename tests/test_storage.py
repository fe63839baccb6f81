"""Upload and download of run folders against a moto S3 server on loopback."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import boto3
import pytest

from deploybench.errors import DeployBenchError
from deploybench.run import storage
from tests import moto_server
from tests.conftest import run_cli

BUCKET = "deploybench-runs"


@pytest.fixture
def s3(moto, monkeypatch):
    moto_server.set_env(monkeypatch, moto)
    client = boto3.client("s3")
    client.create_bucket(Bucket=BUCKET)
    yield client
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
        for obj in page.get("Contents", []):
            client.delete_object(Bucket=BUCKET, Key=obj["Key"])
    client.delete_bucket(Bucket=BUCKET)


class Counter:
    """Counts the requests that send data, by hooking the client's events."""

    def __init__(self, client, fail_after: int | None = None):
        self.sends = 0
        self.fail_after = fail_after
        for op in ("PutObject", "UploadPart", "CreateMultipartUpload"):
            client.meta.events.register(f"before-call.s3.{op}", self._count)

    def _count(self, **_):
        if self.fail_after is not None and self.sends >= self.fail_after:
            raise ConnectionError("network lost (simulated)")
        self.sends += 1


def make_run(root: Path) -> Path:
    run = root / "runs" / "r1"
    files = {
        "results.jsonl": b'{"task_id": "t1", "passed": true}\n',
        "t1/nop/1/trajectory.jsonl": b'{"step": 1}\n' * 100,
        "t1/nop/1/RUNBOOK.MD": b"Status: FAILED\n",
        "t1/nop/1/machine/terraform.tfstate": b'{"version": 4}',
        "t1/nop/1/empty.txt": b"",
        "t2/nop/1/logs/agent.log": os.urandom(200_000),
    }
    for rel, data in files.items():
        (run / rel).parent.mkdir(parents=True, exist_ok=True)
        (run / rel).write_bytes(data)
    # Never uploaded: the run's private key and Terraform's data folder.
    (run / "t1/nop/1/machine/id_ed25519").write_text("PRIVATE KEY")
    (run / "t1/nop/1/machine/.terraform/providers").mkdir(parents=True)
    (run / "t1/nop/1/machine/.terraform/providers/big").write_bytes(b"x" * 1000)
    return run


def digests(root: Path) -> dict[str, str]:
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file()
    }


def uploadable(run: Path) -> dict[str, str]:
    return {k: v for k, v in digests(run).items() if ".terraform/" not in k and "id_ed" not in k}


def test_upload_download_identical_and_second_upload_sends_nothing(s3, tmp_path):
    run = make_run(tmp_path)
    url = f"s3://{BUCKET}/team/r1"
    first = storage.upload(run, url, client=s3)
    assert sorted(first.sent) == sorted(uploadable(run))
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]}
    assert keys == {f"team/r1/{rel}" for rel in uploadable(run)}

    counter = Counter(s3)
    second = storage.upload(run, url, client=s3)
    assert second.sent == [] and counter.sends == 0
    assert sorted(second.skipped) == sorted(first.sent)

    dest = tmp_path / "copy"
    got = storage.download(url, dest, client=s3)
    assert sorted(got.sent) == sorted(first.sent)
    assert digests(dest) == uploadable(run)
    again = storage.download(url, dest, client=s3)
    assert again.sent == [] and len(again.skipped) == len(first.sent)


def test_changed_file_is_the_only_one_sent(s3, tmp_path):
    run = make_run(tmp_path)
    url = f"s3://{BUCKET}/r1"
    storage.upload(run, url, client=s3)
    # Same size, different content: a size check alone would miss it; the checksum does not.
    (run / "t1/nop/1/RUNBOOK.MD").write_bytes(b"Status: PASSED\n")
    counter = Counter(s3)
    result = storage.upload(run, url, client=s3)
    assert result.sent == ["t1/nop/1/RUNBOOK.MD"] and counter.sends == 1


def test_interrupted_upload_resumes_where_it_stopped(s3, tmp_path):
    run = make_run(tmp_path)
    url = f"s3://{BUCKET}/r1"
    broken = boto3.client("s3")
    Counter(broken, fail_after=2)
    with pytest.raises(Exception, match="network lost"):
        storage.upload(run, url, client=broken)
    arrived = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET).get("Contents", [])}
    assert len(arrived) == 2

    counter = Counter(s3)
    resumed = storage.upload(run, url, client=s3)
    assert len(resumed.skipped) == 2
    assert counter.sends == len(uploadable(run)) - 2
    dest = tmp_path / "copy"
    storage.download(url, dest, client=s3)
    assert digests(dest) == uploadable(run)


def test_large_file_goes_up_in_parts_and_is_still_skipped(s3, tmp_path):
    run = tmp_path / "big"
    run.mkdir()
    (run / "model.bin").write_bytes(os.urandom(66 * 1024 * 1024))  # over the 64 MB threshold
    url = f"s3://{BUCKET}/big"
    counter = Counter(s3)
    storage.upload(run, url, client=s3)
    assert counter.sends > 2  # CreateMultipartUpload + several parts
    counter = Counter(s3)
    assert storage.upload(run, url, client=s3).sent == [] and counter.sends == 0
    storage.download(url, tmp_path / "copy", client=s3)
    assert digests(tmp_path / "copy") == digests(run)


def test_cli_upload_and_download(s3, tmp_path):
    run = make_run(tmp_path)
    url = f"s3://{BUCKET}/cli/r1"
    n = len(uploadable(run))
    out = run_cli("upload", run, url).stdout
    assert f"uploaded {n} files" in out
    out = run_cli("upload", run, url).stdout
    assert f"uploaded 0 files (0 bytes), {n} unchanged" in out
    dest = tmp_path / "copy"
    assert f"downloaded {n} files" in run_cli("download", url, dest).stdout
    assert digests(dest) == uploadable(run)


def test_upload_attempt_keeps_the_run_layout(s3, tmp_path):
    run = make_run(tmp_path)
    storage.upload_attempt(run / "t1" / "nop" / "1", f"s3://{BUCKET}/archive/")
    keys = {o["Key"] for o in s3.list_objects_v2(Bucket=BUCKET)["Contents"]}
    assert "archive/r1/t1/nop/1/RUNBOOK.MD" in keys
    assert not any("id_ed25519" in k or ".terraform" in k for k in keys)


def test_bad_urls_are_one_clear_error():
    for url in ("https://bucket/x", "s3://", "bucket/prefix"):
        with pytest.raises(DeployBenchError, match="s3://bucket/prefix"):
            storage.parse_s3_url(url)


@pytest.mark.slow
@pytest.mark.privileged
def test_run_uploads_each_attempt_when_it_ends(s3, runs, root_host):
    from tests.conftest import run_cli

    run_cli(
        "run",
        "--agent",
        "nop",
        "--tasks",
        "legacycalc_demo24",
        "--run-id",
        "up",
        "--upload",
        f"s3://{BUCKET}/results",
    )
    keys = {
        obj["Key"]
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET)
        for obj in page.get("Contents", [])
    }
    attempt = runs / "up" / "legacycalc_demo24" / "nop" / "1"
    assert "results/up/legacycalc_demo24/nop/1/verdict.json" in keys
    assert "results/up/legacycalc_demo24/nop/1/trajectory.jsonl" in keys
    local = {str(p.relative_to(attempt)) for p in attempt.rglob("*") if p.is_file()}
    uploaded = {k.split("/nop/1/", 1)[1] for k in keys if "/nop/1/" in k}
    assert "verdict.json" in uploaded and uploaded <= local
    assert not (runs / "up" / "upload_errors.jsonl").exists()

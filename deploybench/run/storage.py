"""Run folders to and from S3 with boto3: resumable, and skipping files that did not change.

Every object we write carries the sha256 of its content in its metadata (x-amz-meta-sha256),
so "unchanged" is decided by checksum, not by size or time, and holds for multipart objects
whose ETag is not an MD5. A file is uploaded whole or not at all (S3 never shows a half
object), so an interrupted upload resumes by running it again: what arrived is skipped.
Downloads go to a temporary name and are renamed only once their checksum matches.

Never uploaded: Terraform's data folders (.terraform holds a 700 MB provider) and the run's
SSH private keys; state and logs are uploaded (they hold no credential: see docs/cloud.md)."""

from __future__ import annotations

import fnmatch
import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from deploybench.errors import DeployBenchError

SHA_KEY = "sha256"
EXCLUDE_DIRS = {".terraform", "__pycache__"}
EXCLUDE_FILES = ("id_ed25519", "id_rsa", "*.pem", "*.key", ".terraform.lock.hcl", "*.part")
_CHUNK = 8 * 1024 * 1024


@dataclass
class Transfer:
    sent: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    bytes_sent: int = 0

    def summary(self, verb: str) -> str:
        return (
            f"{verb} {len(self.sent)} files ({self.bytes_sent} bytes), "
            f"{len(self.skipped)} unchanged"
        )


def parse_s3_url(url: str) -> tuple[str, str]:
    parsed = urlparse(url)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise DeployBenchError(f"{url!r} is not an s3://bucket/prefix URL")
    return parsed.netloc, parsed.path.strip("/")


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _excluded(rel: Path) -> bool:
    if any(part in EXCLUDE_DIRS for part in rel.parts[:-1]):
        return True
    return any(fnmatch.fnmatch(rel.name, pat) for pat in EXCLUDE_FILES)


def local_files(root: Path) -> list[Path]:
    """Files under root to upload, relative to it, in a stable order."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in EXCLUDE_DIRS)
        for name in sorted(filenames):
            full = Path(dirpath) / name
            rel = full.relative_to(root)
            if full.is_file() and not full.is_symlink() and not _excluded(rel):
                out.append(rel)
    return out


def _client():
    import boto3  # here, so importing this module never pays for boto3

    return boto3.client("s3")


def _transfer_config():
    from boto3.s3.transfer import TransferConfig

    # Large files go up in 16 MB parts, several at a time.
    mib = 1024 * 1024
    return TransferConfig(multipart_threshold=64 * mib, multipart_chunksize=16 * mib)


def _key(prefix: str, rel: str) -> str:
    return f"{prefix}/{rel}" if prefix else rel


def _remote_listing(s3, bucket: str, prefix: str) -> dict[str, int]:
    """Key -> size of every object under prefix (one request per 1000 objects)."""
    found = {}
    list_prefix = f"{prefix}/" if prefix else ""
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=list_prefix):
        for obj in page.get("Contents", []):
            found[obj["Key"]] = obj["Size"]
    return found


def _remote_sha(s3, bucket: str, key: str) -> str | None:
    return s3.head_object(Bucket=bucket, Key=key).get("Metadata", {}).get(SHA_KEY)


def upload(
    run_dir: Path | str,
    s3_url: str,
    on_file: Callable[[str, str], None] | None = None,
    client=None,
) -> Transfer:
    """Upload run_dir under s3_url; a file whose object already has the same sha256 is
    skipped. on_file(rel, "sent"|"skipped") reports progress."""
    root = Path(run_dir)
    if not root.is_dir():
        raise DeployBenchError(f"{root} is not a folder")
    bucket, prefix = parse_s3_url(s3_url)
    s3 = client or _client()
    remote = _remote_listing(s3, bucket, prefix)
    config = _transfer_config()
    result = Transfer()
    for rel_path in local_files(root):
        rel = rel_path.as_posix()
        full = root / rel_path
        key = _key(prefix, rel)
        size = full.stat().st_size
        digest = sha256_of(full)
        # A HEAD only where the size matches: a different size is a change for sure.
        if remote.get(key) == size and _remote_sha(s3, bucket, key) == digest:
            result.skipped.append(rel)
            if on_file:
                on_file(rel, "skipped")
            continue
        s3.upload_file(
            str(full), bucket, key, ExtraArgs={"Metadata": {SHA_KEY: digest}}, Config=config
        )
        result.sent.append(rel)
        result.bytes_sent += size
        if on_file:
            on_file(rel, "sent")
    return result


def download(
    s3_url: str,
    dest_dir: Path | str,
    on_file: Callable[[str, str], None] | None = None,
    client=None,
) -> Transfer:
    """Download everything under s3_url into dest_dir; files already there with the same
    sha256 are skipped, and a file appears only complete and verified."""
    bucket, prefix = parse_s3_url(s3_url)
    dest = Path(dest_dir)
    s3 = client or _client()
    config = _transfer_config()
    result = Transfer()
    for key, size in sorted(_remote_listing(s3, bucket, prefix).items()):
        rel = key[len(prefix) + 1 :] if prefix else key
        target = (dest / rel).resolve()
        if dest.resolve() not in target.parents:
            raise DeployBenchError(f"refusing object {key!r}: it would land outside {dest}")
        want = _remote_sha(s3, bucket, key)
        if target.is_file() and target.stat().st_size == size and want == sha256_of(target):
            result.skipped.append(rel)
            if on_file:
                on_file(rel, "skipped")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(target.name + ".part")
        s3.download_file(bucket, key, str(partial), Config=config)
        if want and sha256_of(partial) != want:
            partial.unlink(missing_ok=True)
            raise DeployBenchError(f"{key}: checksum mismatch after download")
        partial.replace(target)
        result.sent.append(rel)
        result.bytes_sent += size
        if on_file:
            on_file(rel, "sent")
    return result


def upload_attempt(attempt_dir: Path | str, s3_url: str) -> Transfer:
    """Upload one finished attempt (runs/<run>/<task>/<agent>/<n>) to the same relative place
    under s3_url: s3://b/p + runs/r1/t/a/1 -> s3://b/p/r1/t/a/1. Safe to call again."""
    attempt = Path(attempt_dir).resolve()
    # <run>/<task>/<agent>/<attempt>: the last four parts keep attempts of a run apart.
    rel = "/".join(attempt.parts[-4:])
    return upload(attempt, s3_url.rstrip("/") + "/" + rel)

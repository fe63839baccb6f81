"""The run folder, runs/<run_id>/, and its one owner: every name in it is spelled here.

    runs/<run_id>/run.json                 the run's options (what --resume continues)
    runs/<run_id>/results.jsonl            contract 3: one line per attempt, appended whole
    runs/<run_id>/infra_errors.jsonl       every infrastructure failure, retried or not
    runs/<run_id>/upload_errors.jsonl      uploads that failed (`upload` resumes them)
    runs/<run_id>/<task>/<agent>/<n>/      one attempt: the files named below
    runs/<run_id>/<task>/<agent>/<n>.infra-<try>/   a try that ended in an infrastructure error

The runner, the playbook's side door (deploybench/attempt/sidedoor.py), the report and diagnose
write and read these files through this module only (tests/test_seams.py fails when another module
spells one), and a JSON-lines file whose last line was cut off by a crash mid-write is read the
same way everywhere: without that line, and said so."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from deploybench import contracts, jsonl
from deploybench.errors import DeployBenchError

# ---- the run's own files ----
RUN_META = "run.json"
RESULTS = "results.jsonl"
INFRA_ERRORS = "infra_errors.jsonl"
UPLOAD_ERRORS = "upload_errors.jsonl"

# ---- an attempt's files ----
STOP = "stop.json"  # how the agent stopped (Stop)
VERIFY = "verify.json"  # how the verifier ran (Verify)
VERDICT = "verdict.json"  # contract 4
CPU_JUDGMENT = "cpu_judgment.json"  # a CPU validation's judgment (run --cpu-only)
TRAJECTORY = "trajectory.jsonl"  # contract 5
TRAJECTORY_NATIVE = "trajectory.native.jsonl"  # a command agent's own log, before conversion
TRAJECTORY_AGENT = "trajectory.agent.jsonl"  # the agent's file, kept when lines were dropped
TRAJECTORY_ERRORS = "trajectory_errors.json"  # the lines dropped, and why
RUNBOOK = "RUNBOOK.MD"  # the agent's runbook, as it left it in the workdir
AGENT_LOG = "agent.log"
TIMING = "timing.json"  # the attempt's wall time on the controller
HARNESS_ERROR = "harness_error.txt"  # the traceback of a harness bug
DIAGNOSIS = "diagnosis.json"  # `deploybench diagnose`
DIAGNOSIS_PROMPT = "diagnosis_prompt.md"
# `deploybench diagnose --agentic`: the diagnostic agent's report, log, model calls, playbook.
DIAGNOSIS_AGENT_DIR = "diagnosis_agent"
# What the playbook brings to and from the machine, through deploybench.attempt.sidedoor.
STAGING = "staging.json"  # what was staged: commit, missing files, the paper's fate
STAGED_TARBALL = "staged.tar.gz"  # a demo task's artifact as a tree (catalog trees are cached)
PAPERS_TARBALL = "papers.tar"  # the paper files that go beside the tree
MACHINE_SCRIPT = "machine_side.sh"  # the verifier's machine side, deleted once judged
TAMPER_SCAN = "tamper_scan.txt"  # raw lines of the tamper scan (moved into VERIFIER_DIR)
MACHINE_PROBE = "machine_probe.txt"  # raw lines of the probe of a broken machine
STATE_TARBALL = "state.tar.gz"
VERIFIER_TARBALL = "verifier.tar.gz"
VERIFIER_B64 = "verifier.tar.gz.b64"
AGENT_FILES_B64 = "agent_files.b64"
HANDOVER = "handover.json"  # how the agent ended, for the stages run from outside the machine
DOORS_BEFORE = (
    "doors_before.txt"  # the doors' digests before the agent (deploybench/verify/doors.py)
)
DOOR_FINDINGS = "doors.txt"  # raw DOOR/STARTUP lines: what changed in them during the agent
VOLUME_SCAN = "volume_scan.json"  # the snapshots of a cloud machine's volume and their scan
SCAFFOLD = "scaffold.json"  # how the agent's scaffold reached the machine: built or from cache
VARIANT = "variant.json"  # the verifier's drawn variant (verify/bank.py), the controller's alone
MODEL_CALLS = "model_calls.jsonl"  # every model call through the run's gateway (run/gateway.py)
GATEWAY = "gateway.json"  # the attempt's totals at the gateway: calls, tokens, cost, failures
PREFIX = "reference_prefix.json"  # how far a reference setup's role got (attempt/prefix.py)
LIVE = "live.json"  # while the attempt runs: its stage and times, for watchers (run/live.py)
VARIANTS_DIR = "bank_runs"  # a bank's real runs of the experiment (validate-references --bank)
# In each of a bank's runs through the machine's login (playbooks/experiment_again.yml): how the
# experiment ended (rc, seconds), written by the side door beside its unpacked logs.
BANK_RUN = "bank_run.json"
# A cloud machine's address after the agent when stopping it moved it (at_agent_end), for the
# stages that log in to it again after the verdict (a bank's runs).
MACHINE_ADDRESS = "machine_address.txt"
# Folders of an attempt.
STATE_DIR = "state"  # the agent's machine after it stopped
CHANGED_FILES = "changed_files.txt"  # in STATE_DIR: what the agent changed (local backend)
VERIFIER_DIR = "verifier"  # the verifier's logs
VERIFIER_STDOUT = "verifier_stdout.log"  # in VERIFIER_DIR
ANSIBLE_DIR = "ansible"  # ansible-runner's private data folder
MACHINE_DIR = "machine"  # how Terraform made and destroyed the machine

# The files the agent left, moved to the attempt's top level (the analysis reads them there).
AGENT_FILES = (AGENT_LOG, TRAJECTORY, RUNBOOK)
# Every file name of a run folder: no other module spells one (tests/test_seams.py).
RUN_FILES = (RUN_META, RESULTS, INFRA_ERRORS, UPLOAD_ERRORS)
ATTEMPT_FILES = (
    STOP,
    VERIFY,
    VERDICT,
    CPU_JUDGMENT,
    TRAJECTORY,
    TRAJECTORY_NATIVE,
    TRAJECTORY_AGENT,
    TRAJECTORY_ERRORS,
    AGENT_LOG,
    TIMING,
    HARNESS_ERROR,
    DIAGNOSIS,
    DIAGNOSIS_PROMPT,
    STAGING,
    STAGED_TARBALL,
    PAPERS_TARBALL,
    MACHINE_SCRIPT,
    TAMPER_SCAN,
    MACHINE_PROBE,
    STATE_TARBALL,
    VERIFIER_TARBALL,
    VERIFIER_B64,
    AGENT_FILES_B64,
    CHANGED_FILES,
    VERIFIER_STDOUT,
    HANDOVER,
    DOORS_BEFORE,
    DOOR_FINDINGS,
    VOLUME_SCAN,
    SCAFFOLD,
    VARIANT,
    VARIANTS_DIR,
    BANK_RUN,
    MACHINE_ADDRESS,
    MODEL_CALLS,
    GATEWAY,
    DIAGNOSIS_AGENT_DIR,
    PREFIX,
)


def model_agent(agent: str, model: str) -> str:
    """The name (and attempt folder) of an agent run with another model (run --model):
    <agent>+<model, folder-safe>."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", model).strip("-")[:40] or "model"
    return f"{agent}+{slug}"


def agent_of(name: str, model: str | None) -> str:
    """The agent's own name back from model_agent's (the name itself when it is not one)."""
    base, plus, _ = name.rpartition("+")
    if plus and isinstance(model, str) and model and model_agent(base, model) == name:
        return base
    return name


def attempt_dir(run_dir: Path, task_id: str, agent: str, number: int) -> Path:
    return Path(run_dir) / task_id / agent / str(number)


def attempt_of(run_dir: Path, row: dict[str, Any]) -> Path:
    """The folder of a results.jsonl row's attempt."""
    return attempt_dir(run_dir, row["task_id"], row["agent"], row["attempt"])


def infra_dir(attempt: Path, tries: int) -> Path:
    """Where a try that ended in an infrastructure error is kept: a name no earlier try took
    (a retried attempt's tries count from 1 again; the first round's are kept too)."""
    kept = attempt.with_name(f"{attempt.name}.infra-{tries}")
    round_ = 1
    while kept.exists():
        round_ += 1
        kept = attempt.with_name(f"{attempt.name}.infra-{tries}.retry-{round_}")
    return kept


# ---- JSON files ----
def read_json(path: Path) -> Any:
    """One JSON document; a missing or broken file is one error naming it."""
    try:
        return json.loads(Path(path).read_text())
    except OSError as exc:
        raise DeployBenchError(f"{path}: cannot read ({exc.strerror})") from None
    except json.JSONDecodeError as exc:
        raise DeployBenchError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None


def _write_json(path: Path, data: Any, indent: int | None = 2) -> None:
    Path(path).write_text(json.dumps(data, indent=indent))


# ---- JSON lines: the cut-off last line ----
def complete_lines(text: str, path: Path | str, notes: list[str] | None = None) -> list[str]:
    """The lines of a JSON-lines file. Lines are appended in one write each (jsonl.append), so
    a crash mid-write leaves at most one last line without its newline; when that line is not
    JSON it is dropped (and a note says so). Every reader of a run folder's JSON lines goes
    through here."""
    lines = text.splitlines()
    if text and not text.endswith("\n") and lines:
        try:
            json.loads(lines[-1])
        except json.JSONDecodeError:
            lines.pop()
            if notes is not None:
                notes.append(f"{path}: the last line was cut off (a crash mid-write); skipped")
    return lines


# ---- the run ----
@dataclass
class RunSpec:
    """What a run was asked to do, as its run.json keeps it: written when the run starts, read
    back by --resume, which continues the run with exactly these (only `parallel` may change).
    Keys of run.json this does not know (an older or newer harness's) are kept in `extra`."""

    run_id: str
    backend: str
    tasks: list[str]
    agents: list[str]
    attempts: int
    parallel: int
    agent_specs: list[dict[str, Any]]
    agent_seconds: int | None = None
    image: str | None = None
    upload: str | None = None
    cpu_only: bool | None = None
    # validate-references --until-blocked: machines without a GPU, the role run as on its own
    # machine until a step this one cannot take (attempt/prefix.py).
    until_blocked: bool | None = None
    agent_config: str | None = None
    # The operator's bank folder the attempts draw their variants from (verify/bank.py); a
    # resumed run draws from the same one, never from whatever $DEPLOYBENCH_BANK says then.
    bank_dir: str | None = None
    created_at: str = ""
    # What produced the run (run/provenance.py): the harness's version and commit, and digests
    # of every task's inputs and agent's spec. None in runs of older harnesses.
    provenance: dict[str, Any] | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    # What a resumed run keeps: given again on the command line, each must equal the run's.
    RESUMED = (
        "backend", "tasks", "agents", "attempts", "agent_seconds", "image", "upload", "bank_dir",
    )  # fmt: skip

    def write(self, run_dir: Path) -> None:
        """run.json, replaced whole (never seen half-written)."""
        data = {k: v for k, v in asdict(self).items() if k != "extra"}
        target = Path(run_dir) / RUN_META
        tmp = target.with_suffix(".tmp")
        _write_json(tmp, {**self.extra, **data})
        tmp.replace(target)

    @classmethod
    def read(cls, run_dir: Path) -> RunSpec:
        meta = read_run_meta(run_dir)
        path = run_meta_path(run_dir)
        known = {f for f in cls.__dataclass_fields__ if f != "extra"}
        missing = [f for f in ("run_id", "backend", "tasks", "agents", "attempts") if f not in meta]
        if missing or not isinstance(meta.get("agent_specs"), list):
            what = ", ".join(missing) or "agent_specs"
            raise DeployBenchError(f"{path}: no {what}; this run cannot be resumed")
        values = {k: v for k, v in meta.items() if k in known}
        values.setdefault("parallel", 1)
        return cls(**values, extra={k: v for k, v in meta.items() if k not in known})

    def resumed(self, given: dict[str, Any]) -> RunSpec:
        """This run, resumed with the options given again: one that differs is an error."""
        for name in self.RESUMED + ("cpu_only",):
            value = given.get(name)
            if value is not None and value != getattr(self, name):
                raise DeployBenchError(
                    f"--{name.replace('_', '-')} {value} differs from the run's "
                    f"{getattr(self, name)} (run {self.run_id}'s {RUN_META}); "
                    "--resume continues the run with its own options"
                )
        if given.get("parallel"):
            self.parallel = int(given["parallel"])
        return self


def read_run_meta(run_dir: Path) -> dict[str, Any]:
    path = Path(run_dir) / RUN_META
    if not path.is_file():
        raise DeployBenchError(f"no run {Path(run_dir).name} to resume: {path} does not exist")
    try:
        meta = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DeployBenchError(f"{path}: cannot read the run's options: {exc}") from exc
    if not isinstance(meta, dict):
        raise DeployBenchError(f"{path}: cannot read the run's options: not an object")
    return meta


def run_meta_path(run_dir: Path) -> Path:
    return Path(run_dir) / RUN_META


def results_path(run_dir: Path) -> Path:
    return Path(run_dir) / RESULTS


def log_infra_error(run_dir: Path, row: dict[str, Any]) -> None:
    jsonl.append(Path(run_dir) / INFRA_ERRORS, row)


def log_upload_error(run_dir: Path, row: dict[str, Any]) -> None:
    jsonl.append(Path(run_dir) / UPLOAD_ERRORS, row)


class ResultsStore:
    """runs/<run_id>/results.jsonl (contract 3): one line per attempt, appended whole.

    Each line goes out in one write() on a file opened for appending and is fsynced, so a crash
    leaves at most a line without its newline at the end; loading drops such a tail (as every
    reader does, see complete_lines) and cuts it from the file so the next append starts
    clean."""

    def __init__(self, run_dir: Path):
        self.path = results_path(run_dir)
        self._lock = threading.Lock()

    def load(self, notes: list[str] | None = None) -> list[dict[str, Any]]:
        if not self.path.is_file():
            return []
        text = self.path.read_text()
        lines = complete_lines(text, self.path, notes)
        if text and not text.endswith("\n"):
            kept = "".join(f"{line}\n" for line in lines)
            self.path.write_text(kept)
        return jsonl.parse("\n".join(lines), self.path)

    def append(self, row: dict[str, Any]) -> None:
        contracts.check(contracts.RESULT, row, f"{RESULTS} line")
        with self._lock:
            jsonl.append(self.path, row, durable=True)

    def finished(self) -> set[tuple[str, str, int]]:
        return {_key(r) for r in current(self.load())}

    def supersede(self, keys: set[tuple[str, str, int]]) -> int:
        """Mark the rows of these attempts superseded (`superseded: true`): kept, and rerun by
        a resumed run (run --resume --retry). The file is replaced whole. How many marked."""
        with self._lock:
            rows = self.load()
            marked = 0
            for row in rows:
                if _key(row) in keys and not row.get("superseded"):
                    row["superseded"] = True
                    marked += 1
            tmp = self.path.with_suffix(".tmp")
            tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
            os.replace(tmp, self.path)
            return marked


def _key(row: dict[str, Any]) -> tuple[str, str, int]:
    return (row["task_id"], row["agent"], row["attempt"])


def current(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows that count: those not superseded by a rerun of their attempt."""
    return [r for r in rows if not r.get("superseded")]


# What `run --resume --retry` may rerun: attempts whose last row is an infrastructure error,
# by its cause (the last try's reason in infra_errors.jsonl).
RETRY_KINDS = ("infra", "provider_error")


def to_retry(run_dir: Path, kinds: tuple[str, ...]) -> set[tuple[str, str, int]]:
    reasons: dict[tuple[str, str, int], str] = {}
    errors = Path(run_dir) / INFRA_ERRORS
    if errors.is_file():
        for row in jsonl.parse("\n".join(complete_lines(errors.read_text(), errors)), errors):
            reasons[_key(row)] = str(row.get("reason", ""))
    keys = set()
    for row in current(ResultsStore(run_dir).load()):
        if row["status"] != "infra_error":
            continue
        cause = (
            "provider_error" if reasons.get(_key(row), "").startswith("provider_error") else "infra"
        )
        if cause in kinds:
            keys.add(_key(row))
    return keys


# ---- an attempt's typed records ----
@dataclass(frozen=True)
class Stop:
    """stop.json: how the agent's run ended."""

    agent_rc: int | None
    agent_seconds: float
    timed_out: bool
    killed_processes: int = 0


@dataclass(frozen=True)
class Verify:
    """verify.json: how the verifier's run ended."""

    verifier_rc: int | None
    seconds: float
    timed_out: bool
    # The variant the experiment ran (id and inputs; `bank: none` without one), never its
    # expected results. Optional: older verify.json files lack it.
    variant: dict[str, Any] | None = None


def _typed(cls, path: Path, data: Any):
    if not isinstance(data, dict):
        raise DeployBenchError(f"{path}: not a JSON object")
    try:
        return cls(**data)
    except TypeError as exc:
        raise DeployBenchError(f"{path}: {exc}") from None


def write_stop(attempt: Path, stop: Stop) -> None:
    _write_json(Path(attempt) / STOP, asdict(stop))


def read_stop(attempt: Path) -> Stop:
    path = Path(attempt) / STOP
    return _typed(Stop, path, read_json(path))


def write_verify(attempt: Path, verify: Verify) -> None:
    _write_json(Path(attempt) / VERIFY, asdict(verify), indent=None)


def read_verify(attempt: Path) -> Verify:
    path = Path(attempt) / VERIFY
    return _typed(Verify, path, read_json(path))


def write_gateway(attempt: Path, totals: dict[str, Any]) -> None:
    _write_json(Path(attempt) / GATEWAY, totals)


def read_gateway(attempt: Path) -> dict[str, Any] | None:
    path = Path(attempt) / GATEWAY
    return read_json(path) if path.is_file() else None


def write_variant(attempt: Path, variant: dict[str, Any]) -> None:
    _write_json(Path(attempt) / VARIANT, variant)


@contextlib.contextmanager
def drawing_variants(run_dir: Path, task_id: str):
    """Held while one attempt reads which bank variants its run gave (variants_drawn) and
    writes its own: parallel attempts of a task (threads or processes) otherwise read the same
    set and draw the same variant."""
    folder = Path(run_dir) / task_id
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".variants.lock", "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def read_variant(attempt: Path) -> dict[str, Any] | None:
    path = Path(attempt) / VARIANT
    return read_json(path) if path.is_file() else None


def variants_drawn(run_dir: Path, task_id: str) -> set[str]:
    """The bank variants the run's attempts of a task were given so far (any agent)."""
    ids = set()
    for path in Path(run_dir).glob(f"{task_id}/*/*/{VARIANT}"):
        variant = read_json(path)
        if isinstance(variant, dict) and variant.get("id"):
            ids.add(variant["id"])
    return ids


def write_verdict(attempt: Path, verdict: dict[str, Any]) -> None:
    _write_json(Path(attempt) / VERDICT, verdict)


def has_verdict(attempt: Path) -> bool:
    return (Path(attempt) / VERDICT).is_file()


def read_verdict(attempt: Path) -> dict[str, Any]:
    """verdict.json (contract 4), checked against its schema."""
    path = Path(attempt) / VERDICT
    data = read_json(path)
    contracts.check(contracts.VERDICT, data, str(path))
    return data


def write_prefix(attempt: Path, prefix: dict[str, Any]) -> None:
    _write_json(Path(attempt) / PREFIX, prefix)


def read_prefix(attempt: Path) -> dict[str, Any] | None:
    """How far the reference setup's role got (attempt/prefix.py), if it ran."""
    path = Path(attempt) / PREFIX
    return read_json(path) if path.is_file() else None


def write_cpu_judgment(attempt: Path, judgment: dict[str, Any]) -> None:
    _write_json(Path(attempt) / CPU_JUDGMENT, judgment)


def read_cpu_judgment(attempt: Path) -> dict[str, Any] | None:
    """The CPU validation's judgment of an attempt (verification.cpu_judgment), if it has one."""
    path = Path(attempt) / CPU_JUDGMENT
    return read_json(path) if path.is_file() else None


def write_timing(attempt: Path, wall_seconds: float) -> None:
    _write_json(Path(attempt) / TIMING, {"wall_seconds": wall_seconds}, indent=None)


def read_runbook(attempt: Path) -> str | None:
    path = Path(attempt) / RUNBOOK
    return path.read_text(errors="replace") if path.is_file() else None


def trajectory_path(attempt: Path) -> Path:
    return Path(attempt) / TRAJECTORY


def read_handover(attempt: Path) -> dict[str, Any] | None:
    """How the agent ended and where its files are (sidedoor.handover), or None."""
    try:
        return json.loads((Path(attempt) / HANDOVER).read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return None

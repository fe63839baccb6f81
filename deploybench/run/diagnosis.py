"""The agentic diagnosis (`deploybench diagnose RUN --agentic`): for a failed attempt whose
machine was kept (`run --keep-failed`), a diagnostic agent (any command agent spec; Codex CLI by
default, as in the paper) enters that machine as the agent and the verifier left it, with the
task's reference setup and the verifier's outputs made readable to it only now, and writes a
report with the root cause. The report is mapped by the keyword rules of failure_patterns.yaml;
it never changes a verdict or a results row. The machine is destroyed afterwards, whatever the
diagnosis did; a controller killed meanwhile leaves it to `deploybench sweep` (backends/kept.py).

The diagnostic agent runs on the kept machine itself (playbooks/diagnose.yml), never on the
controller; its model calls go through a model gateway of the diagnosis (run/gateway.py), so
no provider key reaches the machine, and its tokens and cost are recorded beside the report."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2

from deploybench import runfolder
from deploybench.analysis import diagnose
from deploybench.attempt import ansible
from deploybench.attempt.agents import AgentSpec
from deploybench.attempt.ansible import Unsafe
from deploybench.backends import get_backend, inventory, kept
from deploybench.catalog import Task
from deploybench.errors import DeployBenchError
from deploybench.paths import PLAYBOOKS_DIR
from deploybench.run.gateway import Gateway, Upstream

PROMPT_TEMPLATE = Path(__file__).with_name("diagnose_agent_prompt.md.j2")
# Where everything of the diagnosis goes on the machine, in the agent's user's home.
MACHINE_DIR = "/home/vm/deploybench-diagnosis"
CONTROL_DIR = "/home/vm/.deploybench-diagnosis"
# The sections of the report the prompt asks for, by the key diagnosis.json keeps them under.
SECTIONS = {
    "root_cause": "root cause",
    "evidence": "evidence",
    "secondary_issues": "secondary issues",
    "recommended_fix": "recommended fix",
}
BULLET = r"^\s*[-*]\s+"
# What the controller copies back of the machine after the diagnostic agent (file on the machine,
# name in the diagnosis folder): each a regular file of at most COPY_CAP bytes, or nothing.
COPIED = (
    (f"{MACHINE_DIR}/diagnosis.md", "diagnosis.md"),
    *((f"{CONTROL_DIR}/{name}", name) for name in (runfolder.AGENT_LOG, runfolder.TRAJECTORY)),
)
COPY_CAP = 16 << 20
# The diagnostic agent's budget beyond its own minutes: installing its scaffold, the copies.
SETUP_SECONDS = 1800


@dataclass
class Agentic:
    """How to diagnose: the diagnostic agent's spec, its time, the token prices. Handed to
    analysis/diagnose_run.py, which calls `diagnose` for each failed attempt."""

    agent: AgentSpec
    minutes: float = 30.0
    prices: dict[str, tuple[float, float]] | None = None

    @property
    def name(self) -> str:
        return self.agent.name

    def diagnose(
        self, run_dir: Path, result: dict[str, Any], catalog_dir: Path
    ) -> dict[str, Any] | None:
        return diagnose_attempt(self, run_dir, result, catalog_dir)


def render_prompt(task_id: str, port: int = 22, output_file: str | None = None) -> str:
    """The diagnostic agent's prompt, its placeholders filled for the kept machine of TASK_ID
    (its login: the machine's sshd on PORT, reached from the machine itself; the task's workdir;
    the folders copied in for the diagnosis)."""
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.from_string(PROMPT_TEMPLATE.read_text()).render(
        address="127.0.0.1",
        port=port,
        user="vm",
        key_file=f"{MACHINE_DIR}/id_ed25519",
        workdir=f"/home/vm/Desktop/{task_id}",
        task_dir=f"{MACHINE_DIR}/task",
        reference_dir=f"{MACHINE_DIR}/reference_setup",
        verifier_dir=f"{MACHINE_DIR}/verifier",
        output_file=output_file or f"{MACHINE_DIR}/diagnosis.md",
    )


def parse_report(text: str) -> dict[str, Any]:
    """The report's sections (## Root cause, ## Evidence, ...): texts, bullets as lists."""
    found: dict[str, Any] = {}
    current = None
    lines: dict[str, list[str]] = {}
    for line in text.splitlines():
        heading = re.match(r"^#{1,6}\s*(.+?)\s*:?\s*$", line)
        if heading:
            name = heading.group(1).strip().lower()
            current = next((k for k, v in SECTIONS.items() if name.startswith(v)), None)
            if current:
                lines.setdefault(current, [])
            continue
        if current:
            lines[current].append(line)
    for key, body in lines.items():
        bullets = [re.sub(BULLET, "", b).strip() for b in body if re.match(BULLET, b)]
        if key in ("evidence", "secondary_issues"):
            found[key] = bullets or [b.strip() for b in body if b.strip()]
        else:
            found[key] = " ".join(b.strip() for b in body if b.strip())
    return found


def _bundle(where: Path, task: Task, attempt: Path) -> Path:
    """What the diagnostic agent is given, only now: the task's definition, its reference
    setup, the verifier's outputs, and a key of the diagnosis's own for the machine's login."""
    bundle = where / "bundle"
    (bundle / "task").mkdir(parents=True)
    shutil.copy(task.file, bundle / "task" / "task.yaml")
    shutil.copytree(task.role, bundle / "reference_setup", symlinks=True)
    verifier = bundle / "verifier"
    verifier.mkdir()
    for name in (runfolder.VERDICT, runfolder.VERIFY):
        if (attempt / name).is_file():
            shutil.copy(attempt / name, verifier / name)
    logs = attempt / runfolder.VERIFIER_DIR
    if logs.is_dir():
        # The run folder's own copies: written by the harness, capped when they were judged.
        shutil.copytree(logs, verifier / "logs", symlinks=True)
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "deploybench-diagnosis",
         "-f", str(bundle / "id_ed25519")],
        check=True,
    )  # fmt: skip
    return bundle


def diagnose_attempt(
    options: Agentic, run_dir: Path, result: dict[str, Any], catalog_dir: Path
) -> dict[str, Any] | None:
    """Diagnose one failed attempt on its kept machine and end the machine; the diagnosis
    (diagnosis.json's fields), or None when the attempt has no kept machine."""

    folder = runfolder.attempt_of(run_dir, result)
    found = kept.of_attempt(folder)
    if found is None:
        return None
    backend_name, deployment, record = found
    kept.claim_for_diagnosis(deployment)
    out = folder / runfolder.DIAGNOSIS_AGENT_DIR
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(mode=0o700)
    spec = options.agent
    task = Task(result["task_id"], root=catalog_dir.parent)
    started = time.monotonic()
    gateway = Gateway().start()
    summary: dict[str, Any] = {}
    refused: list[str] = []
    error = None
    try:
        backend = get_backend(backend_name)
        machines = backend.revive(deployment, [gateway.port])
        if not machines:
            raise DeployBenchError("the kept machine could not be started again")
        names = spec.env_from_controller
        upstream = Upstream(spec.base_url, spec.api, os.environ.get(names[0], "") if names else "")
        lease = gateway.open(out, upstream, spec.max_tokens, spec.max_cost_usd, options.prices)
        with tempfile.TemporaryDirectory(prefix="deploybench-diagnosis-") as tmp:
            bundle = _bundle(Path(tmp), task, folder)
            seconds = int(options.minutes * 60)
            extravars = {
                **spec.extravars(),
                "task_id": result["task_id"],
                "task": {"id": result["task_id"]},
                "run_door": {"stage": {"papers": []}},
                "run_agent_seconds": seconds,
                "run_attempt_dir": str(out.resolve()),
                "run_control_dir": CONTROL_DIR,
                "diagnose_dir": MACHINE_DIR,
                "diagnose_bundle": str(bundle),
                "diagnose_out": str(out.resolve()),
                "agent_command_prompt": Unsafe(
                    render_prompt(result["task_id"], backend.sshd_port_inside(machines))
                ),
                "agent_command_base_url": Unsafe(gateway.url_for(upstream)),
            }
            reverse = [gateway.port] if backend.loopback_by_ssh else []
            played = ansible.run_playbook(
                PLAYBOOKS_DIR / "diagnose.yml",
                inventory.as_data(machines, reverse),
                extravars,
                out / "ansible",
                timeout=seconds + SETUP_SECONDS,
                pass_env=[*spec.env_from_controller, *backend.playbook_env()],
                env_values=dict.fromkeys(spec.env_from_controller, lease.key),
            )
        # Read back by the controller itself, the bound counted as the bytes come (the machine
        # is the failed agent's: backends/base.py copy_out), whatever the playbook said.
        for path, name in COPIED:
            note = backend.copy_out(machines, path, out, name, COPY_CAP)
            if note:
                refused.append(note)
        summary = gateway.close(lease)
        if not played.ok:
            error = f"the diagnosis playbook failed: {played.status}"
    except DeployBenchError as exc:
        error = str(exc)
    finally:
        gateway.stop()
        kept_seconds = time.time() - record.get("kept_at", time.time())
        kept.end(backend_name, deployment)
    report_path = out / "diagnosis.md"
    report = report_path.read_text(errors="replace") if report_path.is_file() else ""
    sections = parse_report(report)
    if not report and error is None:
        copy = next((n for n in refused if n.startswith(COPIED[0][0] + ":")), None)
        error = (
            f"its report was refused: {copy}" if copy else "the diagnostic agent wrote no report"
        )
    root = sections.get("root_cause", "")
    evidence = sections.get("evidence", [])
    return {
        "source": "agentic",
        "diagnostic_agent": spec.name,
        "diagnostic_model": spec.model,
        "root_cause": root,
        "evidence": evidence,
        "secondary_issues": sections.get("secondary_issues", []),
        "recommended_fix": sections.get("recommended_fix", ""),
        # The paper's keyword rules over what the report names as the cause and shows for it.
        "patterns": diagnose.map_patterns(root + "\n" + "\n".join(evidence)) if root else [],
        "report": f"{runfolder.DIAGNOSIS_AGENT_DIR}/diagnosis.md" if report else None,
        "error": error,
        # What the controller refused to copy back of the machine (a link, a special file, a
        # file over COPY_CAP bytes), one line each.
        "refused": refused,
        "calls": summary.get("calls", 0),
        "tokens_in": summary.get("tokens_in", 0),
        "tokens_out": summary.get("tokens_out", 0),
        "cost_usd": summary.get("cost_usd"),
        "seconds": round(time.monotonic() - started, 1),
        "machine_seconds_kept": round(kept_seconds, 1),
    }

"""How far a reference setup's role got, and why it stopped there: the prefix validation of a
role that cannot run to its end on this machine (`validate-references --until-blocked`).

A role's steps are read from the Ansible events of its own tasks (and of the shared roles it
includes, such as gpu_driver), from its first event until the harness's own roles speak again.
The first step that failed (an error not ignored) is where it stopped, and why is told from
what that step said:
- gpu: it needed an NVIDIA GPU or its driver (gpu_driver's refusal, a CUDA check);
- host: it reached for a host this controller cannot reach (tried again here, port 443 or the
  URL's own, so a flaky reachable host is never called blocked);
- budget: the step ran past the per-step limit the prefix validation gives it;
- input: the role's argument spec wants a value only the operator can give (a dataset's URL
  behind a form), and none was given;
- image: a package or an apt source of the catalog's cloud image (Ubuntu 22.04) that this
  machine's distribution lacks (python2, gcc-9, a PPA); the command calls it a defect for a
  task whose file says it runs here;
- defect: anything else, the role's own fault until shown otherwise.
A role with no failed step ran to its end (`stopped_by: none`)."""

from __future__ import annotations

import re
import socket
from typing import Any
from urllib.parse import urlsplit

# What a step needing a GPU says when the machine has none (gpu_driver's assert, torch's
# CUDA checks, a CUDA toolchain or driver library looked for).
_GPU = re.compile(
    r"no NVIDIA GPU|nvidia-smi|NVIDIA driver|CUDA driver|no CUDA-capable|cuda\.is_available"
    r"|Torch not compiled with CUDA|libcuda\.so|CUDA_HOME|nvcc: not found|/dev/nvidia",
    re.IGNORECASE,
)
# What a step says when the network refused it (curl, git, pip/urllib3, Ansible's get_url).
_NETWORK = re.compile(
    r"Could not resolve host|Name or service not known|Temporary failure in name resolution"
    r"|Failed to establish a new connection|Network is unreachable|Connection refused"
    r"|Connection timed out|No route to host|getaddrinfo|Failed to connect to"
    r"|unable to access 'https?://|Max retries exceeded|Request failed|urlopen error"
    r"|Could not connect|Connection reset|unable to resolve host|host not found"
    r"|hostname lookup failed|Could not resolve hostname|Temporary failure resolving"
    r"|Initial download of repository failed|Curl failed",
    re.IGNORECASE,
)
# A role argument the operator must give (its argument spec: required, no default).
_INPUT = re.compile(r"missing required arguments?: ?(.*)", re.IGNORECASE)
# apt's and Ansible's apt modules' words for a package or source the distribution lacks.
_IMAGE = re.compile(
    r"No package matching '[^']+' is available|Unable to locate package \S+"
    r"|has no installation candidate|\bppa:\S+",
    re.IGNORECASE,
)
_URL = re.compile(r"\b(?:https?|git|ssh)://[^\s'\"<>()\]]+")
_SCP_HOST = re.compile(r"\bgit@([A-Za-z0-9.-]+):")  # git@github.com:owner/name
# Ansible's words for a task killed by its `timeout` keyword (ansible-core 2.18+, and before).
_STEP_TIMEOUT = re.compile(
    r"Timed out after \d+ second|failed to execute in the expected time frame", re.IGNORECASE
)
# The harness's role that applies the reference setup, and the one that notes its end, both
# agent_*: where the role's window ends (roles/agent_reference).
_HARNESS_ROLE = re.compile(r"^agent_")
_STEP_EVENTS = ("runner_on_ok", "runner_on_failed", "runner_on_unreachable")
_TAIL = 600


def _data(event: dict[str, Any]) -> dict[str, Any]:
    return event.get("event_data") or {}


def window(events: list[dict[str, Any]], role: str) -> list[dict[str, Any]]:
    """The events of the reference setup's run: from its role's first event until a harness
    role's next one (the rescue that records a failure, the launch's end)."""
    out: list[dict[str, Any]] = []
    for event in events:
        name = str(_data(event).get("role") or "")
        if not out:
            if name == role:
                out.append(event)
            continue
        if name and name != role and _HARNESS_ROLE.match(name):
            break
        out.append(event)
    return out


def _said(res: dict[str, Any]) -> str:
    """What a failed step said, most telling first: its message, then its error output."""
    parts = [str(res.get(k) or "") for k in ("msg", "stderr", "stdout", "module_stderr")]
    return "\n".join(p.strip() for p in parts if p.strip())


def _command(res: dict[str, Any]) -> str:
    cmd = res.get("cmd")
    if isinstance(cmd, list):
        return " ".join(str(c) for c in cmd)
    args = (res.get("invocation") or {}).get("module_args") or {}
    return str(cmd or args.get("url") or args.get("repo") or "")


# Where a tool names the host it failed on (Racket's "hostname: X", wget's "host address 'X'",
# curl's and git's "resolve host: X"): read before any URL of the text.
_NAMED_HOST = re.compile(
    r"(?:hostname: |host address .|resolve host: |resolve hostname )"
    r"([A-Za-z0-9][A-Za-z0-9.-]*\.[A-Za-z]+)"
)


def hosts_named(text: str) -> list[str]:
    """The hosts a text names: those a tool says it failed on, then the hosts of its URLs (and
    git's user@host: addresses), in order, once each; only names with a dot (a Racket stack
    frame `url.rkt: http://getpost-impure-port` is a function, not a host)."""
    found = list(dict.fromkeys(_NAMED_HOST.findall(text)))
    for url in _URL.findall(text):
        host = urlsplit(url).hostname
        if host and "." in host and host not in found:
            found.append(host)
    for host in _SCP_HOST.findall(text):
        if host not in found:
            found.append(host)
    return found


def reachable(host: str, port: int = 443, timeout: float = 5.0) -> bool:
    """Whether this controller opens a TCP connection to host (port 443): tried now, not
    looked up in a list, so the verdict follows the network the validation ran on."""
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _first(said: str, default: str) -> str:
    """The first line a step said, with the next one when it only announces it ("...:")."""
    lines = [ln.strip() for ln in said.splitlines() if ln.strip()]
    if not lines:
        return default[:240]
    head = lines[0]
    if head.endswith(":") and len(lines) > 1:
        head = f"{head} {lines[1]}"
    return head[:240]


def why_stopped(step: dict[str, Any], probe=reachable) -> tuple[str, str]:
    """(stopped_by, why) of a failed step: gpu, host, budget, input, image or defect."""
    said = step.get("said", "")
    text = f"{said}\n{step.get('command', '')}"
    first = _first(said, step.get("name", ""))
    if _STEP_TIMEOUT.search(said):
        return "budget", first
    if _GPU.search(text):
        return "gpu", first
    needed = _INPUT.search(said)
    if needed:
        return "input", f"the operator must give {needed.group(1).strip() or 'a value'}"
    lacking = _IMAGE.search(text)
    if lacking:
        return "image", f"this machine's distribution lacks {lacking.group(0)}: {first}"
    refused = _NETWORK.search(said)
    if refused:
        blocked = [h for h in hosts_named(text) if not probe(h)]
        if blocked:
            return "host", f"{blocked[0]} cannot be reached from here: {_line_of(said, refused)}"
    return "defect", first


def _line_of(text: str, match: re.Match) -> str:
    """The line a match is on, as what a step said about it."""
    start = text.rfind("\n", 0, match.start()) + 1
    end = text.find("\n", match.end())
    return text[start : end if end >= 0 else len(text)].strip()[:240]


def summarize(events: list[dict[str, Any]], role: str, probe=reachable) -> dict[str, Any]:
    """reference_prefix.json: the steps the role took, the one it stopped at and why."""
    steps = []
    stopped = None
    for event in window(events, role):
        data = _data(event)
        if event.get("event") not in _STEP_EVENTS:
            continue
        res = data.get("res") or {}
        step = {
            "name": str(data.get("task") or ""),
            "role": str(data.get("role") or ""),
            "path": _role_path(str(data.get("task_path") or "")),
        }
        if event["event"] == "runner_on_ok":
            steps.append(step)
            continue
        if data.get("ignore_errors"):
            continue
        said = _said(res)
        if event["event"] == "runner_on_unreachable":
            said = "the machine stopped answering: " + said
        stopped = step | {"said": said, "command": _command(res)}
        break
    out: dict[str, Any] = {"role": role, "steps_ok": len(steps)}
    if steps:
        out["last_ok"] = steps[-1]
    if stopped is None:
        return out | {"stopped_by": "none", "why": "the role ran to its end"}
    # Judged on all it said; kept is its end (a build's last lines say most).
    kind, why = why_stopped(stopped, probe)
    if stopped["said"].startswith("the machine stopped answering"):
        kind = "defect"
    said = stopped["said"]
    stopped["said"] = said[-_TAIL:] if len(said) > _TAIL else said
    return out | {"stopped_at": stopped, "stopped_by": kind, "why": why}


def _role_path(task_path: str) -> str:
    """A task's place as <role>/tasks/<file>:<line> (or playbooks/<file>:<line>, where a role's
    argument check is reported), without the checkout it was run from: the record goes into the
    task file, which names nothing outside the repository."""
    match = re.search(r"([^/]+/tasks/[^/]+:\d+)$", task_path) or re.search(
        r"(playbooks/[^/]+:\d+)$", task_path
    )
    return match.group(1) if match else task_path

"""The stable contracts of docs/design.md ("Contracts") as JSON Schemas, the one copy of each
that the code checks data against where it crosses a seam.

1 machines (every backend's Terraform output; terraform/INTERFACE.md points here), 2 task.yaml
(its schema has its own file, tasks/schema.json), 3 a results.jsonl line, 4 verdict.json,
5 a trajectory.jsonl event. The run folder's file names are deploybench/runfolder.py's.
Everything else in the project may change; these may not."""

from __future__ import annotations

from typing import Any

import jsonschema

from deploybench.errors import DeployBenchError

_NUM = {"type": ["number", "null"]}
_INT = {"type": ["integer", "null"]}

MACHINE = {
    "type": "object",
    "required": [
        "host",
        "port",
        "user",
        "private_key_file",
        "known_hosts_file",
        "backend",
        "image",
        "gpu_type",
        "gpu_count",
        "vcpus",
        "memory_gb",
    ],
    "properties": {
        "host": {"type": "string", "minLength": 1},
        "port": {"type": "integer", "minimum": 1, "maximum": 65535},
        "user": {"type": "string", "minLength": 1},
        "private_key_file": {"type": "string", "minLength": 1},
        # A known_hosts file holding the machine's host key when the backend knows it (every
        # backend's own machines: the harness made the key), the harness then refusing any
        # other key; else null.
        "known_hosts_file": {"type": ["string", "null"]},
        "backend": {"enum": ["local", "aws", "gcp"]},
        "image": {"type": "string"},
        "gpu_type": {"type": ["string", "null"]},
        "gpu_count": {"type": "integer", "minimum": 0},
        "vcpus": {"type": "integer", "minimum": 1},
        "memory_gb": {"type": "number", "minimum": 0},
    },
}

MACHINES = {"type": "object", "additionalProperties": MACHINE}

RESULT = {
    "type": "object",
    "required": [
        "run_id",
        "task_id",
        "agent",
        "model",
        "backend",
        "attempt",
        "status",
        "stop_type",
        "runbook_status",
        "passed",
        "failure_layer",
        "failure_category",
        "agent_seconds",
        "verify_seconds",
        "steps",
        "tokens_in",
        "tokens_out",
        "cost_usd",
        "started_at",
        "finished_at",
    ],
    "properties": {
        "run_id": {"type": "string"},
        "task_id": {"type": "string"},
        "agent": {"type": "string"},
        "model": {"type": ["string", "null"]},
        "backend": {"enum": ["local", "aws", "gcp"]},
        "attempt": {"type": "integer", "minimum": 1},
        "status": {"enum": ["completed", "infra_error"]},
        "stop_type": {
            "enum": ["self_stop", "timeout", "max_steps", "budget_tokens", "budget_cost", None]
        },
        "runbook_status": {"enum": ["SUCCESS", "PARTIAL", "FAILED", None]},
        "passed": {"type": ["boolean", "null"]},
        # 0: the machine itself (tampered or broken by the agent), judged before Layers 1 and 2
        "failure_layer": {"enum": [None, 0, 1, 2]},
        "failure_category": {
            "enum": [
                None,
                "dependency",
                "compilation",
                "runtime_crash",
                "oom",
                "verifier_timeout",
                "task_check",
                "tampered",
                "machine_broken",
            ]
        },
        "agent_seconds": _NUM,
        "verify_seconds": _NUM,
        "steps": _INT,
        "tokens_in": _INT,
        "tokens_out": _INT,
        "cost_usd": _NUM,
        "started_at": {"type": "string"},
        "finished_at": {"type": "string"},
    },
}

VERDICT = {
    "type": "object",
    "required": ["passed", "layer1", "layer2", "seconds"],
    "properties": {
        "passed": {"type": "boolean"},
        # Optional (verdicts written before it existed lack it): the machine's integrity.
        "machine": {
            "type": "object",
            "required": ["passed", "category", "evidence"],
            "properties": {
                "passed": {"type": "boolean"},
                "category": {"enum": [None, "tampered", "machine_broken"]},
                "evidence": {"type": "array", "items": {"type": "string"}},
                # What was recorded without being judged (STARTUP, SETUID lines of the host's
                # or the volume's scan, or of the doors' digests).
                "recorded": {"type": "array", "items": {"type": "string"}},
            },
        },
        # How the judgment was obtained (docs/verification.md): `host`, every stage after the
        # agent run from outside the machine (local); `machine`, through the machine's own
        # login with the controller's tools; `scanned`, that and the machine's volume read
        # from a snapshot by a machine of the harness's (AWS). Optional: older verdicts lack it.
        "trust": {"enum": ["host", "scanned", "machine"]},
        "layer1": {
            "type": "object",
            "required": ["passed", "category", "evidence"],
            "properties": {
                "passed": {"type": "boolean"},
                "category": {"type": ["string", "null"]},
                "evidence": {"type": "array", "items": {"type": "string"}},
            },
        },
        "layer2": {
            "type": "object",
            "required": ["passed", "checks"],
            "properties": {
                "passed": {"type": "boolean"},
                "checks": {
                    "type": "array",
                    "items": {
                        "type": "object",
                        "required": ["name", "passed", "detail"],
                        "properties": {
                            "name": {"type": "string"},
                            "passed": {"type": "boolean"},
                            "detail": {"type": "string"},
                        },
                    },
                },
                # Optional (tasks that pin no file, older verdicts): of the repository files
                # the experiment executes, the ones changed (checks.experiment_files).
                "experiment_files": {
                    "type": "object",
                    "required": ["pinned", "changed"],
                    "properties": {
                        "pinned": {"type": "integer"},
                        "changed": {
                            "type": "array",
                            "items": {
                                "type": "object",
                                "required": ["path", "pinned", "now", "accepted"],
                                "properties": {
                                    "path": {"type": "string"},
                                    "pinned": {"type": "string"},
                                    "now": {"type": "string"},
                                    "accepted": {"type": "boolean"},
                                    # An undeclared change judged (verify/repairs.py): why it
                                    # is or is not a compatibility repair, and its diff's size.
                                    "judged": {"type": "string"},
                                    "diff": {
                                        "type": "object",
                                        "required": ["added", "removed", "pinned_lines"],
                                        "properties": {
                                            "added": {"type": "integer"},
                                            "removed": {"type": "integer"},
                                            "pinned_lines": {"type": "integer"},
                                        },
                                    },
                                },
                            },
                        },
                    },
                },
            },
        },
        "seconds": {"type": "number"},
        # The verifier's variant (deploybench/verify/bank.py): `present` when its results were
        # compared with a bank's real runs, `none`, `stale` or `elsewhere` (a bank made on
        # other machine kinds only) when they were compared with nothing (`none` also where
        # the verifier declares no variants). Optional: older verdicts lack it.
        "bank": {"enum": ["present", "none", "stale", "elsewhere"]},
        "variant": {"type": ["string", "null"]},
    },
}

EVENT_KINDS = [
    "command",
    "file_read",
    "file_edit",
    "message",
    "task_tracker",
    "finish",
    "think",
    "error",
]

TRAJECTORY_EVENT = {
    "type": "object",
    "required": ["step", "t", "kind"],
    "properties": {
        "step": {"type": "integer", "minimum": 0},
        "t": {"type": "number"},
        "kind": {"enum": EVENT_KINDS},
        "command": {"type": ["string", "null"]},
        "exit_code": _INT,
        "soft_timeout": {"type": ["boolean", "null"]},
        "output": {"type": ["string", "null"]},
        "path": {"type": ["string", "null"]},
        "tokens_in": _INT,
        "tokens_out": _INT,
        "cost_usd": _NUM,
    },
}


def check(schema: dict[str, Any], data: Any, what: str) -> None:
    """Raise a one-line DeployBenchError naming `what`, the field and the reason."""
    validator = jsonschema.Draft202012Validator(schema)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        field = "/".join(str(p) for p in error.absolute_path) or "(top level)"
        raise DeployBenchError(f"{what}: field {field}: {error.message}")

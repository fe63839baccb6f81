"""A variant bank's real runs through the machine's login (playbooks/experiment_again.yml): how
the runner runs the verifier's experiment again on a passing reference's machine whose stages
after the agent entered it (the clouds). A backend that judges from outside runs it from there
instead (Backend.experiment_again: local's from the host); both give the experiment's exit code
and seconds and leave its logs where the bank reads the results (verify/bank.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from deploybench import runfolder
from deploybench.attempt import ansible
from deploybench.backends import inventory
from deploybench.paths import PLAYBOOKS_DIR

# Beyond the experiment's own budget: the install of the trusted tools, the scan, the pack and
# the cleanup (verify_hidden_step_seconds each, rarely more than seconds).
STEPS_SECONDS = 900


def through_the_machine(
    machines: dict[str, dict], attempt: Path, hand: dict[str, Any], script: str, logs: Path
) -> tuple[int, float]:
    """Run SCRIPT (the verifier's machine side for one variant) on the attempt's machine as the
    verdict's experiment ran, its logs into LOGS: its exit code (-1 when it did not run or its
    logs did not come back; the reason is in LOGS/bank_run.json) and seconds."""
    from deploybench.verify import toolkit

    logs.mkdir(parents=True, exist_ok=True)
    # The variant's script stays on the controller (0600) until the `script` action copies it.
    script_file = logs.parent / f".{logs.name}.machine_side.sh"
    fd = os.open(script_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(script)
    address = attempt / runfolder.MACHINE_ADDRESS
    extravars = {
        "task_id": hand["task_id"],
        "run_door": {
            "busybox": str(toolkit.busybox()),
            "files": {"machine_script": str(script_file)},
        },
        "run_verify_seconds": int(hand["verify_seconds"]),
        "bank_run_logs": str(logs),
        "bank_run_host": address.read_text().strip() if address.is_file() else "",
    }
    try:
        ansible.run_playbook(
            PLAYBOOKS_DIR / "experiment_again.yml",
            inventory.as_data(machines),
            extravars,
            attempt / runfolder.ANSIBLE_DIR / runfolder.VARIANTS_DIR / logs.name,
            timeout=int(hand["verify_seconds"]) + STEPS_SECONDS,
        )
    finally:
        script_file.unlink(missing_ok=True)
    try:
        ended = json.loads((logs / runfolder.BANK_RUN).read_text())
    except (OSError, ValueError):
        ended = {"rc": None, "seconds": 0, "error": "the playbook ended before the side door"}
        (logs / runfolder.BANK_RUN).write_text(json.dumps(ended))
    rc = ended.get("rc")
    if ended.get("error") or not isinstance(rc, int):
        return -1, float(ended.get("seconds") or 0)
    return rc, float(ended.get("seconds") or 0)

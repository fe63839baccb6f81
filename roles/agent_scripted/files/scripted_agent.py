#!/usr/bin/env python3
"""A built-in agent without an LLM: runs a fixed list of shell commands in the workdir and
writes each as a contract-5 trajectory event. Used for the nop and overclaim controls."""

import json
import subprocess
import sys
import time

OUTPUT_LIMIT = 2000


def main(commands_json: str, trajectory_path: str, workdir: str) -> int:
    commands = json.loads(commands_json)
    started = time.monotonic()
    with open(trajectory_path, "w") as out:

        def emit(event: dict) -> None:
            event.setdefault("t", round(time.monotonic() - started, 3))
            out.write(json.dumps(event) + "\n")
            out.flush()

        emit({"step": 0, "kind": "message", "output": f"scripted agent: {len(commands)} commands"})
        for step, command in enumerate(commands, start=1):
            proc = subprocess.run(
                ["bash", "-c", command],
                cwd=workdir,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            emit(
                {
                    "step": step,
                    "kind": "command",
                    "command": command,
                    "exit_code": proc.returncode,
                    "soft_timeout": False,
                    "output": proc.stdout[-OUTPUT_LIMIT:],
                }
            )
        emit({"step": len(commands) + 1, "kind": "finish", "output": "done"})
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))

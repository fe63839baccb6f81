"""The playbook's one door into the package: what playbooks/run_task.yml asks of deploybench
on the controller, and the results row's outcome read back from what that door wrote. The
playbook knocks with the `sidedoor` action (roles/run/action_plugins/sidedoor.py), which calls
`answer` in Ansible's own worker process, so no interpreter is started for it; a person at a
shell knocks with `python -m deploybench.attempt.sidedoor begin|finish|broken ...`, which calls
the same `answer` (the verbs after those three are the playbook's alone).

    begin     load and validate the task (once per attempt), plan the staging, find the trusted
              busybox and write the verifier's machine side; print all of it as one JSON
              document, which the playbook keeps as facts (the task included: no other part of
              the playbook reads task.yaml)
    finish    unpack the collected state and the verifier's logs, record how the agent stopped
              (stop.json), judge the machine, Layer 1 and Layer 2 (verdict.json, verify.json)
    broken    the same for a machine the agent broke: keep what it wrote, judge machine_broken
    handover  how the agent ended (handover.json), for a backend whose stages after the agent
              run from outside the machine (deploybench/local/after_agent.py): the playbook
              ends there and the runner judges the attempt
    doors     the digests of the login's doors before the agent and after it (deploybench/
              verify/doors.py), for a backend whose stages after the agent log in: a changed
              door is judged tampered at once
    scaffold  the agent scaffold's cache on the controller (deploybench/attempt/
              scaffold_cache.py): claim (an archive to copy in, or this attempt builds it),
              publish the archive the build left, or release a failed build's claim; what the
              attempt got is kept in scaffold.json
    agent_end the agent's run ended: the backend keeps the machine as the agent left it before
              anything enters it again (AWS: a snapshot of the stopped machine's volume)

A playbook run by hand goes through the same door, so it leaves the same files as `deploybench
run`. Every file name the door reads or writes comes from deploybench.runfolder, and the paths
it hands the playbook are in begin's `files`, so the roles spell none."""

from __future__ import annotations

import json
import sys
import tarfile
import time
import traceback
from pathlib import Path
from typing import Any

import click

from deploybench import catalog, runfolder
from deploybench.errors import DeployBenchError
from deploybench.paths import REPO_ROOT, TASKS_DIR


def files(attempt: Path) -> dict[str, str]:
    """The controller-side paths of one attempt that the playbook reads or writes."""
    names = {
        "staging": runfolder.STAGING,
        "papers": runfolder.PAPERS_TARBALL,
        "machine_script": runfolder.MACHINE_SCRIPT,
        "scan": runfolder.TAMPER_SCAN,
        "probe": runfolder.MACHINE_PROBE,
        "state": runfolder.STATE_TARBALL,
        "verifier_b64": runfolder.VERIFIER_B64,
        "agent_files_b64": runfolder.AGENT_FILES_B64,
        "ansible_dir": runfolder.ANSIBLE_DIR,
    }
    return {key: str(attempt / name) for key, name in names.items()}


def _papers_tar(papers: list[dict[str, str]], out: Path) -> None:
    """The paper files in one small tar, streamed into the workdir beside the tree."""
    with tarfile.open(out, "w") as tar:
        for paper in papers:
            tar.add(paper["src"], arcname=paper["name"], recursive=False)


def begin(
    task_id: str,
    agent: str,
    attempt: Path,
    stage_only: bool = False,
    cpu_only: bool = False,
    tasks_dir: Path = TASKS_DIR,
    root: Path = REPO_ROOT,
    bank_dir: str | None = None,
    image: str | None = None,
) -> dict[str, Any]:
    """Everything the playbook needs from the controller before it touches the machine. The
    verifier's variant is drawn here (from the bank in BANK_DIR where the task has one, made on
    the attempt's IMAGE) and kept in the attempt folder: the machine sees its inputs only when
    the experiment runs."""
    from deploybench.attempt import agents
    from deploybench.catalog import staging

    kind = agents.role_kind(agent)
    task = catalog.load_task(task_id, tasks_dir)
    homes = catalog.homes(task_id, root)
    if not stage_only and not homes["verifier"]:
        raise DeployBenchError(f"task {task_id} has no verifier yet")
    if agent == "reference" and not homes["reference_setup"]:
        raise DeployBenchError(f"task {task_id} has no reference setup yet")
    attempt = attempt.resolve()
    for folder in (runfolder.STATE_DIR, runfolder.VERIFIER_DIR):
        (attempt / folder).mkdir(parents=True, exist_ok=True)
    paths = files(attempt)
    plan = staging.plan_attempt(task, attempt, tasks_dir)
    _papers_tar(plan["papers"], Path(paths["papers"]))
    door: dict[str, Any] = {
        "task": task,
        "agent_kind": kind,
        "stage": {"tar": plan["tar"], "papers": [p["name"] for p in plan["papers"]]},
        "files": paths,
    }
    if not stage_only:
        import random

        from deploybench.verify import bank, toolkit, verification

        verification.load_checks(task_id)  # a task whose checks do not validate is not run
        run_dir = attempt.parent.parent.parent
        with runfolder.drawing_variants(run_dir, task_id):
            variant = bank.drawn(
                task_id,
                bank.root(bank_dir),
                runfolder.variants_drawn(run_dir, task_id),
                random.SystemRandom(),
                machine=bank.kind(image, cpu_only) if image else None,
            )
            runfolder.write_variant(attempt, variant)
        script = Path(paths["machine_script"])
        # CPU_ONLY=1 only in the CPU validation of a GPU task (deploybench ... --cpu-only).
        script.write_text(
            verification.machine_script(task_id, cpu_only=cpu_only, inputs=variant.get("inputs"))
        )
        script.chmod(0o600)
        from deploybench.verify import doors as door_digests

        door["busybox"] = str(toolkit.busybox())
        door["doors_command"] = door_digests.command()
    return door


def take_evidence(attempt: Path, evidence: dict[str, str]) -> None:
    """Write the raw output the playbook kept out of its events (it came on our standard input)
    into the attempt's files: the scan and the probe as text, the packed logs and the agent's
    files as the base64 they are."""
    paths = files(attempt)
    for key, path in (
        ("scan", "scan"),
        ("probe", "probe"),
        ("logs", "verifier_b64"),
        ("agent_files", "agent_files_b64"),
    ):
        if key in evidence:
            Path(paths[path]).write_text(str(evidence[key]))


def finish(
    attempt: Path,
    task_id: str,
    agent_rc: int,
    agent_seconds: float,
    killed: int,
    verify_rc: int | None,
    verify_seconds: float,
    ran: bool,
) -> dict[str, Any]:
    """stop.json, then verdict.json and verify.json, from what the stop and verify stages
    brought back; the machine-side script is deleted, judged or not."""
    from deploybench.verify import evidence

    evidence.unpack_state(attempt, agent_rc, agent_seconds, killed)
    paths = files(attempt)
    verdict = evidence.judge(
        attempt, verify_rc, verify_seconds, task_id, Path(paths["scan"]), ran=ran
    )
    _tidy(paths)
    return _through_the_machine(attempt, verdict)


def _through_the_machine(attempt: Path, verdict: dict[str, Any]) -> dict[str, Any]:
    """The verdict of stages run through the machine's own login (docs/verification.md)."""
    verdict["trust"] = "machine"
    runfolder.write_verdict(attempt, verdict)
    return verdict


def handover(attempt: Path, facts: dict[str, Any]) -> dict[str, Any]:
    """Write how the agent ended and where its files are, for the stages after it that run from
    outside the machine; nothing is judged here."""
    hand = {
        "agent_rc": int(facts["agent_rc"]),
        "agent_seconds": float(facts["agent_seconds"]),
        "workdir": str(facts["workdir"]),
        "control_dir": str(facts["control_dir"]),
        "user": str(facts["user"]),
        "verify_seconds": float(facts["verify_seconds"]),
        # False when written before the agent's run (its rc and seconds are not known yet).
        "ended": str(facts.get("ended", True)).lower() in ("true", "1", "yes"),
    }
    if not hand["ended"] and facts.get("backend"):
        from deploybench.backends import get_backend

        get_backend(str(facts["backend"])).before_agent(str(facts["host"]), attempt)
    (attempt / runfolder.HANDOVER).write_text(json.dumps(hand))
    return hand


def doors(attempt: Path, stage: str, listing: str, backend: str, host: str) -> dict[str, Any]:
    """The doors' digests of a machine the stages after the agent log in to (deploybench/
    verify/doors.py). Before the agent: kept, and the backend notes what it compares against.
    After it: compared, the findings kept for the judgment; `judged` when a door changed (the
    attempt is then judged tampered at once, and nothing more runs on the machine)."""
    from deploybench.backends import get_backend
    from deploybench.verify import doors as door_digests

    if stage == "before":
        (attempt / runfolder.DOORS_BEFORE).write_text(listing)
        if backend:
            get_backend(backend).before_agent(host, attempt)
        return {"judged": False}
    before = attempt / runfolder.DOORS_BEFORE
    if before.is_file():
        lines = door_digests.compare(before.read_text(), listing)
    else:
        lines = ["DOOR (all) no digests from before the agent to compare with"]
    (attempt / runfolder.DOOR_FINDINGS).write_text("".join(f"{line}\n" for line in lines))
    return {"judged": any(line.startswith("DOOR ") for line in lines)}


def agent_end(attempt: Path, backend: str, host: str) -> dict[str, Any]:
    """The agent's run ended; before any stage enters the machine again, the backend may keep
    the machine as the agent left it (AWS: stopped, its volume snapshotted, started again).
    `host`: the machine's address from now on ("" when it did not change)."""
    from deploybench.backends import get_backend

    moved = get_backend(backend).at_agent_end(host, attempt) or ""
    if moved:
        (attempt / runfolder.MACHINE_ADDRESS).write_text(moved + "\n")
    return {"host": moved}


def bank_run(dest: Path, rc: int | None, seconds: float, ran: bool, packed: str) -> dict[str, Any]:
    """One of a bank's runs of the experiment through the machine's login
    (playbooks/experiment_again.yml): its packed logs unpacked into DEST, and how it ended
    (bank_run.json there) for the runner, which reads the results from those logs."""
    from deploybench.verify import evidence

    dest.mkdir(parents=True, exist_ok=True)
    error = None
    if not ran:
        rc, error = None, "the experiment did not run: the machine failed the tamper scan"
    elif packed:
        error = evidence.unpack_packed_logs(packed.encode(), dest)
    else:
        error = "the verifier's logs did not come back"
    ended = {"rc": rc, "seconds": round(float(seconds), 3), "error": error}
    (dest / runfolder.BANK_RUN).write_text(json.dumps(ended))
    return ended


def scaffold(attempt: Path, args: dict[str, Any]) -> dict[str, Any]:
    from deploybench.attempt import scaffold_cache

    entry = scaffold_cache.Entry.of(
        str(args["scaffold"]),
        str(args["digest"]),
        str(args.get("backend") or ""),
        str(args.get("image") or ""),
        str(args["arch"]).strip(),
    )
    action = str(args["action"])
    started = time.monotonic()
    answered: dict[str, Any]
    if action == "claim":
        answered = scaffold_cache.claim(entry, float(args["wait_seconds"]))
    elif action == "publish":
        answered = scaffold_cache.publish(entry)
    elif action == "release":
        answered = scaffold_cache.release(entry)
    else:
        raise DeployBenchError(f"scaffold: no action {action!r} (claim, publish or release)")
    note_scaffold(attempt, entry, action, answered, started, args.get("system_packages"))
    return answered


def note_scaffold(
    attempt: Path,
    entry: Any,
    action: str,
    answered: dict[str, Any],
    started: float,
    system_packages: list[str] | None = None,
) -> None:
    """What the attempt got of the scaffold cache (scaffold.json): the claim, the build's
    publish or release, or (`layer`, the runner's) the cached prefix laid under its machine."""
    record = attempt / runfolder.SCAFFOLD
    kept = json.loads(record.read_text()) if record.is_file() else {}
    kept |= {"scaffold": entry.scaffold, "key": entry.key}
    if action in ("claim", "layer"):
        kept["system_packages"] = list(system_packages or [])
    kept[action] = {**answered, "seconds": round(time.monotonic() - started, 1)}
    record.write_text(json.dumps(kept, indent=1) + "\n")


def _tidy(paths: dict[str, str]) -> None:
    """What the playbook needed only while it ran: the machine side (which must not outlive
    the attempt) and the papers' tar."""
    for key in ("machine_script", "papers"):
        Path(paths[key]).unlink(missing_ok=True)


def broken(attempt: Path, agent_rc: int, agent_seconds: float) -> dict[str, Any]:
    """A machine the agent broke: keep what it wrote, record how it stopped, and judge it
    machine_broken from the probe's raw lines; the experiment is not run."""
    from deploybench.verify import evidence

    evidence.keep_agent_files(attempt)
    evidence.unpack_state(attempt, agent_rc, agent_seconds, 0)
    paths = files(attempt)
    verdict = evidence.judge(attempt, None, 0.0, probe=Path(paths["probe"]), ran=False)
    _tidy(paths)
    return _through_the_machine(attempt, verdict)


def broken_by_agent(
    attempt: Path, agent_rc: int, agent_seconds: float, what: str, finding: str, detail: str
) -> dict[str, Any]:
    """A machine on which a harness stage could not run after the agent (deploybench/
    attempt/stage_failures.py): machine_broken, judged from a probe line that says what
    failed; nothing more of the machine could be read."""
    detail = " ".join(detail.split())[:250]
    Path(files(attempt)["probe"]).write_text(f"PROBE {what} broken {finding}: {detail}\n")
    return broken(attempt, agent_rc, agent_seconds)


def outcome(attempt: Path, max_steps: int | None) -> dict[str, Any]:
    """The outcome fields of an attempt's results.jsonl row (contract 3), from the files the
    door wrote and the trajectory: how the agent stopped, what it claimed, the verdict."""
    from deploybench import trajectories
    from deploybench.verify import verification

    stop = runfolder.read_stop(attempt)
    verdict = runfolder.read_verdict(attempt)
    verify = runfolder.read_verify(attempt)
    trajectory = runfolder.trajectory_path(attempt)
    events = trajectories.read_events(trajectory) if trajectory.is_file() else []
    summary = trajectories.summary(events)
    layer, category = verification.failure_of(verdict, timed_out=verify.timed_out)
    if stop.timed_out:
        stop_type = "timeout"
    elif max_steps and summary["steps"] >= max_steps and not summary["finished"]:
        stop_type = "max_steps"
    else:
        stop_type = "self_stop"
    return {
        "status": "completed",
        "stop_type": stop_type,
        "runbook_status": verification.runbook_status(runfolder.read_runbook(attempt)),
        "passed": bool(verdict["passed"]) and not verify.timed_out,
        "failure_layer": layer,
        "failure_category": category,
        "agent_seconds": stop.agent_seconds,
        "verify_seconds": verify.seconds,
        "steps": summary["steps"],
        "tokens_in": summary["tokens_in"],
        "tokens_out": summary["tokens_out"],
        "cost_usd": summary["cost_usd"],
    }


def _judging(attempt: Path, evidence: dict[str, str] | None, judge) -> dict[str, Any]:
    """Take the evidence, then judge; a failure leaves its traceback in the attempt folder (the
    playbook hides the judging tasks' output)."""
    try:
        if evidence:
            take_evidence(attempt, evidence)
        return judge()
    except Exception:
        (attempt / runfolder.HARNESS_ERROR).write_text(traceback.format_exc())
        raise


def _manual_attempt(task_id: str, agent: str, host: str) -> Path:
    """Where a playbook run by hand keeps its attempt: runs/manual/<task>/<agent>/<host>."""
    from deploybench.paths import runs_dir

    catalog.load_task(task_id)  # the id is checked before it names a folder
    return runs_dir() / "manual" / task_id / agent / host


def answer(verb: str, args: dict[str, Any]) -> dict[str, Any]:
    """One knock on the door, with the playbook's arguments as a mapping (the action plugin's
    task arguments, or the CLI's options): begin's document, or the verdict of finish/broken.
    `evidence` holds the raw output the playbook kept out of its events (no_log)."""
    if verb == "begin":
        attempt = args.get("attempt") or ""
        folder = (
            Path(attempt)
            if attempt
            else _manual_attempt(args["task"], args["agent"], args.get("host") or "machine")
        )
        return begin(
            args["task"],
            args["agent"],
            folder,
            stage_only=bool(args.get("stage_only")),
            cpu_only=bool(args.get("cpu_only")),
            bank_dir=args.get("bank_dir") or None,
            image=args.get("image") or None,
        )
    if verb == "bank_run":
        rc = args.get("rc")
        return bank_run(
            Path(args["dest"]),
            None if rc in (None, "") else int(rc),
            float(args.get("seconds") or 0),
            str(args.get("ran", True)).lower() in ("true", "1", "yes"),
            str((args.get("evidence") or {}).get("logs", "")),
        )
    attempt = Path(args["attempt"])
    evidence = args.get("evidence")
    if verb == "finish":
        verify_rc = args.get("verify_rc")
        return _judging(
            attempt,
            evidence,
            lambda: finish(
                attempt,
                args["task"],
                int(args["agent_rc"]),
                float(args["agent_seconds"]),
                int(args.get("killed") or 0),
                None if verify_rc in (None, "") else int(verify_rc),
                float(args.get("verify_seconds") or 0),
                bool(args.get("ran", True)),
            ),
        )
    if verb == "handover":
        return handover(attempt, args)
    if verb == "doors":
        return doors(
            attempt,
            str(args["stage"]),
            str((evidence or {}).get("listing", "")),
            str(args.get("backend") or ""),
            str(args.get("host") or ""),
        )
    if verb == "scaffold":
        return scaffold(attempt, args)
    if verb == "agent_end":
        return agent_end(attempt, str(args.get("backend") or ""), str(args.get("host") or ""))
    if verb == "broken":
        return _judging(
            attempt,
            evidence,
            lambda: broken(attempt, int(args["agent_rc"]), float(args["agent_seconds"])),
        )
    raise DeployBenchError(
        f"the side door has no verb {verb!r}: begin, finish, broken, handover, doors, "
        "scaffold, agent_end or bank_run"
    )


# ---- the same door from a shell ----
class _Door(click.Group):
    """A harness error is one line on stderr and exit 1, never a traceback."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except DeployBenchError as exc:
            raise click.ClickException(str(exc)) from None


def _stdin_evidence() -> dict[str, str] | None:
    """The raw evidence, as a JSON object on standard input, when one is piped in."""
    if sys.stdin.isatty():
        return None
    text = sys.stdin.read()
    return json.loads(text) if text.strip() else None


@click.group(cls=_Door)
def main() -> None:
    """What the run_task playbook asks of deploybench on the controller."""


_ATTEMPT = click.Path(file_okay=False, path_type=Path)


@main.command("begin")
@click.option("--task", "task_id", required=True)
@click.option("--agent", required=True)
@click.option(
    "--attempt",
    default="",
    help="The attempt's folder; by hand: runs/manual/<task>/<agent>/<host>.",
)
@click.option("--host", default="machine", help="Names the folder a run by hand gets.")
@click.option("--cpu-only/--not-cpu-only", default=False, help="The CPU validation of a GPU task.")
@click.option("--stage-only/--not-stage-only", default=False, help="No verifier is needed.")
@click.option("--bank-dir", default="", help="The operator's variant banks (verify/bank.py).")
@click.option("--image", default="", help="The machine's image: only a bank made on it is used.")
def _begin(
    task_id: str,
    agent: str,
    attempt: str,
    host: str,
    stage_only: bool,
    cpu_only: bool,
    bank_dir: str,
    image: str,
) -> None:
    args = {"task": task_id, "agent": agent, "attempt": attempt, "host": host}
    args |= {"stage_only": stage_only, "cpu_only": cpu_only, "bank_dir": bank_dir, "image": image}
    click.echo(json.dumps(answer("begin", args)))


@main.command("finish")
@click.argument("attempt", type=_ATTEMPT)
@click.option("--task", "task_id", required=True)
@click.option("--agent-rc", type=int, required=True)
@click.option("--agent-seconds", type=float, required=True)
@click.option("--killed", type=int, default=0)
@click.option("--verify-rc", type=int, default=None)
@click.option("--verify-seconds", type=float, default=0.0)
@click.option("--ran/--not-ran", default=True, help="Whether the experiment ran.")
def _finish(attempt, task_id, agent_rc, agent_seconds, killed, verify_rc, verify_seconds, ran):
    args = {"attempt": attempt, "task": task_id, "agent_rc": agent_rc}
    args |= {"agent_seconds": agent_seconds, "killed": killed, "verify_rc": verify_rc}
    args |= {"verify_seconds": verify_seconds, "ran": ran, "evidence": _stdin_evidence()}
    verdict = answer("finish", args)
    click.echo(f"passed={verdict['passed']}")


@main.command("broken")
@click.argument("attempt", type=_ATTEMPT)
@click.option("--agent-rc", type=int, required=True)
@click.option("--agent-seconds", type=float, required=True)
def _broken(attempt: Path, agent_rc: int, agent_seconds: float) -> None:
    args = {"attempt": attempt, "agent_rc": agent_rc, "agent_seconds": agent_seconds}
    verdict = answer("broken", args | {"evidence": _stdin_evidence()})
    click.echo(f"passed={verdict['passed']} category={verdict['machine']['category']}")


if __name__ == "__main__":
    main()

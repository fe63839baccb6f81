"""`deploybench run`: attempts of (task, agent), one fresh machine each, run through the
run_task playbook, judged by the hidden verifier, recorded in results.jsonl.

A bounded worker pool runs attempts in parallel. An infrastructure failure (the machine did
not come up, SSH was lost, Terraform or a harness stage failed) is recorded in
infra_errors.jsonl and retried; only the attempt's final outcome goes to results.jsonl, so
every attempt appears there exactly once, also across --resume."""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import threading
import time
import traceback
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from deploybench import contracts, runfolder
from deploybench.attempt import ansible, sidedoor, stage_failures
from deploybench.attempt.agents import AgentSpec
from deploybench.backends import (
    Backend,
    MachineRequest,
    deployments,
    get_backend,
    inventory,
    kept,
)
from deploybench.errors import DeployBenchError, InfraError
from deploybench.paths import PLAYBOOKS_DIR
from deploybench.run import live
from deploybench.runfolder import ResultsStore
from deploybench.verify import verification

if TYPE_CHECKING:
    from deploybench.run.gateway import Gateway


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class RunOptions:
    run_dir: Path
    backend: Backend
    tasks: dict[str, dict[str, Any]]
    agents: list[AgentSpec]
    attempts: int = 1
    parallel: int = 1
    infra_retries: int = 2
    image: str | None = None
    agent_seconds: int | None = None  # overrides every task's budget (tests, smoke runs)
    upload: str | None = None
    # The CPU validation of GPU tasks: machines without a GPU, the reference setups' CPU mode,
    # the experiment's CPU form; verdicts stay normal and a second judgment without the GPU
    # evidence is written beside them (verification.cpu_judgment).
    cpu_only: bool = False
    # validate-references --until-blocked: machines without a GPU (the role runs as on its own
    # machine until its first GPU step), each step of the reference role cut at step_seconds.
    until_blocked: bool = False
    step_seconds: int = 0
    # The operator's variant banks (verify/bank.py): where attempts draw their variant from,
    # and, with bank_size, where validate-references --bank records a passing reference's runs.
    bank_dir: Path | None = None
    bank_size: int = 0
    # validate-references --bank-again: the bank's own variants run on a new machine.
    bank_again: bool = False
    # The run's model gateway (run/gateway.py) in front of the command agents' providers: on
    # unless a test or a user turns it off (--no-gateway), then keys go to the machine as before.
    gateway: bool = True
    prices: dict[str, tuple[float, float]] | None = None
    # --keep-failed N: the machines of up to N failed attempts outlive their verdict, for
    # `diagnose --agentic`, for keep_hours at most (backends/kept.py).
    keep_failed: int = 0
    keep_hours: float = 4.0


@dataclass(frozen=True)
class Attempt:
    task_id: str
    agent: str
    number: int

    def folder(self, run_dir: Path) -> Path:
        return runfolder.attempt_dir(run_dir, self.task_id, self.agent, self.number)


# Processes and threads an attempt's machine may hold at once (where its backend enforces it):
# far above what a build or a training run starts, well below what hurts a shared host.
LIMIT_PROCESSES = 4096
# What an attempt's wall-clock limit allows for beyond its budgets: preparing the machine and
# staging the repository (the largest catalog trees take minutes), the stages after the agent.
STAGING_SECONDS = 3600


def loopback_ports(url: str) -> list[int]:
    """The port of a model endpoint on the controller's own loopback, which a machine with a
    network of its own reaches only when it is given it."""
    if not url:
        return []
    parsed = urlsplit(url)
    if parsed.hostname not in ("127.0.0.1", "localhost", "::1"):
        return []
    return [parsed.port or (443 if parsed.scheme == "https" else 80)]


class Runner:
    def __init__(self, options: RunOptions):
        self.o = options
        self.run_id = options.run_dir.name
        self.store = ResultsStore(options.run_dir)
        self.cancelled = threading.Event()
        self.agents = {a.name: a for a in options.agents}
        self.gateway: Gateway | None = None
        mine = str(options.run_dir.resolve())
        already = sum(
            1 for _, _, r in kept.listed() if r.get("attempt", "").startswith(mine + os.sep)
        )
        self.keep_slots = kept.Slots(options.keep_failed - already)

    def _through_gateway(self, agent: AgentSpec) -> bool:
        """Whether the agent's model calls go through the run's gateway: a command agent with a
        provider endpoint (every scaffold's spec has one)."""
        return self.o.gateway and agent.behaviour.calls_a_model and bool(agent.base_url)

    # ---------- one attempt ----------
    def _request(self, task_id: str, agent: str) -> MachineRequest:
        task = self.o.tasks[task_id]
        sizes = task.get("machine") or {}
        disk_gb = max(8, int(sizes.get("disk_gb", 100)))
        return MachineRequest(
            run_id=f"a{secrets.token_hex(4)}",
            image=self.o.image,
            gpu=bool(task.get("gpu")) and not (self.o.cpu_only or self.o.until_blocked),
            disk_gb=disk_gb,
            limit_memory_gb=float(sizes.get("memory_gb", 64))
            + self.agents[agent].behaviour.scaffold_memory_gb,
            limit_disk_gb=disk_gb,
            limit_processes=LIMIT_PROCESSES,
            limit_cpus=(
                float(sizes["vcpus"]) + self.agents[agent].behaviour.scaffold_cpus
                if sizes.get("vcpus")
                else None
            ),
            loopback_ports=(
                [self.gateway.port]
                if self.gateway is not None and self._through_gateway(self.agents[agent])
                else loopback_ports(self.agents[agent].base_url)
            ),
            tags={"run": self.run_id, "task": task_id, "agent": agent},
        )

    def _execute(self, attempt: Attempt, folder: Path) -> dict[str, Any]:
        agent = self.agents[attempt.agent]
        request = self._request(attempt.task_id, attempt.agent)
        started_at = now()
        events: list[dict[str, Any]] = []
        watch = live.Watch(
            folder,
            attempt.task_id,
            attempt.agent,
            attempt.number,
            self.o.agent_seconds
            or agent.agent_seconds
            or int(self.o.tasks[attempt.task_id]["agent_minutes"] * 60),
        )

        held: dict[str, Any] = {}

        def on_event(event: dict[str, Any]) -> None:
            events.append(event)
            watch.on_event(event)
            if "lease" in held:
                held["lease"].active = watch.key_open

        # The deployment is recorded in the state folder, with this run as its owner, before
        # its machine is started: `machines`, `destroy` and --resume see it whenever we die.
        deployment = deployments.open_for(
            request, owner={"run_dir": str(self.o.run_dir.resolve()), "attempt": str(folder)}
        )
        watch.deployment(deployment)
        lease = None
        try:
            layer = self._scaffold_layer(agent, folder)
            if layer:
                request.lower_layers = [layer["layer"]]
            machines = self.o.backend.provision(request, deployment)
            extravars = {
                "task_id": attempt.task_id,
                "attempt_dir": str(folder.resolve()),
                **agent.extravars(),
            }
            if layer:
                # The role then skips the scaffold's claim, copy and install: it is there.
                extravars["agent_command_scaffold_layer"] = layer["sha256"]
            budget = self.o.agent_seconds or agent.agent_seconds
            if budget:
                extravars["agent_seconds"] = budget
            if self.o.cpu_only:
                extravars["cpu_only"] = True
            if self.o.step_seconds:
                extravars["agent_reference_step_seconds"] = self.o.step_seconds
            if self.o.bank_dir:
                extravars["bank_dir"] = str(self.o.bank_dir)
                # Its variants serve machines of the kind they were made on only.
                extravars["bank_image"] = self.o.image or self.o.backend.default_image
            outside = self.o.backend.judges_from_outside
            if outside:
                extravars["post_agent_outside"] = True
            env_values = None
            if self.gateway is not None and self._through_gateway(agent):
                lease, extravars["agent_command_base_url"] = self._lease(agent, folder)
                held["lease"] = lease
                # The spec's key variables hold the attempt's key: the provider's stays here.
                env_values = dict.fromkeys(agent.env_from_controller, lease.key)
            reverse = request.loopback_ports if self.o.backend.loopback_by_ssh else []
            result = ansible.run_playbook(
                PLAYBOOKS_DIR / "run_task.yml",
                inventory.as_data(machines, reverse),
                extravars,
                folder / runfolder.ANSIBLE_DIR,
                on_event=on_event,
                # A provider failure ends the attempt's playbook at once: the attempt is the
                # infrastructure's, and the agent's retries against a refusing gateway are waste.
                cancel=lambda: self.cancelled.is_set() or bool(lease and lease.provider_error),
                timeout=self._wall_clock(attempt, agent),
                pass_env=[*agent.env_from_controller, *self.o.backend.playbook_env()],
                env_values=env_values,
            )
            if lease is not None:
                self._close(lease, folder)
                lease = None
            # A provider failure: no verdict; the attempt is tried again (below, once its machine
            # is gone).
            provider_failed = bool((runfolder.read_gateway(folder) or {}).get("provider_error"))
            judged = False
            if provider_failed:
                pass
            elif outside:
                # The stop and the verifier both run from outside now, in one call.
                watch.stage("stop")
                judged = self._after_agent(attempt, machines, folder, events)
            else:
                judged = stage_failures.judge(result, events, machines, folder)
            # A passing reference's machine, judged from outside or through its login, runs
            # the bank's variants before it goes.
            if self.o.bank_size and runfolder.has_verdict(folder) and self._passed(attempt, folder):
                try:
                    self._make_bank(attempt, machines, folder)
                except DeployBenchError as exc:
                    # The reference's verdict stands; only the bank is not made.
                    note = folder / runfolder.VARIANTS_DIR / "bank.txt"
                    note.parent.mkdir(parents=True, exist_ok=True)
                    with note.open("a") as out:
                        out.write(f"no bank made: {exc}\n")
            if not provider_failed:
                self.o.backend.collect_state(machines, folder / runfolder.STATE_DIR)
            if runfolder.has_verdict(folder):
                self.o.backend.scan_from_outside(machines, folder)
        finally:
            if lease is not None:
                self._close(lease, folder)
            if self._keeps(attempt, folder):
                # The verdict is written and final: only now may the machine outlive it.
                kept.mark(deployment, folder, self.o.keep_hours)
                deployments.keep_evidence(deployment, folder / runfolder.MACHINE_DIR)
            else:
                try:
                    self.o.backend.destroy(deployment)
                finally:
                    deployments.keep_evidence(deployment, folder / runfolder.MACHINE_DIR)
                shutil.rmtree(deployment, ignore_errors=True)
            watch.stage("done")
        if self.cancelled.is_set():
            raise KeyboardInterrupt
        calls = runfolder.read_gateway(folder)
        if calls and calls.get("provider_error"):
            # The provider failed the agent, not the model: never scored, tried again.
            raise InfraError(f"provider_error: {calls['provider_error']}")
        if calls is not None and not calls.get("calls") and self._through_gateway(agent):
            # The scaffold ended before the model was ever asked (it crashed at start, or its
            # runtime never came up: OpenHands waits 120 s for its action server, which a loaded
            # machine can miss): nothing of the model's was done, so there is nothing to score.
            raise InfraError(f"scaffold_error: {self._scaffold_end(agent, folder)}")
        if not runfolder.has_verdict(folder) or not (result.ok or judged):
            raise InfraError(stage_failures.reason(result, events))
        agent.behaviour.write_trajectory(agent, folder, events, attempt.task_id)
        return self._result_line(attempt, agent, folder, started_at)

    def _scaffold_layer(self, agent: AgentSpec, folder: Path) -> dict[str, str] | None:
        """The agent's scaffold as a read-only layer of its machine, for a backend whose
        machines are overlays on this host: the cache's prefix for this spec and platform,
        unpacked once and checked (scaffold_cache.layer), noted in the attempt's scaffold.json.
        None when the backend copies archives in, the agent installs nothing, or the cache has
        no whole archive yet (the playbook then claims it or its build)."""
        from deploybench.attempt import scaffold_cache

        uid_base = self.o.backend.layers_uid_base
        if uid_base is None or not agent.behaviour.calls_a_model or not agent.install:
            return None
        scaffold = agent.scaffold or agent.name
        entry = scaffold_cache.Entry.of(
            scaffold,
            scaffold_cache.install_digest(scaffold, agent.install, agent.system_packages),
            self.o.backend.name,
            self.o.image or self.o.backend.default_image,
            os.uname().machine,
        )
        started = time.monotonic()
        layer = scaffold_cache.layer(entry, uid_base)
        if layer:
            folder.mkdir(parents=True, exist_ok=True)
            sidedoor.note_scaffold(folder, entry, "layer", layer, started, agent.system_packages)
        return layer

    @staticmethod
    def _scaffold_end(agent: AgentSpec, folder: Path) -> str:
        try:
            stop = runfolder.read_stop(folder)
            how = "timed out" if stop.timed_out else f"exited {stop.agent_rc}"
        except DeployBenchError:
            how = "ended"
        return f"{agent.name} {how} before its first model call (its agent.log says why)"

    def _keeps(self, attempt: Attempt, folder: Path) -> bool:
        """Whether this attempt's machine is kept: failed by the judgment the run scores (under
        --cpu-only the CPU judgment, which a GPU task's normal verdict always fails), a slot
        left, no Ctrl-C."""
        if not self.o.keep_failed or self.cancelled.is_set():
            return False
        if not runfolder.has_verdict(folder):
            return False
        try:
            if self._passed(attempt, folder):
                return False
        except DeployBenchError:
            return False  # no verify.json: the attempt is not scored (an infrastructure error)
        return self.keep_slots.take()

    def _lease(self, agent: AgentSpec, folder: Path):
        """The attempt's gateway key and the base URL its agent is given."""
        from deploybench.attempt.ansible import Unsafe
        from deploybench.run.gateway import Upstream

        names = agent.env_from_controller
        upstream = Upstream(
            agent.base_url, agent.api, os.environ.get(names[0], "") if names else ""
        )
        lease = self.gateway.open(
            folder, upstream, agent.max_tokens, agent.max_cost_usd, self.o.prices, active=False
        )
        return lease, Unsafe(self.gateway.url_for(upstream))

    def _close(self, lease, folder: Path) -> None:
        """The attempt's key stops working; what it spent is kept beside its calls."""
        runfolder.write_gateway(folder, self.gateway.close(lease))

    def _wall_clock(self, attempt: Attempt, agent: AgentSpec) -> int:
        """One limit for the attempt's whole playbook, beyond every budget it holds (staging,
        the agent's install and run, verification): a step that hangs past its own limit ends
        here at the latest."""
        task = self.o.tasks[attempt.task_id]
        agent_seconds = (
            self.o.agent_seconds or agent.agent_seconds or int(task["agent_minutes"] * 60)
        )
        verify_seconds = int(task["verify_minutes"] * 60)
        return agent_seconds + agent.install_seconds + verify_seconds + STAGING_SECONDS

    def _after_agent(
        self, attempt: Attempt, machines: dict[str, dict], folder: Path, events: list
    ) -> bool:
        """The stages after the agent, from outside its machine, once the agent's run began
        (whatever the playbook said after: a machine the agent broke is judged, not retried);
        True when a verdict was written."""
        hand = runfolder.read_handover(folder)
        if self.cancelled.is_set() or hand is None:
            return False
        if not hand.get("ended"):
            if not stage_failures.agent_began(events):
                return False  # lost before the agent's run: an infrastructure error
            hand["agent_rc"], hand["agent_seconds"] = stage_failures.agent_end(events)
        self.o.backend.after_agent(machines, folder, attempt.task_id, hand)
        return runfolder.has_verdict(folder)

    def _passed(self, attempt: Attempt, folder: Path) -> bool:
        verdict = runfolder.read_verdict(folder)
        if not self.o.cpu_only:
            return bool(verdict["passed"])
        judgment = verification.cpu_judgment(
            verdict,
            verification.load_checks(attempt.task_id),
            runfolder.read_verify(folder).timed_out,
        )
        return bool(judgment["passed"])

    def _make_bank(self, attempt: Attempt, machines: dict[str, dict], folder: Path) -> None:
        """A passing reference's experiment run again on bank_size drawn variants (and a few
        twice) on its final machine, their results recorded as the task's bank. A variant
        whose run fails is kept in the attempt's variants folder and no bank is written."""
        import random

        from deploybench.attempt import bank_runs
        from deploybench.verify import bank

        spec = bank.spec_of(attempt.task_id)
        note = folder / runfolder.VARIANTS_DIR / "bank.txt"
        note.parent.mkdir(parents=True, exist_ok=True)
        if spec is None:
            note.write_text("the task's checks.yaml declares no variants: no bank made\n")
            return
        task = self.o.tasks[attempt.task_id]
        hand = {
            "task_id": attempt.task_id,
            "verify_seconds": int(task["verify_minutes"] * 60),
            **(runfolder.read_handover(folder) or {}),
        }
        if self.o.bank_again:
            draws = bank.again(self.o.bank_dir, attempt.task_id, spec, self.o.bank_size)
        else:
            draws = bank.plan(spec, self.o.bank_size, random.SystemRandom())
        runs, lines = [], []
        distinct = len({json.dumps(d, sort_keys=True) for d in draws})
        if distinct < self.o.bank_size and not self.o.bank_again:
            lines.append(f"{self.o.bank_size} asked; the input space holds {distinct}: all of them")
        for i, inputs in enumerate(draws, 1):
            logs = folder / runfolder.VARIANTS_DIR / f"{i:02d}"
            script = verification.machine_script(attempt.task_id, self.o.cpu_only, inputs)
            if self.o.backend.judges_from_outside:
                rc, seconds = self.o.backend.experiment_again(machines, folder, hand, script, logs)
            else:
                # As its verdict's experiment ran: through the machine's login (cloud machines).
                rc, seconds = bank_runs.through_the_machine(machines, folder, hand, script, logs)
            lines.append(f"{i:02d} {inputs} rc={rc} {seconds:.1f}s")
            # Printed above the run's progress bar (rich redirects standard output there).
            print(
                f"{attempt.task_id}: bank variant {i}/{len(draws)} {inputs}: rc {rc}, "
                f"{seconds:.0f} s",
                flush=True,
            )
            if rc != 0:
                note.write_text("\n".join(lines) + "\nno bank made: a variant's run failed\n")
                return
            runs.append({"inputs": inputs, "log_dir": logs, "seconds": seconds})
        made = {
            "task": attempt.task_id,
            "run_id": self.run_id,
            "at": now(),
            "backend": self.o.backend.name,
            "image": self.o.image or self.o.backend.default_image,
            "cpu_only": self.o.cpu_only,
            "variants": distinct,
            "experiment_seconds": round(sum(r["seconds"] for r in runs), 1),
        }
        if self.o.bank_again:
            made["again"] = True
        # The runs first: a bank that cannot be saved (a text result another machine gives
        # otherwise) is said below them by the caller's handler.
        note.write_text("\n".join(lines) + "\n")
        path = bank.save(self.o.bank_dir, attempt.task_id, bank.record(spec, runs, made))
        saved, _ = bank.load(self.o.bank_dir, attempt.task_id, spec)
        weak = [f"{bank.WEAK} {w}" for w in bank.weaknesses(spec, saved)]
        note.write_text("\n".join(lines + weak) + f"\nbank written: {path}\n")

    def _result_line(self, attempt: Attempt, agent: AgentSpec, folder: Path, started_at: str):
        outcome = sidedoor.outcome(folder, agent.max_steps)
        calls = runfolder.read_gateway(folder)
        if calls is not None:
            # The gateway's counts are the attempt's; the scaffold's own stay in its trajectory.
            outcome.update(
                tokens_in=calls["tokens_in"], tokens_out=calls["tokens_out"],
                cost_usd=calls["cost_usd"],
            )  # fmt: skip
            if calls.get("budget"):
                outcome["stop_type"] = calls["budget"]
        if self.o.cpu_only:
            runfolder.write_cpu_judgment(
                folder,
                verification.cpu_judgment(
                    runfolder.read_verdict(folder),
                    verification.load_checks(attempt.task_id),
                    timed_out=runfolder.read_verify(folder).timed_out,
                ),
            )
        return self._row(attempt, started_at, **outcome)

    def _row(self, attempt: Attempt, started_at: str, **outcome: Any) -> dict[str, Any]:
        """A results.jsonl line: who and when, then the outcome; fields an outcome does not
        have (an infrastructure error has none) are null."""
        return {
            **dict.fromkeys(contracts.RESULT["required"]),
            "run_id": self.run_id,
            "task_id": attempt.task_id,
            "agent": attempt.agent,
            "model": self.agents[attempt.agent].model,
            "backend": self.o.backend.name,
            "attempt": attempt.number,
            **outcome,
            "started_at": started_at,
            "finished_at": now(),
        }

    def run_attempt(self, attempt: Attempt) -> dict[str, Any]:
        """Try an attempt until it completes or its infrastructure retries run out."""
        folder = attempt.folder(self.o.run_dir)
        for tries in range(1, self.o.infra_retries + 2):
            if folder.exists():
                shutil.rmtree(folder)
            folder.mkdir(parents=True)
            started_at, clock = now(), time.monotonic()
            try:
                row = self._execute(attempt, folder)
                runfolder.write_timing(folder, elapsed(clock))
                break
            except Exception as exc:  # any harness failure is not the agent's
                if self.cancelled.is_set():
                    raise KeyboardInterrupt from exc
                if not isinstance(exc, DeployBenchError):
                    (folder / runfolder.HARNESS_ERROR).write_text(traceback.format_exc())
                runfolder.log_infra_error(
                    self.o.run_dir,
                    {
                        "task_id": attempt.task_id,
                        "agent": attempt.agent,
                        "attempt": attempt.number,
                        "try": tries,
                        "reason": str(exc),
                        "at": now(),
                    },
                )
                kept = runfolder.infra_dir(folder, tries)
                folder.rename(kept)
                row = self._row(attempt, started_at, status="infra_error")
        self.store.append(row)
        if self.o.upload:
            self._upload(folder if row["status"] == "completed" else kept)
        return row

    def _upload(self, folder: Path) -> None:
        """Upload one attempt; a failed upload is logged, never fatal (`upload` can resume it)."""
        from deploybench.run import storage

        try:
            storage.upload_attempt(folder, self.o.upload)
        except Exception as exc:  # the results matter more than the copy
            runfolder.log_upload_error(
                self.o.run_dir,
                {"folder": str(folder), "reason": f"{type(exc).__name__}: {exc}", "at": now()},
            )

    # ---------- the whole run ----------
    def planned(self) -> list[Attempt]:
        return [
            Attempt(task_id, agent.name, n)
            for task_id in self.o.tasks
            for agent in self.o.agents
            for n in range(1, self.o.attempts + 1)
        ]

    def run(self) -> list[dict[str, Any]]:
        # A controller killed outright (no chance to clean up) leaves machines whose state is
        # in the run folder: destroy them before their attempts are tried again.
        self.cleanup()
        done = self.store.finished()
        todo = [a for a in self.planned() if (a.task_id, a.agent, a.number) not in done]
        # The backend's sanity check, once per run for each kind of machine the run asks for,
        # before any machine: the attempts' provisions find it made.
        for a in todo:
            self.o.backend.check(self._request(a.task_id, a.agent))
        if todo and any(self._through_gateway(a) for a in self.o.agents):
            from deploybench.run.gateway import Gateway

            self.gateway = Gateway().start()
        try:
            return self._run(todo)
        finally:
            if self.gateway is not None:
                self.gateway.stop()
                self.gateway = None

    def _run(self, todo: list[Attempt]) -> list[dict[str, Any]]:
        total = len(self.planned())
        passed = sum(1 for r in runfolder.current(self.store.load()) if r.get("passed"))
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("passed {task.fields[passed]}"),
            TimeElapsedColumn(),
        )
        # Twice a second is enough for a bar of attempts that last minutes; rich's default of ten
        # redraws cost the controller CPU beside every attempt.
        with _RunProgress(
            self.o.run_dir, *columns, transient=False, refresh_per_second=2
        ) as progress:
            bar = progress.add_task(
                f"run {self.run_id}", total=total, completed=total - len(todo), passed=passed
            )
            pool = ThreadPoolExecutor(max_workers=max(1, self.o.parallel))
            futures: dict[Future, Attempt] = {pool.submit(self.run_attempt, a): a for a in todo}
            try:
                pending = set(futures)
                while pending:
                    finished, pending = wait(pending, return_when=FIRST_COMPLETED, timeout=0.5)
                    for future in finished:
                        row = future.result()
                        passed += bool(row.get("passed"))
                        progress.update(bar, advance=1, passed=passed)
                        # A line per attempt: the bar alone says nothing in a log file, where
                        # a long run (a 40-minute build) would otherwise print only at its end;
                        # never wrapped, so a log keeps one line per attempt.
                        progress.console.print(
                            finished_line(row), markup=False, highlight=False, soft_wrap=True
                        )
            except BaseException:
                # Ctrl-C or a harness bug: stop the playbooks, let every worker destroy its
                # machine, then sweep whatever a killed Terraform left behind.
                self.cancelled.set()
                pool.shutdown(wait=True, cancel_futures=True)
                self.cleanup()
                raise
            pool.shutdown(wait=True)
        return runfolder.current(self.store.load())

    def cleanup(self) -> None:
        _end_orphans(self.o.run_dir)
        mine = str(self.o.run_dir.resolve())
        for backend_name, folder, _ in deployments.listed():
            if deployments.owner(folder).get("run_dir") != mine:
                continue
            record = kept.read(folder)
            if record is not None and kept.abandoned(record) is None:
                continue  # kept for a diagnosis, until its time runs out
            try:
                deployments.destroy_folder(get_backend(backend_name), folder)
            except DeployBenchError:
                continue


class _RunProgress(Progress):
    """The run's bar with, under it, a table of the attempts under way (run/live.py), redrawn
    in place; finished attempts scroll above as one line each."""

    def __init__(self, run_dir: Path, *columns: Any, **kwargs: Any):
        self.run_dir = run_dir  # before rich's init, which may draw already
        super().__init__(*columns, **kwargs)

    def get_renderables(self):
        yield self.make_tasks_table(self.tasks)
        rows = live.running(self.run_dir)
        if rows:
            yield live.table(rows)


def finished_line(row: dict[str, Any]) -> str:
    """One attempt's outcome in a line: who, the verdict and where it failed, the times."""
    who = f"{row['task_id']} {row['agent']} #{row['attempt']}"
    if row["status"] != "completed":
        return f"{who}: infrastructure error, retries exhausted (infra_errors.jsonl)"
    verdict = (
        "PASS"
        if row["passed"]
        else (f"FAIL at layer {row['failure_layer']} ({row['failure_category']})")
    )
    times = ", ".join(
        f"{name} {row[key]:.0f} s"
        for name, key in (("agent", "agent_seconds"), ("verifier", "verify_seconds"))
        if isinstance(row.get(key), int | float)
    )
    return f"{who}: {verdict}" + (f"; {times}" if times else "")


def _end_orphans(run_dir: Path) -> None:
    """End playbook processes a killed controller left running for this run: ansible-runner
    starts ansible-playbook in a session of its own, so they outlive a SIGKILL of ours."""
    marker = str(run_dir.resolve()).encode() + b"/"
    for proc in Path("/proc").glob("[0-9]*"):
        if int(proc.name) == os.getpid():
            continue
        try:
            argv = (proc / "cmdline").read_bytes()
        except OSError:
            continue
        if b"ansible" in argv and marker in argv:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(int(proc.name), signal.SIGKILL)


def elapsed(start: float) -> float:
    return round(time.monotonic() - start, 3)

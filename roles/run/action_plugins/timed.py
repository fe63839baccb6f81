"""Run one action of this task and time it on the controller's clock: `action` names it (for
instance ansible.builtin.script) and `args` are its arguments. The result is that action's, with
started (epoch seconds) and seconds (its wall time) added, and with `exit_pattern` (a regular
expression with one group) rc_read: the exit code the machine printed on stdout, -1 when none
was found (the command's own status can be lost with the connection). The task's own keywords
(become, timeout, no_log, failed_when) apply as they would to the action alone.

ansible.builtin.raw ignores the task's `environment`; for it, the environment is put in front of
the command (a single command, then) inside the become wrapper, the way a module's run gets it,
so a raw run needs no module on the machine and still hands the agent its keys. It spares a set_fact
task before the action and one after (a worker process each, for every attempt) that would
read the controller's clock around it.

`reattach` (a shell command, optional) is for a run that outlives its connection: when the
connection drops mid-run (ssh exits 255: Ansible's unreachable), the action connects again and
runs `reattach`, which waits on the machine for the run to end and prints its exit code in the
same form. Only a machine that cannot be reached again is unreachable. So an agent that cuts its
own SSH session (kills the session's sshd process) is judged like any other, instead of turning
its attempt into an infrastructure error that is never counted against it; a connection lost to
a passing network fault costs the agent nothing either. The result then says `reattached` and
why the first connection ended."""

import contextlib
import re
import time

from ansible.errors import AnsibleActionFail, AnsibleConnectionFailure
from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):
    def run(self, tmp=None, task_vars=None):
        args = dict(self._task.args)
        name, inner = args.get("action"), args.get("args")
        if not name or not isinstance(inner, dict):
            raise AnsibleActionFail("timed needs an action and its args (a mapping)")
        self._task.args = dict(inner)
        if str(name) in ("ansible.builtin.raw", "raw") and self._task.environment:
            prefix = self._compute_environment_string()
            self._task.environment = []
            if prefix:
                self._task.args["_raw_params"] = f"{prefix} {inner['_raw_params']}"
        action = self._shared_loader_obj.action_loader.get(
            str(name),
            task=self._task,
            connection=self._connection,
            play_context=self._play_context,
            loader=self._loader,
            templar=self._templar,
            shared_loader_obj=self._shared_loader_obj,
        )
        if action is None:
            raise AnsibleActionFail(f"timed: no action {name}")
        started = time.time()
        try:
            result = action.run(task_vars=task_vars)
        except AnsibleConnectionFailure as lost:
            if not args.get("reattach"):
                raise
            result = self._reattach(str(args["reattach"]), lost)
        result["started"] = started
        result["seconds"] = round(time.time() - started, 3)
        if args.get("exit_pattern"):
            found = re.search(str(args["exit_pattern"]), str(result.get("stdout") or ""))
            result["rc_read"] = int(found.group(1)) if found else -1
        return result

    def _reattach(self, command: str, lost: Exception) -> dict:
        """Connect again (a new master connection: the old one died with its session) and wait
        for the run there; a second loss propagates, as a machine that is gone."""
        # A dead master's socket may be half gone; connecting again is what counts.
        with contextlib.suppress(Exception):
            self._connection.reset()
        self._connection.close()
        out = self._low_level_execute_command(command, sudoable=True, executable="/bin/sh")
        return {
            "changed": True,
            "rc": out.get("rc"),
            "stdout": out.get("stdout", ""),
            "stderr": out.get("stderr", ""),
            "reattached": True,
            "connection_lost": str(lost).strip()[-500:],
        }

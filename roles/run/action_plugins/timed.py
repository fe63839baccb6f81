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
read the controller's clock around it."""

import re
import time

from ansible.errors import AnsibleActionFail
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
        result = action.run(task_vars=task_vars)
        result["started"] = started
        result["seconds"] = round(time.time() - started, 3)
        if args.get("exit_pattern"):
            found = re.search(str(args["exit_pattern"]), str(result.get("stdout") or ""))
            result["rc_read"] = int(found.group(1)) if found else -1
        return result

"""The playbook's knock on the package's side door (deploybench/attempt/sidedoor.py): `answer` runs
here, in the Ansible worker that runs the task, on the controller. A `command` task would start a
module wrapper and then a second interpreter that imports the package again, twice per attempt;
this starts neither. The task's arguments are the verb and its mapping; the answer comes back
as the result's `door` (begin) or `verdict` (finish, broken). A harness error fails the task
with its one-line message; the judging verbs also leave their traceback in the attempt folder.

begin also hands the playbook the facts every later play reads (the task, the plan, the agent's
kind and both budgets) as the result's `ansible_facts`: a separate set_fact task would cost the
controller one more worker process per attempt."""

import json
from pathlib import Path

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from deploybench.attempt import sidedoor
from deploybench.errors import DeployBenchError


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        args = dict(self._task.args)
        verb = args.pop("verb", None)
        try:
            # Through JSON: the answer holds plain data only, whatever the task file held.
            answered = json.loads(json.dumps(sidedoor.answer(str(verb), args)))
        except DeployBenchError as exc:
            raise AnsibleActionFail(str(exc)) from None
        result["changed"] = True
        result["door" if verb == "begin" else "verdict"] = answered
        if verb == "begin":
            result["ansible_facts"] = _begin_facts(answered, args)
        return result


def _begin_facts(door, args):
    budget = args.get("agent_seconds")
    if budget in (None, ""):
        budget = door["task"]["agent_minutes"] * 60
    return {
        "task": door["task"],
        "run_door": door,
        "run_agent_kind": door["agent_kind"],
        "run_attempt_dir": str(Path(door["files"]["staging"]).parent),
        "run_agent_seconds": int(budget),
        "run_verify_seconds": int(door["task"]["verify_minutes"] * 60),
        # The CPU validation of a GPU task (deploybench run/validate-references --cpu-only).
        "run_cpu_only": bool(args.get("cpu_only")),
    }

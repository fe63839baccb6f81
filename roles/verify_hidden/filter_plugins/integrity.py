"""The gate before the experiment: the integrity judgment of the tamper scan's raw lines, by the
controller's one judge (deploybench/verify/integrity.py), in-process: no interpreter is started for
it. The verdict judges the same lines again, with the rest of the evidence."""

from deploybench.verify import integrity


def machine_passed(scan: str) -> bool:
    return bool(integrity.judge(str(scan))["passed"])


class FilterModule:
    def filters(self):
        return {"machine_passed": machine_passed}

"""One contract-5 event (docs/design.md, contract 5), as every converter makes it."""

from __future__ import annotations

from typing import Any

OUTPUT_LIMIT = 4000  # characters of a command's output kept in its event (its end)


def event(step: int, t: float, kind: str, **fields: Any) -> dict[str, Any]:
    """An event of `kind` at `step` and time `t`; fields that are None are left out, and the
    output is cut to its last OUTPUT_LIMIT characters."""
    made = {"step": step, "t": round(float(t), 3), "kind": kind}
    made.update({k: v for k, v in fields.items() if v is not None})
    if isinstance(made.get("output"), str):
        made["output"] = made["output"][-OUTPUT_LIMIT:]
    return made

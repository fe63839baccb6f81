"""Backends by name. Cloud backends are imported only when asked for."""

from __future__ import annotations

import importlib

from deploybench.backends.base import Backend, MachineRequest
from deploybench.errors import DeployBenchError

BACKENDS = {
    "local": "deploybench.backends.local:LocalBackend",
    "aws": "deploybench.backends.aws:AwsBackend",
    "gcp": "deploybench.backends.gcp:GcpBackend",
}


def get_backend(name: str) -> Backend:
    target = BACKENDS.get(name)
    if target is None:
        raise DeployBenchError(
            f"unknown backend {name!r}: choose one of {', '.join(sorted(BACKENDS))}"
        )
    module, attr = target.split(":")
    return getattr(importlib.import_module(module), attr)()


__all__ = ["BACKENDS", "Backend", "MachineRequest", "get_backend"]

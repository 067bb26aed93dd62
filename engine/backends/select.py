"""Which backend 'auto' means on this machine.

Until the GPU backends land, 'auto' is the CPU; GPU detection lives here so the CLI, the add-on and
the tests share one answer.
"""

from __future__ import annotations


def available_backends() -> dict[str, str]:
    """Backends that can start here, mapped to a one-line reason or device description."""
    return {"cpu": "always available"}


def choose_backend_name(*, log=print) -> str:
    """Name of the backend 'auto' picks, announced through ``log``."""
    log("auto backend: cpu")
    return "cpu"

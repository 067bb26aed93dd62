"""Importing the engine's heavy dependencies in the background when an interactive Blender starts.

The engine's first use in a session imports numba, llvmlite and scipy with the engine's packing and
scene modules: about 1.3 s on the 2-core machine, during which the window did not respond, in
whichever operator came first (Quick Grains, Add › Mochi Bunny, Pack's confirmation; measured by
``benchmarks/ui_freeze.py``). A daemon thread started at registration imports them while the artist
looks around; an operator that needs one before the thread is done waits only for the rest of that
module's import (Python's import lock is per module). Background sessions (renders, farm bakes) import
what they use when they use it.
"""

from __future__ import annotations

import threading
from importlib import import_module

import bpy

#: The engine modules the first operators import, with numba and scipy behind them.
MODULES = ("engine.packing", "engine.scene", "engine.budget", "engine.looks", "engine.estimate")


def _import_all(package: str) -> None:
    for name in MODULES:
        try:
            import_module(f"{package}.{name}")
        except Exception:  # the operator that needs it reports the failure in its own words
            return


def start_preload() -> threading.Thread | None:
    """Start importing ``MODULES`` in a daemon thread; None in a background session."""
    if bpy.app.background:
        return None
    package = __package__.rsplit(".", 1)[0]  # the extension's package, e.g. bl_ext.user_default.mochi
    thread = threading.Thread(target=_import_all, args=(package,), name="mochi-preload", daemon=True)
    thread.start()
    return thread

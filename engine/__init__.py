"""Mochi engine: sphere DEM with the Mochi paper's collision rules.

Nothing here imports bpy, and GPU libraries (CuPy, optix) are imported only when a GPU backend is
built, so ``import engine`` works on a laptop, on a farm node and inside Blender.

Public nouns (see docs/architecture in README):
    Model      static per-particle arrays and physical settings (engine.model)
    State      time-varying positions, velocities and activity (engine.state)
    Simulation a model, a state and a backend that steps them (engine.simulation)
"""

import os
import sys
from pathlib import Path

__version__ = "0.1.0"


def _numba_cache_folder() -> str:
    """Where numba caches this package's compiled kernels.

    Keyed by the package's import name: the same source files are imported as ``engine`` (pip,
    tests), ``mochi.engine`` (addon/headless.py) and ``bl_ext.<repo>.mochi.engine`` (Blender), and a
    numba cache written under one name fails to load under another. ``MOCHI_NUMBA_CACHE_DIR``
    overrides the base folder (default: the user cache folder).
    """
    base = os.environ.get("MOCHI_NUMBA_CACHE_DIR")
    if not base:
        cache = os.environ.get("LOCALAPPDATA") if sys.platform == "win32" else os.environ.get("XDG_CACHE_HOME")
        base = str(Path(cache or Path.home() / ".cache") / "mochi" / "numba")
    return str(Path(base) / __name__)


def set_numba_cache_folder(folder: str) -> None:
    """Make numba cache the engine's kernels in ``folder`` (call before the kernels are imported:
    numba fixes a kernel's cache folder when the kernel is decorated).

    The Blender extension points it at its user folder, which Blender removes on uninstall.
    """
    # Always set, never 'setdefault': a child process inherits the variable from a parent that may
    # have imported this package under another name.
    os.environ["NUMBA_CACHE_DIR"] = str(folder)
    if "numba" in sys.modules:  # already configured from the environment at its import
        sys.modules["numba"].config.CACHE_DIR = str(folder)


set_numba_cache_folder(_numba_cache_folder())

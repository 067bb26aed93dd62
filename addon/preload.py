"""Importing the engine's heavy dependencies in the background when an interactive Blender starts.

The engine's first use in a session imports numba, llvmlite and scipy with the engine's packing and
scene modules: about 1.3 s on the 2-core machine, during which the window did not respond, in
whichever operator came first (Quick Grains, Add › Mochi Bunny, Pack's confirmation; measured by
``benchmarks/ui_freeze.py``). A daemon thread started at registration imports them while the artist
looks around; an operator that needs one before the thread is done waits only for the rest of that
module's import (Python's import lock is per module). Background sessions (renders, farm bakes) import
what they use when they use it.

The first start after an install is worse: none of those packages has its bytecode yet, and compiling
a module's source holds Python's lock for the whole module, so a thread of Blender's own process that
imports them stops the window for seconds at a time (12 s measured at the first launch after an
install). So when numba's bytecode is missing, the thread first has a child Python import the same
modules (``warm_bytecode``): the child compiles and writes the bytecode with its own lock, on the other
core, and the thread then imports from bytecode; the child also packs a tetrahedron, which compiles the
packing's kernels into numba's cache, so the first Pack neither compiles (a minute under load, its Esc
unanswered) nor stalls the window with numba's compiler holding the lock. First launch of Blender 5.2
in a window under load: the longest freeze 24.2 s before, 4.1 s after (Blender alone: 6.4 s;
docs/benchmarks.md). ``register()`` itself imports none of them
(tests/addon/test_preload.py).
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from importlib import import_module
from pathlib import Path

#: The engine modules the first operators import, with numba and scipy behind them.
MODULES = ("engine.packing", "engine.scene", "engine.budget", "engine.looks", "engine.estimate")
#: Longest wait for the child that writes the bytecode [s] (a cold compile took ~20 s on 2 cores).
WARM_TIMEOUT_S = 300.0
#: The extension's root folder (the package that holds addon/ and engine/).
ROOT = Path(__file__).resolve().parent.parent

#: What the child runs: the extension's folder loaded as a package of the parent's name (numba names
#: its cache files after the module), ``MODULES`` imported, then a tetrahedron packed, which compiles
#: the packing's kernels into numba's cache (the folder NUMBA_CACHE_DIR names, inherited), so that the
#: first Pack loads them instead of compiling for a minute with Python's lock mostly held.
#: argv[1] is the folder, argv[2] the package's name, argv[3:] the modules.
_CHILD_CODE = """
import importlib.machinery, importlib.util, os, sys
import numpy as np
root, name = sys.argv[1], sys.argv[2]
parents = name.split(".")[:-1]  # bl_ext.user_default: empty packages, so that imports through them resolve
for depth in range(1, len(parents) + 1):
    parent = importlib.util.module_from_spec(importlib.machinery.ModuleSpec(".".join(parents[:depth]), None,
                                                                            is_package=True))
    parent.__path__ = []
    sys.modules.setdefault(parent.__name__, parent)
spec = importlib.util.spec_from_file_location(name, root + "/__init__.py", submodule_search_locations=[root])
package = importlib.util.module_from_spec(spec)
sys.modules[name] = package
spec.loader.exec_module(package)
inherited = os.environ.get("NUMBA_CACHE_DIR")  # the parent's folder (its extension's), which the engine's
importlib.import_module(name + ".engine")     # import would replace with its default: put it back
if inherited:
    os.environ["NUMBA_CACHE_DIR"] = inherited
    if "numba" in sys.modules:
        sys.modules["numba"].config.CACHE_DIR = inherited
for module in sys.argv[3:]:
    importlib.import_module(name + "." + module)
corners = np.array([[0.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
faces = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])
importlib.import_module(name + ".engine.packing").pack_mesh(corners, faces, radius=0.04)
"""


def _import_all(package: str) -> None:
    for name in MODULES:
        try:
            import_module(f"{package}.{name}")
        except Exception:  # the operator that needs it reports the failure in its own words
            return


def bytecode_missing(module: str = "numba") -> bool:
    """True when ``module`` is installed but its bytecode is not written yet (the first start after an
    install); False when it is, or when it cannot be told (not found, no source file)."""
    from importlib.util import cache_from_source, find_spec

    try:
        spec = find_spec(module)
    except (ImportError, ValueError):
        return False
    origin = getattr(spec, "origin", None)
    if spec is None or not origin or not origin.endswith(".py"):
        return False
    try:
        return not Path(cache_from_source(origin)).exists()
    except (NotImplementedError, ValueError):
        return False


def child_command(package: str) -> list[str] | None:
    """The command of the child Python that imports ``MODULES`` of ``package`` (the extension's package
    name) and compiles the packing's kernels, or None when this process's ``sys.executable`` is not a
    Python (a Blender whose Python is built in: it would start Blender)."""
    executable = Path(sys.executable or "")
    if not executable.name.lower().startswith("python") or not executable.is_file():
        return None
    return [str(executable), "-c", _CHILD_CODE, str(ROOT), package, *MODULES]


def warm_bytecode(package: str, *, timeout: float = WARM_TIMEOUT_S, env: dict | None = None) -> bool:
    """Import ``MODULES`` of ``package`` in a child Python with this process's module path, which writes
    their bytecode (and numba's, scipy's...) and the packing's compiled kernels to disk without taking
    this process's lock. True when it ran and succeeded."""
    command = child_command(package)
    if command is None:
        return False
    child_env = dict(os.environ if env is None else env)
    child_env["PYTHONPATH"] = os.pathsep.join(path for path in sys.path if path)
    # Reading bytecode works whatever this process's setting; the child is there to write it.
    child_env.pop("PYTHONDONTWRITEBYTECODE", None)
    try:
        result = subprocess.run(command, env=child_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return False
    return result.returncode == 0


def _warm_then_import(package: str) -> None:
    if bytecode_missing():
        warm_bytecode(package)
    _import_all(package)


_thread: list[threading.Thread] = []  # the preload thread of this session, once started


def start_preload() -> threading.Thread | None:
    """Start importing ``MODULES`` in a daemon thread (after a child wrote their bytecode, on the first
    start after an install); None in a background session."""
    import bpy

    if bpy.app.background:
        return None
    package = __package__.rsplit(".", 1)[0]  # the extension's package, e.g. bl_ext.user_default.mochi
    thread = threading.Thread(target=_warm_then_import, args=(package,), name="mochi-preload", daemon=True)
    _thread[:] = [thread]
    thread.start()
    return thread


def preload_running() -> bool:
    """True while the preload thread (and its child) is still at work."""
    return bool(_thread) and _thread[0].is_alive()


def wait_for_preload(should_stop, step: float = 0.1) -> bool:
    """Wait for the preload (a worker thread, before its first packing: the child is compiling the
    packing's kernels on the first start, and compiling them again here would take as long with Esc
    unanswered). ``should_stop()`` is asked every ``step`` seconds. False when it answered True."""
    while preload_running():
        if should_stop():
            return False
        _thread[0].join(step)
    return not should_stop()

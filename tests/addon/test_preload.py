"""The background import of the engine's heavy modules (addon/preload.py): off in background sessions,
and it imports what the first operators need."""

from __future__ import annotations

import sys

import pytest

from .conftest import bpy, mochi_module, needs_bpy_module


def test_preload_imports_the_first_operators_modules(mochi):
    preload = mochi_module("addon.preload")
    package = mochi.__name__
    assert bpy.app.background and preload.start_preload() is None  # renders and farm bakes: no thread
    preload._import_all(package)
    for name in preload.MODULES:
        assert f"{package}.{name}" in sys.modules
    assert "numba" in sys.modules and "scipy" in sys.modules


@needs_bpy_module  # its child imports bpy, which a Blender executable's own Python does not have
def test_registering_imports_neither_numba_nor_scipy(tmp_path):
    """The window's first draw waits for register(): the heavy imports are the preload thread's alone."""
    import json
    import os
    import subprocess

    from .conftest import REPO

    code = f"""
import importlib.util, json, os, sys
import bpy
spec = importlib.util.spec_from_file_location("mochi", {str(REPO / '__init__.py')!r},
                                              submodule_search_locations=[{str(REPO)!r}])
package = importlib.util.module_from_spec(spec)
sys.modules["mochi"] = package
spec.loader.exec_module(package)
package.register()
print("HEAVY", json.dumps(sorted(m for m in ("numba", "llvmlite", "scipy", "trimesh") if m in sys.modules)))
"""
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env)
    line = next((row for row in result.stdout.splitlines() if row.startswith("HEAVY ")), None)
    assert line is not None, result.stdout + result.stderr
    assert json.loads(line[len("HEAVY "):]) == []


def test_the_first_start_writes_the_bytecode_in_a_child(mochi, tmp_path, monkeypatch):
    """With no bytecode written (a fresh install: here an empty bytecode folder), the child Python
    compiles numba's and the engine's modules; after it, nothing is missing."""
    import os

    preload = mochi_module("addon.preload")
    monkeypatch.setattr(sys, "pycache_prefix", str(tmp_path / "bytecode"))
    assert preload.bytecode_missing("numba")
    kernels = tmp_path / "numba"
    env = {**os.environ, "PYTHONPYCACHEPREFIX": str(tmp_path / "bytecode"), "NUMBA_CACHE_DIR": str(kernels)}
    if not preload.warm_bytecode(mochi.__name__, env=env):  # say why: the child's own words
        import subprocess

        child = subprocess.run(preload.child_command(mochi.__name__), capture_output=True, text=True, timeout=600,
                               env={**env, "PYTHONPATH": os.pathsep.join(path for path in sys.path if path)})
        pytest.fail(f"the child failed ({child.returncode}): {child.stderr[-3000:]}")
    assert not preload.bytecode_missing("numba")
    # The packing's kernels compiled into the numba cache folder the extension set for itself (the
    # engine's import in the child would have put them in its default folder).
    cached = {path.name for path in kernels.rglob("*.nbi")}
    assert {"queries._distance_kernel", "queries._winding_kernel", "regions._join_safe_neighbours"} <= \
        {name.rsplit("-", 1)[0] for name in cached}, cached
    written = list((tmp_path / "bytecode").rglob("*.pyc"))
    assert {"fill", "queries", "estimate"} <= {path.name.split(".")[0] for path in written}  # the engine's
    assert any("numba" in path.parts for path in written) and any("scipy" in path.parts for path in written)


def test_no_child_where_the_executable_is_blender(mochi, monkeypatch):
    preload = mochi_module("addon.preload")
    monkeypatch.setattr(sys, "executable", "/usr/bin/blender")
    assert preload.child_command("mochi") is None and preload.warm_bytecode("mochi") is False


def test_a_pack_waits_for_the_preload_and_esc_ends_the_wait(mochi, monkeypatch):
    """The first Pack after an install waits for the child that compiles the packing's kernels (rather
    than compiling them again, unanswering), and Esc ends that wait at once."""
    import threading

    preload = mochi_module("addon.preload")
    release = threading.Event()
    busy = threading.Thread(target=release.wait, daemon=True)
    busy.start()
    monkeypatch.setattr(preload, "_thread", [busy])
    asked = []
    assert preload.preload_running()
    assert preload.wait_for_preload(lambda: asked.append(1) or len(asked) >= 3, step=0.01) is False
    assert len(asked) == 3 and preload.preload_running()  # Esc ended the wait, not the preload

    job = mochi_module("addon.pack_job").PackJob(sources={}, seed=0).start()
    from .conftest import wait_for

    wait_for(lambda: job.progress.stage.startswith("waiting"), timeout=60)
    assert not job.finished and job.progress_line().startswith("Mochi: packing '' (1 of 0): waiting")
    job.request_cancel()
    assert job.join(timeout=60) and job.cancelled
    release.set()
    busy.join(60)
    assert preload.wait_for_preload(lambda: False) is True

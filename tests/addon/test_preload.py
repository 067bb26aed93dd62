"""The background import of the engine's heavy modules (addon/preload.py): off in background sessions,
and it imports what the first operators need."""

from __future__ import annotations

import sys

from .conftest import bpy, mochi_module


def test_preload_imports_the_first_operators_modules(mochi):
    preload = mochi_module("addon.preload")
    package = mochi.__name__
    assert bpy.app.background and preload.start_preload() is None  # renders and farm bakes: no thread
    preload._import_all(package)
    for name in preload.MODULES:
        assert f"{package}.{name}" in sys.modules
    assert "numba" in sys.modules and "scipy" in sys.modules

"""Add-on preferences: backends found here, and the install command for a missing GPU backend."""

from __future__ import annotations

import sys
from pathlib import Path

from .conftest import PACKAGE, bpy, mochi_module


def test_preferences_are_registered_and_list_the_backends(mochi):
    prefs = bpy.context.preferences.addons[PACKAGE].preferences
    assert type(prefs).__name__ == "MochiPreferences"
    select = mochi_module("engine.backends.select")
    available, unavailable = select.available_backends(), select.unavailable_backends()
    assert "cpu" in available
    assert set(available) | set(unavailable) == {"cpu", "cuda", "optix"}


def test_install_command_targets_the_extension_user_folder(mochi):
    preferences = mochi_module("addon.preferences")
    folder = preferences.extra_site_packages()
    assert folder is not None and Path(folder).is_dir()
    assert folder in sys.path  # the installed packages are importable after a restart
    command = preferences.install_command("optix")
    assert command.startswith(f'"{sys.executable}" -m pip install --target "{folder}" ')
    assert command.endswith("cupy-cuda12x pyoptix-contrib")
    # (Background Blender has no system clipboard, so only the operator's result is checked.)
    assert bpy.ops.mochi.copy_install_command(backend="cuda") == {"FINISHED"}
    assert preferences.missing_cpu_modules() == []  # this environment has the CPU path's packages

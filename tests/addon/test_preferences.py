"""Add-on preferences: backends found here, the install command for a missing GPU backend, and the button
that installs slangpy for the ray-traced backend (its command is checked; nothing is downloaded here)."""

from __future__ import annotations

import sys
import tomllib
import types
from pathlib import Path

from .conftest import PACKAGE, REPO, bpy, mochi_module

RT_LABEL = "GPU, ray traced (any vendor)"


def test_preferences_are_registered_and_list_the_backends(mochi):
    prefs = bpy.context.preferences.addons[PACKAGE].preferences
    assert type(prefs).__name__ == "MochiPreferences"
    select = mochi_module("engine.backends.select")
    available, unavailable = select.available_backends(), select.unavailable_backends()
    assert "cpu" in available
    assert set(available) | set(unavailable) == {"cpu", "cuda", "optix", "rt"}


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


def test_the_slangpy_install_runs_blenders_python_into_the_user_folder(mochi):
    """The command the button runs: Blender's Python, pip, the extension's own folder, and the slangpy of
    pyproject.toml's rt extra (one version everywhere)."""
    preferences = mochi_module("addon.preferences")
    folder = preferences.extra_site_packages()
    command = preferences.slangpy_install_command(folder)
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    (slangpy,) = extras["rt"]
    head = [sys.executable, "-m", "pip", "install", "--upgrade", "--no-input", "--disable-pip-version-check",
            "--no-deps", "--target", folder, slangpy]
    assert command[:len(head)] == head
    # Only what Blender's Python lacks of slangpy's own dependencies; never numpy, which Blender ships.
    import importlib.util

    assert command[len(head):] == [name for name in ("typing_extensions",) if importlib.util.find_spec(name) is None]
    assert not any(word.startswith("numpy") for word in command)
    assert preferences.slangpy_label() == slangpy.replace("==", " ")


def test_an_install_reports_its_end_in_one_sentence(mochi, tmp_path):
    """The background install, run on a local command (no network): its status, success and failure."""
    install = mochi_module("addon.package_install")
    done = install.PackageInstall([sys.executable, "-c", "print('Collecting slangpy'); print('Installed')"],
                                  "slangpy 0.43.1").start()
    assert done.join(60) and done.error is None and done.status == "Installed"
    failed = install.PackageInstall([sys.executable, "-c", "import sys; print('ERROR: No matching distribution "
                                     "found for slangpy==0.43.1'); sys.exit(1)"], "slangpy 0.43.1").start()
    assert failed.join(60)
    assert failed.error == ("Installing slangpy 0.43.1 failed (ERROR: No matching distribution found for "
                            "slangpy==0.43.1).")
    missing = install.PackageInstall([str(tmp_path / "no-python"), "-m", "pip"], "slangpy 0.43.1").start()
    assert missing.join(60) and missing.error.startswith("Installing slangpy 0.43.1 could not start ")


class _Layout:
    """Records what a draw asks for (UILayout cannot be made outside a draw)."""

    def __init__(self, log):
        self.log = log

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.log.append((name, args, kwargs))
            if name == "operator":  # its properties are set on what it returns
                return types.SimpleNamespace()
            return _Layout(self.log) if name in {"row", "column", "box", "split"} else None
        return call


class _Drawn:
    """The preferences' ``self`` in a draw: its layout, and the real preferences' properties."""

    def __init__(self, prefs, layout):
        self.prefs, self.layout = prefs, layout

    def __getattr__(self, name):
        return getattr(self.prefs, name)


def test_the_preferences_draw_the_rt_backend(mochi):
    prefs = bpy.context.preferences.addons[PACKAGE].preferences
    log = []
    type(prefs).draw(_Drawn(prefs, _Layout(log)), bpy.context)
    labels = [entry[2].get("text", "") for entry in log if entry[0] == "label"]
    probe = mochi_module("engine.backends.select").probe_rt()
    assert f"rt: {probe.text}" in labels
    operators = [(entry[1][0], entry[2].get("text")) for entry in log if entry[0] == "operator"]
    import importlib.util

    if importlib.util.find_spec("slangpy") is None:  # the button, with the download size
        assert ("mochi.install_slangpy", "Install slangpy (~92 MB download)") in operators
    else:
        assert not any(name == "mochi.install_slangpy" for name, _ in operators)


def test_the_backend_menu_has_the_ray_traced_gpu(mochi, empty_scene):
    scene_module = mochi_module("addon.properties.scene")
    probe = mochi_module("engine.backends.select").probe_rt()
    items = {item[0]: item for item in scene_module.backend_items(None, bpy.context)}
    assert list(items) == ["auto", "cpu", "cuda", "optix", "rt"]
    rt = items["rt"]
    if not probe.available:  # why, and the one thing to do
        assert rt[1] == f"{RT_LABEL} (not available)"
        assert rt[2] == f"{RT_LABEL} backend, not available here: " + " ".join(
            mochi_module("addon.backend_probe").unavailable_sentence("rt", probe.text))
        return
    elif probe.hardware:
        assert rt[1] == RT_LABEL
    else:  # lavapipe: listed, marked software, and not among what auto may pick
        assert rt[1] == f"{RT_LABEL} (software)" and "software" in rt[2]
        assert RT_LABEL not in items["auto"][2]
    assert rt[2].startswith(f"{RT_LABEL} backend: ")
    empty_scene.mochi.backend = "rt"
    assert empty_scene.mochi.backend == "rt"

"""Fixtures of the add-on tests: the extension built and installed as a user would, and clean scenes.

These tests use the real Blender: the bpy module (``python -m pytest -p no:pytest-blender tests/addon``)
or a Blender executable through pytest-blender (``pytest --blender-executable /path/to/blender
tests/addon``). A process holds one Blender session, so the tests share it: every test starts from an
empty factory scene (``wm.read_homefile(use_empty=True, use_factory_startup=True)``, which keeps the
preferences and so the enabled extension; ``wm.read_factory_settings`` would disable it).

With the bpy module, Blender's user folders are redirected to a temporary folder
(BLENDER_USER_RESOURCES) before bpy is imported, so the tests never touch the real user configuration.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
if "bpy" not in sys.modules:  # bpy module: keep Blender's user folders out of $HOME
    os.environ.setdefault("BLENDER_USER_RESOURCES", tempfile.mkdtemp(prefix="mochi-blender-user-"))

bpy = pytest.importorskip("bpy")

#: True inside a Blender executable (pytest-blender), False in the bpy module.
INSIDE_BLENDER = bool(bpy.app.binary_path)
#: For tests that run the engine's command line or the bpy module in a child Python: a Blender
#: executable's Python has neither (its tier tests the installed extension instead).
needs_bpy_module = pytest.mark.skipif(INSIDE_BLENDER, reason="runs the engine CLI or the bpy module in a "
                                      "child Python")

#: Blender's extension tool, shipped with Blender and in the bpy wheel.
EXTENSION_TOOL = Path(bpy.utils.system_resource("SCRIPTS")) / "addons_core" / "bl_pkg" / "cli" / "blender_ext.py"
REPOSITORY = "user_default"
PACKAGE = f"bl_ext.{REPOSITORY}.mochi"


def pytest_collection_modifyitems(config, items):
    here = Path(__file__).parent
    for item in items:
        if here in Path(str(item.fspath)).parents:
            item.add_marker(pytest.mark.blender)


def python_for_tools() -> str:
    """A Python that can run Blender's scripts: this one, or Blender's own inside a Blender executable."""
    return sys.executable


def run_extension_tool(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([python_for_tools(), str(EXTENSION_TOOL), *args], capture_output=True, text=True,
                          timeout=120)


#: A Blender executable's Python has none of the engine's dependencies: there the tests install the zip
#: with the bundled wheels that scripts/test.sh built for its Python (scripts/build_extension.py).
PREBUILT_ZIP = os.environ.get("MOCHI_EXTENSION_ZIP")


@pytest.fixture(scope="session")
def extension_zip(tmp_path_factory) -> Path:
    """The extension built by Blender's own tool from the repository (or $MOCHI_EXTENSION_ZIP)."""
    if PREBUILT_ZIP:
        return Path(PREBUILT_ZIP)
    out = tmp_path_factory.mktemp("dist")
    result = run_extension_tool("build", "--source-dir", str(REPO), "--output-dir", str(out))
    assert result.returncode == 0, result.stdout + result.stderr
    (zip_path,) = out.glob("mochi-*.zip")
    return zip_path


@pytest.fixture(scope="session")
def mochi(extension_zip):
    """The extension installed from its zip and enabled, the way a user does; its package module."""
    result = bpy.ops.extensions.package_install_files(filepath=str(extension_zip), repo=REPOSITORY,
                                                      enable_on_install=True, overwrite=True)
    assert result == {"FINISHED"}
    assert PACKAGE in bpy.context.preferences.addons
    yield sys.modules[PACKAGE]
    from importlib import import_module

    import_module(f"{PACKAGE}.addon.bake_job").stop_all()
    bpy.ops.preferences.addon_disable(module=PACKAGE)
    bpy.ops.extensions.package_uninstall(repo_directory=bpy.utils.user_resource("EXTENSIONS", path=REPOSITORY),
                                         pkg_id="mochi")


def mochi_module(name: str):
    """A submodule of the installed extension, e.g. mochi_module('addon.bake_monitor')."""
    from importlib import import_module

    return import_module(f"{PACKAGE}.{name}")


@pytest.fixture
def empty_scene(mochi):
    """A fresh, empty factory scene with the extension still enabled."""
    mochi_module("addon.bake_job").stop_all()
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    return bpy.context.scene


def add_source(kind: str, *, location, radius: float, size: float = 1.0):
    """Add a primitive ('monkey' or 'cube') as a particle source and return it."""
    if kind == "monkey":
        bpy.ops.mesh.primitive_monkey_add(size=size, location=location)
    else:
        bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.mochi.role = "SOURCE"
    obj.mochi.radius = radius
    return obj


def add_domain(*, size: float = 3.0, location=(0.0, 0.0, 1.5)):
    bpy.ops.mesh.primitive_cube_add(size=size, location=location)
    obj = bpy.context.object
    obj.name = "Domain"
    obj.mochi.role = "DOMAIN"
    return obj


@pytest.fixture
def small_scene(empty_scene, tmp_path):
    """Suzanne and a cube above the floor of a 3 m box: about 150 grains, saved as tmp/scene.blend.

    Steps are few (20 per frame) so that a frame takes a fraction of a second on two cores.
    """
    scene = empty_scene
    add_source("monkey", location=(-0.6, 0.0, 1.2), radius=0.12, size=1.0)
    add_source("cube", location=(0.7, 0.0, 1.0), radius=0.1, size=0.6)
    add_domain()
    s = scene.mochi
    s.timestep_mode = "SUBSTEPS"
    s.substeps = 20
    # 20 steps a frame resolve a stiffness of 6e4 N/m for these grains (5 steps a collision); 'auto'
    # would be refused, since the stiffest spring 20 steps resolve lets them overlap 100%.
    s.use_auto_stiffness, s.stiffness = False, 6e4
    s.frame_start, s.frame_end = 1, 4
    s.backend = "cpu"
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "scene.blend"))
    return scene


def select_only(*objects):
    bpy.ops.object.select_all(action="DESELECT")
    for obj in objects:
        obj.select_set(True)
    if objects:
        bpy.context.view_layer.objects.active = objects[0]


def wait_for(predicate, timeout: float = 120.0, step: float = 0.05):
    """Poll ``predicate`` until true (as the modal operator's timer does); fails after ``timeout`` s."""
    end = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < end, "timed out"
        time.sleep(step)


def scene_state() -> dict:
    """A fingerprint of the file's data: objects, meshes, node groups, materials and the Mochi settings."""
    scene = bpy.context.scene
    return {
        "objects": sorted(o.name for o in bpy.data.objects),
        "meshes": sorted(m.name for m in bpy.data.meshes),
        "node_groups": sorted(g.name for g in bpy.data.node_groups),
        "materials": sorted(m.name for m in bpy.data.materials),
        # Hidden bookkeeping (the scene's bake owner token, given at its first bake) is not a setting.
        "settings": {p.identifier: str(getattr(scene.mochi, p.identifier)) for p in scene.mochi.bl_rna.properties
                     if p.identifier not in ("rna_type", "name") and not p.is_hidden},
    }


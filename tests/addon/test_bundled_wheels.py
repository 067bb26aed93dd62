"""The self-contained extension: the linux-x64 zip works in a Blender that has nothing of ours.

A fresh virtual environment of this Python gets this line's bpy module (and with it the numpy Blender
uses) and nothing else:
no numba, llvmlite, scipy, trimesh or plyfile. There the zip is installed the way a user does
(``extensions.package_install_files``, which unpacks the bundled wheels into Blender's extension
site-packages when the extension is enabled), a cube is packed with the Pack operator and two frames
are baked through the handler of ``blender -b scene.blend -c mochi bake``. Disabling and uninstalling
must then leave no trace in Blender's user folder, and a new Blender session must not find the wheels'
packages any more.

Runs on every bpy-module line (4.5 and 5.0 on Python 3.11, 5.2 on 3.13) with that line's zip. Skipped
inside a Blender executable (tests/blender_executable installs the zip there), on a host other than
Linux x86-64, or when the wheels or bpy cannot be downloaded (no network and no pip cache).
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from .conftest import EXTENSION_TOOL, REPO, bpy

pytestmark = [pytest.mark.blender, pytest.mark.slow,
              pytest.mark.skipif(bool(bpy.app.binary_path), reason="needs the bpy module in a fresh venv")]

sys.path.insert(0, str(REPO / "scripts"))
build_extension = importlib.import_module("build_extension")
fetch_wheels = importlib.import_module("fetch_wheels")

PLATFORM = "linux-x64"
#: This line's Python and bpy: the zip and the fresh environment match the Blender under test.
PYTHON = f"{sys.version_info.major}.{sys.version_info.minor}"
BPY = "bpy==" + ".".join(map(str, bpy.app.version))
#: The bundled distributions; each installs a module of the same name.
BUNDLED = ("filelock", "llvmlite", "msgspec", "numba", "plyfile", "scipy", "tomli_w", "trimesh")
PACKAGE = "bl_ext.user_default.mochi"


@pytest.fixture(scope="module")
def linux_zip(tmp_path_factory) -> Path:
    """The linux-x64 extension zip, built and validated by scripts/build_extension.py."""
    if (sys.platform, platform.machine()) != ("linux", "x86_64"):
        pytest.skip("the linux-x64 zip installs only on Linux x86-64")
    try:
        fetch_wheels.fetch(PYTHON, PLATFORM, quiet=True)
    except RuntimeError as exc:
        pytest.skip(f"cannot download the wheels: {exc}")
    (path,) = build_extension.build(python=PYTHON, platforms=[PLATFORM], fetch_missing=False,
                                    output_dir=tmp_path_factory.mktemp("dist"), tool=EXTENSION_TOOL)
    return path


def clean_environment(**extra: str) -> dict[str, str]:
    """This process's environment without anything that would let a child see our packages."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "NUMBA_CACHE_DIR", "BLENDER_USER_RESOURCES")}
    env["PYTHONNOUSERSITE"] = "1"  # ~/.local/lib/pythonX.Y must not leak in either
    env.update(extra)
    return env


@pytest.fixture(scope="module")
def fresh_python(tmp_path_factory) -> Path:
    """The python of a new virtual environment holding this line's bpy and its own requirements only."""
    base_python = getattr(sys, "_base_executable", None) or shutil.which(f"python{PYTHON}")
    if base_python is None:
        pytest.skip(f"python{PYTHON} (the Python of {BPY}) is not available")
    venv = tmp_path_factory.mktemp("fresh") / "venv"
    subprocess.run([base_python, "-m", "venv", "--without-pip", str(venv)], check=True, env=clean_environment())
    python = venv / "bin" / "python"
    # This environment's pip installs into the new one: it shares the pip cache that scripts/setup.sh
    # filled, so bpy is unpacked rather than downloaded again.
    result = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install",
                             "--disable-pip-version-check", "--quiet", BPY],
                            capture_output=True, text=True, timeout=900, env=clean_environment())
    if result.returncode != 0:
        pytest.skip(f"cannot install {BPY} into a fresh virtual environment: {result.stderr.strip()[-500:]}")
    return python


def run_fresh(python: Path, script: str, *args: str, user: Path, cache: Path, timeout: float = 600):
    """Run ``script`` in the fresh environment with Blender's user folder and the XDG cache redirected."""
    return subprocess.run([str(python), "-c", textwrap.dedent(script), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=user.parent,
                          env=clean_environment(BLENDER_USER_RESOURCES=str(user), XDG_CACHE_HOME=str(cache)))


FIND_MODULES = """
    import importlib.util, json, sys
    import bpy  # adds Blender's extension site-packages to sys.path when it exists
    print(json.dumps({name: getattr(importlib.util.find_spec(name), "origin", None) for name in sys.argv[1:]}))
"""

INSTALL_PACK_BAKE_UNINSTALL = """
    import importlib, json, os, sys
    from pathlib import Path
    import bpy

    zip_path, work, package = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    report = {}
    repo_directory = bpy.utils.user_resource("EXTENSIONS", path="user_default")
    # As Preferences > Get Extensions > Install from Disk does.
    assert bpy.ops.extensions.package_install_files(filepath=str(zip_path), repo="user_default",
                                                    enable_on_install=True, overwrite=True) == {"FINISHED"}
    report["enabled"] = package in bpy.context.preferences.addons
    report["extension_dir"] = os.path.join(repo_directory, "mochi")

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_cube_add(size=0.6, location=(0.0, 0.0, 1.0))
    cube = bpy.context.object
    cube.mochi.role = "SOURCE"
    cube.mochi.radius = 0.1
    bpy.ops.mesh.primitive_cube_add(size=3.0, location=(0.0, 0.0, 1.5))
    domain = bpy.context.object
    domain.mochi.role = "DOMAIN"
    bpy.ops.object.select_all(action="DESELECT")
    cube.select_set(True)
    bpy.context.view_layer.objects.active = cube
    report["pack"] = sorted(bpy.ops.mochi.pack())
    report["packed"] = len(cube.mochi.pack_preview.data.vertices)

    s = scene.mochi
    s.timestep_mode, s.substeps, s.backend = "SUBSTEPS", 20, "cpu"
    s.use_auto_stiffness, s.stiffness = False, 6e4  # what 20 steps a frame resolve for these grains
    s.frame_start, s.frame_end = 1, 2
    bpy.ops.wm.save_as_mainfile(filepath=str(work / "scene.blend"))
    # What `blender -b scene.blend -c mochi bake` runs.
    cli = importlib.import_module(package + ".addon.cli")
    report["bake_status"] = cli.cli_command(["bake", "--frames", "2", "--backend", "cpu"])
    report["modules"] = {name: sys.modules[name].__file__
                         for name in ("numba", "llvmlite", "scipy", "plyfile", "filelock", "msgspec",
                                      "numpy") if name in sys.modules}
    import trimesh  # lazily imported by the engine (mesh files): it must load from the bundle too
    report["modules"]["trimesh"] = trimesh.__file__
    import tomli_w  # lazily imported when a scene is saved as a preset
    report["modules"]["tomli_w"] = tomli_w.__file__

    bpy.ops.preferences.addon_disable(module=package)
    bpy.ops.extensions.package_uninstall(repo_directory=repo_directory, pkg_id="mochi")
    report["enabled_after"] = package in bpy.context.preferences.addons
    print("REPORT " + json.dumps(report))
"""


def test_linux_zip_bundles_the_cpu_dependencies(linux_zip):
    names = zipfile.ZipFile(linux_zip).namelist()
    wheels = sorted(Path(n).name.split("-")[0] for n in names if n.startswith("wheels/"))
    assert wheels == sorted(BUNDLED)  # and never numpy: Blender's own must be used
    manifest = zipfile.ZipFile(linux_zip).read("blender_manifest.toml").decode()
    assert 'platforms = ["linux-x64"]' in manifest
    result = subprocess.run([sys.executable, str(EXTENSION_TOOL), "validate", str(linux_zip)],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_fresh_blender_installs_packs_bakes_and_uninstalls(linux_zip, fresh_python, tmp_path):
    user, cache, work = tmp_path / "blender-user", tmp_path / "xdg-cache", tmp_path / "work"
    work.mkdir()
    modules = list(BUNDLED)

    before = run_fresh(fresh_python, FIND_MODULES, *modules, "numpy", user=user, cache=cache)
    assert before.returncode == 0, before.stderr[-3000:]
    found = json.loads(before.stdout.splitlines()[-1])
    assert {m: found[m] for m in modules} == dict.fromkeys(modules)  # nothing of ours in there
    blender_numpy = found["numpy"]
    assert blender_numpy and str(fresh_python.parent.parent) in blender_numpy

    result = run_fresh(fresh_python, INSTALL_PACK_BAKE_UNINSTALL, str(linux_zip), str(work), PACKAGE,
                       user=user, cache=cache)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(next(l for l in result.stdout.splitlines() if l.startswith("REPORT "))[7:])
    assert report["enabled"] and report["pack"] == ["FINISHED"] and report["packed"] > 20
    assert report["bake_status"] == 0, result.stdout[-3000:] + result.stderr[-3000:]
    # numba, scipy... came from the unpacked wheels in Blender's user folder; numpy stayed Blender's.
    extension_site = user / "extensions" / ".local"
    for name in modules:
        assert Path(report["modules"][name]).is_relative_to(extension_site), report["modules"]
    assert report["modules"]["numpy"] == blender_numpy

    # The two baked frames exist and parse (read here, with this environment's plyfile).
    from engine.ply import read_particles

    frames = sorted((work / "mochi_scene_Scene").glob("frame_*.ply"))  # //mochi_<file>_<scene>
    assert [p.name for p in frames] == ["frame_0001.ply", "frame_0002.ply"]
    (first, first_radius, _), (last, last_radius, last_velocity) = (read_particles(p) for p in frames)
    assert len(first_radius) == len(last_radius) == report["packed"]  # checks NaNs and radii as it reads
    assert last[:, 2].mean() < first[:, 2].mean() and (last_velocity[:, 2] < 0).any()  # falling

    # Disabled and uninstalled: the extension's folder and its wheels' packages are gone...
    assert not report["enabled_after"]
    assert not Path(report["extension_dir"]).exists()
    leftovers = [str(p.relative_to(user)) for p in user.rglob("*")
                 if p.name.split("-")[0].split(".")[0] in (*modules, "mochi")]
    assert leftovers == []
    # numba compiled into the extension's user folder (removed with it), never into ~/.cache.
    assert not list(cache.rglob("*.nbi")), "numba cache written outside Blender's extension folders"
    # ...and a new Blender session cannot import them.
    after = run_fresh(fresh_python, FIND_MODULES, *modules, user=user, cache=cache)
    assert after.returncode == 0, after.stderr[-3000:]
    assert json.loads(after.stdout.splitlines()[-1]) == dict.fromkeys(modules)


def test_requirement_check_names_a_missing_wheel(linux_zip):
    wheels = fetch_wheels.find_wheels(PYTHON, PLATFORM)
    assert fetch_wheels.requirement_problems(wheels, PYTHON, PLATFORM) == []
    without_llvmlite = [w for w in wheels if not w.name.startswith("llvmlite-")]
    (problem,) = fetch_wheels.requirement_problems(without_llvmlite, PYTHON, PLATFORM)
    assert problem.startswith("numba-") and "llvmlite" in problem and "not bundled" in problem

"""End to end in a real Blender executable, the way a user and a render farm run it.

Runs only inside a Blender executable (``pytest --blender-executable BLENDER tests/addon``, which
scripts/test.sh does with the Blender of scripts/provision_blender.sh and the zip it built for that
Blender's Python, $MOCHI_EXTENSION_ZIP). Every step is a new Blender process started from its command
line, with its own user folder (BLENDER_USER_RESOURCES):

1. ``blender --command extension install-file -r user_default -e ZIP`` installs and enables the zip;
2. a script saves a .blend with a particle source, a domain box and a collider;
3. ``blender -b scene.blend -c mochi bake`` bakes it and saves its playback object;
4. ``blender -b scene.blend -E CYCLES|BLENDER_EEVEE -f 4`` renders the grains (checked in the pixels);
5. the same render in a Blender that never had the extension (the farm case) and after uninstalling;
6. a Blender without numpy enables and disables the extension: one sentence, no traceback;
7. under Xvfb, the Bake button's operator runs in Blender's event loop, is cancelled with a real Esc
   key event and resumed (tests/addon/ui_bake_button.py drives the window).
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import numpy as np
import pytest

from .conftest import PREBUILT_ZIP, bpy

INSIDE_BLENDER = bool(bpy.app.binary_path)
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not INSIDE_BLENDER, reason="needs a Blender executable (pytest --blender-executable)"),
    pytest.mark.skipif(not PREBUILT_ZIP, reason="needs $MOCHI_EXTENSION_ZIP, the zip for this Blender's Python"),
]

FRAMES = 4
#: The grain material's base colour (addon/playback.py grain_material): orange, unlike anything else here.
GRAIN_RGB = (0.8, 0.55, 0.35)

MAKE_SCENE = """
    import sys
    import bpy
    from math import radians

    path, frames, substeps, radius = sys.argv[sys.argv.index("--") + 1:]
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene

    bpy.ops.mesh.primitive_cube_add(size=0.7, location=(0.0, 0.0, 2.0))
    source = bpy.context.object
    source.name = "Source"
    source.mochi.role, source.mochi.radius = "SOURCE", float(radius)
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(0.0, 0.0, 0.9), rotation=(radians(15), 0.0, 0.0))
    ramp = bpy.context.object
    ramp.name = "Ramp"
    ramp.scale = (1.6, 1.6, 0.1)
    ramp.mochi.role = "COLLIDER"
    bpy.ops.mesh.primitive_cube_add(size=3.0, location=(0.0, 0.0, 1.5))
    domain = bpy.context.object
    domain.name = "Domain"
    domain.mochi.role = "DOMAIN"
    domain.hide_render = True
    source.hide_render = True  # the grains render, not the mesh they were packed from

    camera = bpy.data.objects.new("Camera", bpy.data.cameras.new("Camera"))
    scene.collection.objects.link(camera)
    camera.location, camera.rotation_euler = (0.0, -6.5, 1.6), (radians(88), 0.0, 0.0)
    scene.camera = camera
    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    scene.collection.objects.link(sun)
    sun.rotation_euler = (radians(40), radians(10), radians(30))
    sun.data.energy = 3.0

    s = scene.mochi
    s.timestep_mode, s.substeps, s.backend = "SUBSTEPS", int(substeps), "cpu"
    if int(substeps) < 100:
        # A few steps a frame resolve a soft spring only; 'auto' would be refused (the stiffest spring
        # 20 steps resolve lets these grains overlap far more than 10%).
        s.use_auto_stiffness, s.stiffness = False, 2e4
    s.frame_start, s.frame_end = 1, int(frames)
    render = scene.render
    render.resolution_x, render.resolution_y, render.resolution_percentage = 160, 120, 100
    render.image_settings.file_format = "PNG"
    scene.cycles.samples, scene.cycles.use_denoising, scene.cycles.device = 8, False, "CPU"
    bpy.ops.wm.save_as_mainfile(filepath=path)
"""


#: Shell script run in a new mount namespace: lay a tmpfs over the folder "$0" holding the package "$1"
#: and bind every entry of the folder back except the package's own (and its *.dist-info), then run "$@".
WITHOUT_PACKAGE = """
folder=$0; package=$1; shift
original=$(mktemp -d) && mount --bind "$folder" "$original" && mount -t tmpfs none "$folder" || exit 97
for entry in "$original"/* "$original"/.[!.]*; do
    [ -e "$entry" ] || continue
    name=${entry##*/}
    case $name in "$package"|"$package"-*) continue ;; esac
    if [ -d "$entry" ]; then mkdir "$folder/$name"; else : >"$folder/$name"; fi
    mount --bind "$entry" "$folder/$name" || exit 97
done
exec "$@"
"""


def blender(*args: str, user: Path, timeout: float = 600, without: str | None = None) -> subprocess.CompletedProcess:
    """Run this Blender executable with ``args`` and the user folder ``user``.

    ``without``: a package (e.g. numpy) taken out of its site-packages folder for that process alone
    (root only: a private mount namespace), so that Blender runs as a build without it would.
    """
    command = [bpy.app.binary_path, *args]
    env = {**os.environ, "BLENDER_USER_RESOURCES": str(user)}
    if without is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    folder = str(Path(importlib.util.find_spec(without).origin).parent.parent)
    # Inside provision_blender.sh's chroot "/" is no mount point, so propagation cannot be set there;
    # that chroot already lives in a private mount namespace, so the mounts stay in this process anyway.
    for propagation in ("private", "unchanged"):
        result = subprocess.run(["unshare", "--mount", "--propagation", propagation, "sh", "-c",
                                 WITHOUT_PACKAGE, folder, without, *command],
                                capture_output=True, text=True, timeout=timeout, env=env)
        if "cannot change root filesystem propagation" not in result.stderr:
            break
    assert result.returncode != 97, result.stderr
    return result


def ok(result: subprocess.CompletedProcess) -> str:
    """Both streams of a run that must have succeeded without a traceback."""
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    return output


def png_pixels(path: Path) -> np.ndarray:
    """A PNG's pixels as read by Blender, shape (pixel_count, channels), values 0-1."""
    image = bpy.data.images.load(str(path))
    try:
        channels = image.channels
        pixels = np.empty(image.size[0] * image.size[1] * channels, np.float32)
        image.pixels.foreach_get(pixels)
    finally:
        bpy.data.images.remove(image)
    return pixels.reshape(-1, channels)


def grain_pixel_fraction(path: Path) -> float:
    """The fraction of a PNG's pixels of the grains' hue (orange: red clearly above blue)."""
    red, green, blue = png_pixels(path)[:, :3].T
    return float(np.mean((red > 0.15) & (red > 1.3 * blue) & (green > 1.1 * blue)))


@pytest.fixture(scope="module")
def installed_user(tmp_path_factory) -> Path:
    """A user folder where the command line installed and enabled the zip (shared: numba compiles once)."""
    user = tmp_path_factory.mktemp("user")
    ok(blender("--command", "extension", "install-file", "-r", "user_default", "-e", PREBUILT_ZIP, user=user))
    return user


def saved_scene(user: Path, work: Path, *, frames: int, substeps: int, radius: float) -> Path:
    """work/scene.blend made by MAKE_SCENE in a Blender with the extension."""
    scene = work / "scene.blend"
    ok(blender("-b", "--python-exit-code", "1", "--python-expr", textwrap.dedent(MAKE_SCENE), "--",
               str(scene), str(frames), str(substeps), str(radius), user=user))
    return scene


@pytest.fixture(scope="module")
def baked(installed_user, tmp_path_factory):
    """A .blend baked by `blender -b scene.blend -c mochi bake` (the run is checked by the tests)."""
    work = tmp_path_factory.mktemp("work")
    scene = saved_scene(installed_user, work, frames=FRAMES, substeps=20, radius=0.07)
    bake = blender("-b", str(scene), "-c", "mochi", "bake", user=installed_user)
    return installed_user, work, scene, bake


def render(scene: Path, engine: str, out: Path, *, user: Path) -> Path:
    result = blender("-b", str(scene), "-E", engine, "-o", str(out / f"{engine}_#"), "-f", str(FRAMES), user=user)
    ok(result)
    image = out / f"{engine}_{FRAMES}.png"
    assert image.is_file(), result.stdout[-2000:]
    return image


def test_installed_zip_is_enabled_in_a_new_session(baked):
    user = baked[0]
    result = ok(blender("-b", "--python-exit-code", "1", "--python-expr",
                        "import bpy; assert 'bl_ext.user_default.mochi' in bpy.context.preferences.addons; "
                        "assert hasattr(bpy.types.Scene, 'mochi'); print('MOCHI ENABLED')", user=user))
    assert "MOCHI ENABLED" in result


def test_saved_blend_bakes_from_the_command_line(baked):
    _, work, _, bake = baked
    output = ok(bake)
    written = [line for line in output.splitlines() if line.startswith("Mochi: frame")]
    assert [line.split()[2] for line in written] == [str(f) for f in range(1, FRAMES + 1)]
    assert f"mochi: Baked {FRAMES} frames" in output
    frames = sorted((work / "mochi_scene_Scene").glob("frame_*.ply"))
    assert [p.name for p in frames] == [f"frame_{f:04d}.ply" for f in range(1, FRAMES + 1)]


@pytest.mark.parametrize("engine", ["CYCLES", "BLENDER_EEVEE"])
def test_playback_renders_the_grains(baked, engine, tmp_path):
    user, _, scene, bake = baked
    ok(bake)
    image = render(scene, engine, tmp_path, user=user)
    assert grain_pixel_fraction(image) > 0.01  # a pile of grains, not an empty frame


def test_farm_renders_the_grains_without_the_extension(baked, tmp_path_factory, tmp_path):
    user, _, scene, bake = baked
    ok(bake)
    with_extension = render(scene, "CYCLES", tmp_path / "with", user=user)
    never_had_it = render(scene, "CYCLES", tmp_path / "farm", user=tmp_path_factory.mktemp("farm-user"))
    assert grain_pixel_fraction(never_had_it) > 0.01
    assert abs(grain_pixel_fraction(never_had_it) - grain_pixel_fraction(with_extension)) < 0.002

    uninstalled = tmp_path_factory.mktemp("uninstalled-user")
    shutil.copytree(user, uninstalled, dirs_exist_ok=True)
    ok(blender("--command", "extension", "remove", "user_default.mochi", user=uninstalled))
    assert not (uninstalled / "extensions" / "user_default" / "mochi").exists()
    after_uninstall = render(scene, "CYCLES", tmp_path / "uninstalled", user=uninstalled)
    assert abs(grain_pixel_fraction(after_uninstall) - grain_pixel_fraction(with_extension)) < 0.002


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None,
                    reason="hiding numpy from one Blender process needs root and unshare")
def test_blender_without_numpy_gets_one_sentence(baked):
    user = baked[0]
    script = ("import bpy, importlib.util; print('NUMPY', getattr(importlib.util.find_spec('numpy'), 'origin', None)); "
              "print('ENABLED', 'bl_ext.user_default.mochi' in bpy.context.preferences.addons); "
              "bpy.ops.preferences.addon_disable(module='bl_ext.user_default.mochi'); "
              "bpy.ops.preferences.addon_enable(module='bl_ext.user_default.mochi'); "
              "bpy.ops.preferences.addon_disable(module='bl_ext.user_default.mochi'); print('DONE')")
    result = blender("-b", "--python-exit-code", "1", "--python-expr", script, user=user, without="numpy")
    output = ok(result)
    assert "NUMPY None" in output and "DONE" in output  # Blender really ran without numpy
    sentence = ("Mochi is inactive: this Blender's Python has no numpy (a Linux distribution's Blender "
                "needs its numpy package, e.g. `apt install python3-numpy`).")
    assert result.stderr.count(sentence) == 2  # at start-up and at the explicit enable, once each


UI_SCRIPT = Path(__file__).with_name("ui_bake_button.py")
SCREENSHOTS = ("idle", "baking", "finished")


def run_ui_script(user: Path, out: Path, *arguments: str, scene: Path | None = None) -> tuple[dict, dict]:
    """Run ui_bake_button.py in a real window (Xvfb) with ``arguments`` after ``-- OUT``; (report, its steps by
    name), after checking that it reported and met no error."""
    out.mkdir()
    command = ["xvfb-run", "--auto-servernum", "--server-args", "-screen 0 1100x1350x24", bpy.app.binary_path,
               *([str(scene)] if scene is not None else []), "--python", str(UI_SCRIPT), "--", str(out), *arguments]
    result = subprocess.run(command, capture_output=True, text=True, timeout=500,
                            env={**os.environ, "BLENDER_USER_RESOURCES": str(user)})
    log = result.stdout[-4000:] + result.stderr[-4000:]
    assert (out / "report.json").is_file(), log
    report = json.loads((out / "report.json").read_text())
    assert report["error"] is None, report["error"] + log
    return report, {step["step"]: step for step in report["steps"]}


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("xdotool") is None,
                    reason="needs Xvfb (xvfb-run) and xdotool")
def test_bake_button_in_the_event_loop(installed_user, tmp_path):
    """The Bake button's operator in Blender's own event loop: runs on timer events, Esc, Resume."""
    user = installed_user
    # Frames of a few tenths of a second, so that Esc lands in the middle of the bake.
    scene = saved_scene(user, tmp_path, frames=24, substeps=1500, radius=0.04)
    out = tmp_path / "ui"
    report, steps = run_ui_script(user, out, scene=scene)

    assert steps["invoke bake"]["result"] == ["RUNNING_MODAL"]  # modal, not the blocking execute()
    cancelled = steps["cancelled"]
    total = cancelled["frames_total"]
    assert total == 24 and cancelled["cancelled"]
    assert 2 <= cancelled["frames_written"] < total  # Esc stopped it after the frame being computed
    kept = cancelled["frames_on_disk"]
    assert list(kept) == [f"frame_{f:04d}.ply" for f in range(1, cancelled["frames_written"] + 1)]
    assert steps["invoke resume"]["result"] == ["RUNNING_MODAL"] and steps["resume started"]["running"]
    finished = steps["finished"]
    assert not finished["cancelled"] and finished["error"] is None and finished["frames_written"] == total
    assert list(finished["frames_on_disk"]) == [f"frame_{f:04d}.ply" for f in range(1, total + 1)]
    # Resume carried on after the last complete frame: the frames before it were not written again.
    assert {name: finished["frames_on_disk"][name] for name in kept} == kept

    # The editor kept drawing while the worker baked, each redraw with the frame reached by then.
    shown = [frame for _, frame in report["draws"] if frame is not None]
    assert len(set(shown)) >= 3 and shown == sorted(shown), shown
    pixels = {name: png_pixels(out / f"{name}.png") for name in SCREENSHOTS}
    for name, image in pixels.items():
        assert image.std() > 0.02, f"the {name} screenshot is blank"
    # The progress bar replaced the Bake/Resume buttons: the screenshots differ where it is drawn.
    # (Blender's pixel order is bottom row first: the status bar, which shows the progress too.)
    assert pixels["idle"].shape == pixels["baking"].shape
    assert np.abs(pixels["baking"] - pixels["idle"]).max() > 0.1
    # Finished: the buttons are back and the status bar holds the operator's report.
    assert np.abs(pixels["finished"] - pixels["idle"]).max() > 0.1

    if target := os.environ.get("MOCHI_SCREENSHOT_DIR"):  # scripts/test.sh --screenshots refreshes docs/
        for name in SCREENSHOTS:
            shutil.copy2(out / f"{name}.png", Path(target) / f"bake_button_{name}.png")


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("xdotool") is None,
                    reason="needs Xvfb (xvfb-run) and xdotool")
def test_the_backends_in_the_preferences_and_the_menu_in_the_window(installed_user, tmp_path):
    """Preferences › Add-ons › Mochi in a real window: every backend with its state (rt with the reason it
    cannot start here, or its device), and the Backend menu offering 'GPU, ray traced (any vendor)'."""
    out = tmp_path / "ui"
    _report, steps = run_ui_script(installed_user, out, "preferences")
    assert steps["expand"]["result"] == ["FINISHED"]
    rows = {name: (ok, text) for name, ok, text in steps["backends"]["rows"]}
    assert set(rows) == {"cpu", "cuda", "optix", "rt"} and rows["cpu"][0]
    assert rows["rt"][1]  # a device, or one sentence saying why not
    labels = dict(steps["backend menu"]["items"])
    assert labels["rt"].startswith("GPU, ray traced (any vendor)")
    image = png_pixels(out / "preferences_backends.png")
    assert image.std() > 0.02, "the preferences screenshot is blank"
    if target := os.environ.get("MOCHI_SCREENSHOT_DIR"):
        shutil.copy2(out / "preferences_backends.png", Path(target) / "preferences_backends.png")


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("xdotool") is None,
                    reason="needs Xvfb (xvfb-run) and xdotool")
def test_quick_grains_in_the_window(installed_user, tmp_path):
    """Quick Grains on the default cube in a real window: a source, a wire domain kept out of renders,
    the per-file cache folder, and the panel as a user sees it (screenshots), then a short bake: the
    panel's baked and out-of-date states."""
    out = tmp_path / "ui"
    _report, steps = run_ui_script(installed_user, out, "quick_grains", "bake")
    assert steps["quick grains"]["result"] == ["FINISHED"]
    scene = steps["scene"]
    assert scene["role"] == "SOURCE" and scene["display"] in ("WIRE", "BOUNDS") and scene["hide_render"]
    assert scene["cache"] == ""
    # Pack ran in the background (modal over its worker), then showed the preview in place of the source.
    assert steps["invoke pack"]["result"] == ["RUNNING_MODAL"]
    assert steps["packed"]["spheres"] > 0 and steps["packed"]["source_hidden"]
    assert steps["invoke bake"]["result"] == ["RUNNING_MODAL"]
    assert (out / "mochi_quick_Scene" / "manifest.json").is_file()  # the folder of quick.blend and its scene
    names = ("quick_grains_source", "quick_grains_domain", "bake_state_baked", "bake_state_out_of_date")
    pixels = {name: png_pixels(out / f"{name}.png") for name in names}
    for name, image in pixels.items():
        assert image.std() > 0.02, f"the {name} screenshot is blank"
    # The out-of-date lines are drawn under the summary: the two baked screenshots differ.
    assert np.abs(pixels["bake_state_out_of_date"] - pixels["bake_state_baked"]).max() > 0.1
    if target := os.environ.get("MOCHI_SCREENSHOT_DIR"):
        for name in names:
            shutil.copy2(out / f"{name}.png", Path(target) / f"{name}.png")


@pytest.mark.skipif(shutil.which("xvfb-run") is None or shutil.which("xdotool") is None,
                    reason="needs Xvfb (xvfb-run) and xdotool")
def test_the_confirmations_answered_with_keys_in_the_window(installed_user, tmp_path):
    """Pack above the grain budget and a long benchmark preset ask first, in a real window; Esc changes
    nothing, Return goes on (tests/addon/ui_bake_button.py, mode 'dialogs')."""
    _report, steps = run_ui_script(installed_user, tmp_path / "ui", "dialogs")
    # The question was asked (the operator waits in its popup), not packed at once.
    assert steps["invoke pack, then Escape"]["result"] != ["FINISHED"]
    assert steps["pack after Escape"]["packed"] == 0
    assert steps["pack after Return"]["packed"] > 10
    before = steps["invoke preset, then Escape"]["before"]
    assert [steps["preset after Escape"]["mode"], steps["preset after Escape"]["dt"]] == before
    assert steps["preset after Return"]["mode"] == "FIXED"
    assert steps["preset after Return"]["dt"] == pytest.approx(2e-6)


#: A paddle keyed to sweep through a heap of grains: a 0.1 m thick plate as wide as the box (3 m) and 1 m
#: tall, resting at x = PADDLE_FROM until frame 12, then moving at a constant speed to x = PADDLE_TO at
#: frame 36, where it stays. The grains fall from a 0.6 m cube right of it, onto the box's floor.
PADDLE_FROM, PADDLE_TO, PADDLE_HALF_THICKNESS, PADDLE_FRAMES = -1.2, 0.55, 0.05, 40
MAKE_PADDLE_SCENE = """
    import sys
    import bpy

    path, start, end, half = sys.argv[sys.argv.index("--") + 1:]
    bpy.ops.wm.read_homefile(use_empty=True)
    scene = bpy.context.scene
    bpy.ops.mesh.primitive_cube_add(size=0.6, location=(0.3, 0.0, 0.35))
    source = bpy.context.object
    source.mochi.role, source.mochi.radius = "SOURCE", 0.06
    bpy.ops.mesh.primitive_cube_add(size=1.0, location=(float(start), 0.0, 0.5))
    paddle = bpy.context.object
    paddle.name = "Paddle"
    paddle.scale = (2 * float(half), 3.0, 1.0)
    paddle.mochi.role = "COLLIDER"
    # Constant speed between the keys (the default easing would make the speed vary).
    bpy.context.preferences.edit.keyframe_new_interpolation_type = "LINEAR"
    for frame, x in ((1, float(start)), (12, float(start)), (36, float(end))):
        paddle.location.x = x
        paddle.keyframe_insert("location", index=0, frame=frame)
    bpy.ops.mesh.primitive_cube_add(size=3.0, location=(0.0, 0.0, 1.5))
    domain = bpy.context.object
    domain.name = "Domain"
    domain.mochi.role = "DOMAIN"
    s = scene.mochi
    s.timestep_mode, s.substeps, s.backend = "SUBSTEPS", 40, "cpu"
    s.use_auto_stiffness, s.stiffness = False, 5e4  # resolved by 40 steps a frame; 'auto' asks for more
    s.frame_start, s.frame_end = 1, FRAMES
    scene.frame_end = FRAMES
    bpy.ops.wm.save_as_mainfile(filepath=path)
""".replace("FRAMES", str(PADDLE_FRAMES))

#: Run in the baked .blend: the paddle's x [m] and the grains the playback shows (centres [m], radii [m],
#: velocities [m/s]) at some frames, then Convert Frame to Mesh at the last one; printed as one JSON line.
READ_PADDLE_BAKE = """
    import json
    import sys
    import bpy
    import numpy as np

    frames = [int(f) for f in sys.argv[sys.argv.index("--") + 1:]]
    scene = bpy.context.scene
    playback, paddle = scene.mochi.playback_object, scene.objects["Paddle"]
    report = {}
    for frame in frames:
        scene.frame_set(frame)
        geometry = playback.evaluated_get(bpy.context.evaluated_depsgraph_get()).evaluated_geometry()
        cloud = geometry.pointcloud
        columns = {}
        for name, field, width in (("position", "vector", 3), ("radius", "value", 1), ("velocity", "vector", 3)):
            values = np.empty(len(cloud.points) * width, np.float32)
            cloud.attributes[name].data.foreach_get(field, values)
            columns[name] = values.reshape(-1, width).tolist() if width > 1 else values.tolist()
        report[frame] = {"paddle_x": paddle.matrix_world.translation.x, **columns}
    result = bpy.ops.mochi.realize_frame(subdivisions=1)
    made = bpy.context.view_layer.objects.active
    report["realized"] = {"result": sorted(result), "name": made.name, "vertices": len(made.data.vertices),
                          "materials": [m.name for m in made.data.materials if m is not None]}
    print("PADDLE " + json.dumps(report))
"""


def test_keyed_paddle_sweeps_the_grains_along(installed_user, tmp_path):
    """An animated collider in the real executable: a paddle keyed to move +x through a heap, baked with
    `blender -b scene.blend -c mochi bake`. The grains it meets move with it and end in front of it, none
    inside it at any frame read; a grain behind its final place means it never moved (a static collider)."""
    user = installed_user
    scene = tmp_path / "paddle.blend"
    ok(blender("-b", "--python-exit-code", "1", "--python-expr", textwrap.dedent(MAKE_PADDLE_SCENE), "--",
               str(scene), str(PADDLE_FROM), str(PADDLE_TO), str(PADDLE_HALF_THICKNESS), user=user))
    output = ok(blender("-b", str(scene), "-c", "mochi", "bake", user=user))
    assert f"mochi: Baked {PADDLE_FRAMES} frames" in output
    sweeping, last = 30, PADDLE_FRAMES
    output = ok(blender("-b", str(scene), "--python-exit-code", "1", "--python-expr", textwrap.dedent(READ_PADDLE_BAKE),
                        "--", "1", str(sweeping), str(last), user=user))
    report = json.loads(next(line for line in output.splitlines() if line.startswith("PADDLE "))[7:])
    frames = {int(frame): {name: np.asarray(value) for name, value in data.items()}
              for frame, data in report.items() if frame.isdigit()}
    start, during, end = frames[1], frames[sweeping], frames[last]
    speed = (PADDLE_TO - PADDLE_FROM) / (36 - 12) * 24.0  # [m/s] at 24 frames a second
    assert start["paddle_x"] == pytest.approx(PADDLE_FROM) and end["paddle_x"] == pytest.approx(PADDLE_TO)
    assert PADDLE_FROM < during["paddle_x"] < PADDLE_TO

    for frame, grains in frames.items():  # no grain inside the plate: its surface stays off the faces
        gap = np.abs(grains["position"][:, 0] - grains["paddle_x"]) - PADDLE_HALF_THICKNESS - grains["radius"]
        assert gap.min() > -0.3 * grains["radius"].max(), f"a grain is inside the paddle at frame {frame}"
    # Grains that were where the paddle went are now in front of it: pushed, not passed through.
    face = PADDLE_TO + PADDLE_HALF_THICKNESS
    assert np.count_nonzero(start["position"][:, 0] < face) > 10
    assert (end["position"][:, 0] - end["radius"]).min() > face - 0.3 * end["radius"].max()
    assert (end["position"][:, 0] > 0).all()
    # While it sweeps, the grains just in front of its face move along with it.
    ahead = during["position"][:, 0] - during["paddle_x"] - PADDLE_HALF_THICKNESS
    touching = ahead < 3 * during["radius"]
    assert np.count_nonzero(touching) > 5
    assert during["velocity"][touching, 0].mean() > 0.5 * speed

    realized = report["realized"]
    assert realized["result"] == ["FINISHED"] and realized["name"] == f"Mochi Playback Frame {last}"
    assert realized["vertices"] == 12 * len(end["radius"])  # an icosphere of 12 vertices a grain
    assert realized["materials"] == ["Mochi Grain"]

"""Press Mochi's Bake button in a real Blender window, cancel with Esc, resume; screenshots on the way.

Started by tests/addon/test_blender_executable.py as ``blender scene.blend --python ui_bake_button.py -- OUT``
(``-- OUT quick_grains``: Quick Grains on the startup file's cube instead, with screenshots of the panel;
``-- OUT preferences``: Preferences › Add-ons with Mochi expanded, and the Backend menu's items)
under Xvfb (Mesa's software OpenGL draws the UI). Everything happens from ``bpy.app.timers`` inside
Blender's own event loop:

1. the properties editor is maximised on the Physics tab of the domain; screenshot ``idle``;
2. ``mochi.bake`` is invoked as the button does (``INVOKE_DEFAULT``): the modal operator follows the
   worker on its window timer while the editor keeps redrawing (a draw handler counts the redraws and
   the frame each showed); once two frames are on disk, screenshot ``baking``;
3. Esc is pressed for real: ``xdotool key Escape`` sends an X key event (XTEST) that Blender's window
   receives like a keyboard's (the pointer rests inside the window: Xvfb has no window manager, the
   focus follows the pointer);
4. once the modal operator has ended, ``mochi.bake_resume`` is invoked the same way and runs to the end;
   screenshot ``finished``.

OUT/report.json records what happened, for the test to assert; Blender quits at the end (or after
TIMEOUT seconds, recording the error).
"""

import json
import struct
import subprocess
import sys
import time
import traceback
from pathlib import Path

import bpy
import numpy as np

OUT = Path(sys.argv[sys.argv.index("--") + 1])
PACKAGE = "bl_ext.user_default.mochi"
TIMEOUT = 300.0
#: Frames on disk before Esc is pressed.
FRAMES_BEFORE_ESC = 2

report = {"steps": [], "draws": [], "error": None}
started = time.monotonic()


def job_module():
    from importlib import import_module

    return import_module(f"{PACKAGE}.addon.bake_job")


def log(step: str, **values) -> None:
    report["steps"].append({"step": step, "t": round(time.monotonic() - started, 2), **values})
    print(f"ui_bake_button: {step} {values}", flush=True)


def properties_override() -> dict:
    window = bpy.context.window_manager.windows[0]
    area = next(a for a in window.screen.areas if a.type in ("PROPERTIES", "PREFERENCES"))
    region = next(r for r in area.regions if r.type == "WINDOW")
    return {"window": window, "screen": window.screen, "area": area, "region": region}


def x_screen_rgb() -> np.ndarray:
    """The X screen as ``xwd -root`` dumps it, RGB 0-1, shape (height, width, 3), top row first.

    Blender's own screenshot operators read the GL front buffer, which Mesa's software renderer under
    Xvfb leaves black; the X server's copy of the screen is what a user sees.
    """
    data = subprocess.run(["xwd", "-root", "-silent"], capture_output=True, check=True).stdout
    header = struct.unpack(">25I", data[:100])
    header_size, width, height, byte_order = header[0], header[4], header[5], header[7]
    bits_per_pixel, bytes_per_line, masks, colors = header[11], header[12], header[14:17], header[19]
    if bits_per_pixel != 32:
        raise RuntimeError(f"xwd wrote {bits_per_pixel} bits per pixel; a 24-bit Xvfb screen gives 32")
    words = np.frombuffer(data, dtype="<u4" if byte_order == 0 else ">u4", count=height * bytes_per_line // 4,
                          offset=header_size + 12 * colors).reshape(height, bytes_per_line // 4)[:, :width]
    channels = []
    for mask in masks:
        shift = (mask & -mask).bit_length() - 1
        channels.append(((words & mask) >> shift).astype(np.float32) / (mask >> shift))
    return np.stack(channels, axis=-1)


def screenshot(name: str) -> None:
    """Save the maximised properties editor (the Physics tab) over the window's status bar (progress
    and the operator's report) as OUT/<name>.png, from the X screen."""
    override = properties_override()
    window, area = override["window"], override["area"]
    screen = x_screen_rgb()
    # Blender counts window and area positions from the bottom left, X from the top left.
    left = window.x + area.x
    top = screen.shape[0] - (window.y + area.y + area.height)
    editor = screen[top:top + area.height, left:left + area.width]
    # Drop the empty editor below the last panel (rows equal to the bottom row), keeping a margin; the
    # first screenshot fixes the height, so that all of them have the same size.
    if "editor_rows" not in report:
        filled = np.flatnonzero(np.abs(editor - editor[-1]).max(axis=(1, 2)) > 0.02)
        report["editor_rows"] = int(min(len(editor), filled[-1] + 40)) if filled.size else len(editor)
    editor = editor[:report["editor_rows"]]
    window_bottom = screen.shape[0] - window.y
    status_bar = screen[window_bottom - area.y:window_bottom, left:left + area.width]
    crop = np.concatenate([editor, status_bar])
    image = bpy.data.images.new(f"screenshot {name}", crop.shape[1], crop.shape[0], alpha=False)
    rgba = np.concatenate([crop[::-1], np.ones(crop.shape[:2] + (1,), np.float32)], axis=-1)
    image.pixels.foreach_set(rgba.ravel())
    image.filepath_raw = str(OUT / f"{name}.png")
    image.file_format = "PNG"
    image.save()
    bpy.data.images.remove(image)
    log("screenshot", name=name, window=[window.x, window.y, window.width, window.height],
        area=[area.x, area.y, area.width, area.height], screen=list(screen.shape[:2]))


def count_draw() -> None:
    """Draw handler of the properties editor: which bake frame each redraw showed."""
    job = job_module().current_job()
    report["draws"].append([round(time.monotonic() - started, 2), job.last_frame_written() if job else None])


def frame_files() -> dict[str, int]:
    """Cache frame file name -> modification time [ns]."""
    from importlib import import_module

    folder = import_module(f"{PACKAGE}.addon.snapshot").cache_folder(bpy.context.scene)
    return {p.name: p.stat().st_mtime_ns for p in sorted(folder.glob("frame_*.ply"))}


def run_steps():
    """A generator stepped by the timer: each ``yield`` gives the seconds until the next step."""
    scene = bpy.context.scene
    # The domain's Mochi panel is short: the Bake panel with its progress bar fits on the screen.
    domain = next(o for o in scene.objects if o.mochi.role == "DOMAIN")
    bpy.context.view_layer.objects.active = domain
    domain.select_set(True)
    override = properties_override()
    window = override["window"]
    # The pointer rests in the empty bottom of the tab column: in the window (Esc goes to it), no tooltip.
    subprocess.run(["xdotool", "mousemove", "--sync", str(window.x + 12), str(window.height - 12)], check=True)
    override["area"].spaces.active.context = "PHYSICS"
    with bpy.context.temp_override(**override):
        bpy.ops.screen.screen_full_area()
    yield 1.0  # let the maximised editor draw
    bpy.types.SpaceProperties.draw_handler_add(count_draw, (), "WINDOW", "POST_PIXEL")
    screenshot("idle")

    with bpy.context.temp_override(**properties_override()):
        log("invoke bake", result=sorted(bpy.ops.mochi.bake("INVOKE_DEFAULT")))
    job = job_module().current_job()
    log("job started", running=job is not None)
    while job.last_frame_written() < FRAMES_BEFORE_ESC:
        yield 0.1
    yield 0.3  # a redraw with the new frame in the progress bar
    screenshot("baking")

    subprocess.run(["xdotool", "key", "Escape"], check=True)
    log("esc pressed", frames_written=job.last_frame_written())
    while job_module().current_job() is not None:
        yield 0.1
    log("cancelled", cancelled=bool(job.progress.cancelled), frames_written=job.last_frame_written(),
        frames_on_disk=frame_files(), frames_total=int(job.progress.frames_total))

    with bpy.context.temp_override(**properties_override()):
        log("invoke resume", result=sorted(bpy.ops.mochi.bake_resume("INVOKE_DEFAULT")))
    resumed = job_module().current_job()
    log("resume started", running=resumed is not None)
    while job_module().current_job() is not None:
        yield 0.2
    yield 0.5  # the finished panel, the report in the status bar
    log("finished", cancelled=bool(resumed.progress.cancelled), error=resumed.progress.error,
        frames_written=resumed.last_frame_written(), frames_on_disk=frame_files())
    screenshot("finished")


def finish() -> None:
    (OUT / "report.json").write_text(json.dumps(report, indent=1))
    bpy.ops.wm.quit_blender()


def quick_grains_on_the_cube(pointer) -> dict:
    """Select the startup file's cube, rest the pointer at ``pointer(window)`` (x, y) in the window (keys go to
    it), open the Physics tab and click Quick Grains as the Mochi panel does; the properties override."""
    cube = bpy.context.scene.objects["Cube"]
    bpy.context.view_layer.objects.active = cube
    cube.select_set(True)
    override = properties_override()
    x, y = pointer(override["window"])
    subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y)], check=True)
    override["area"].spaces.active.context = "PHYSICS"
    with bpy.context.temp_override(**override):
        log("quick grains", result=sorted(bpy.ops.mochi.quick_grains("INVOKE_DEFAULT")))
    return override


def quick_grains_steps():
    """Quick Grains on the startup file's cube, as a user clicks it in the Mochi panel; screenshots of the
    panel with the source active (OUT/quick_grains_source.png) and the domain active
    (OUT/quick_grains_domain.png, its Bake panel idle); with ``bake``, Pack in the background and a short
    bake."""
    bpy.ops.wm.save_as_mainfile(filepath=str(OUT / "quick.blend"))  # a saved file: its own cache folder
    scene = bpy.context.scene
    cube = scene.objects["Cube"]
    override = quick_grains_on_the_cube(pointer=lambda window: (window.x + 12, window.height - 12))
    with bpy.context.temp_override(**override):
        bpy.ops.screen.screen_full_area()
    domain = next(o for o in scene.objects if o.mochi.role == "DOMAIN")
    log("scene", role=cube.mochi.role, radius=cube.mochi.radius, domain=domain.name,
        display=domain.display_type, hide_render=domain.hide_render, cache=scene.mochi.cache_directory)
    yield 1.0
    screenshot("quick_grains_source")
    bpy.context.view_layer.objects.active = domain
    yield 1.0
    screenshot("quick_grains_domain")
    if "bake" not in sys.argv[sys.argv.index("--"):]:
        return
    # Pack as its button runs it: a modal operator over a worker thread, the window drawing meanwhile.
    cube.mochi.radius = 0.25
    bpy.context.view_layer.objects.active = cube
    with bpy.context.temp_override(**properties_override()):
        log("invoke pack", result=sorted(bpy.ops.mochi.pack("INVOKE_DEFAULT")))
    while cube.mochi.pack_preview is None:
        yield 0.1
    log("packed", spheres=len(cube.mochi.pack_preview.data.vertices), source_hidden=cube.hide_get())
    bpy.context.view_layer.objects.active = domain
    # A short bake of a few large grains, then the panel's baked and out-of-date states.
    scene.mochi.frame_end = 3  # sets the Mochi range: Use Scene Range turns off
    with bpy.context.temp_override(**properties_override()):
        log("invoke bake", result=sorted(bpy.ops.mochi.bake("INVOKE_DEFAULT")))
    job = job_module().current_job()
    while job is not None and job_module().current_job() is not None:
        yield 0.2
    yield 1.0
    screenshot("bake_state_baked")
    cube.mochi.friction = 0.9
    yield 1.0
    screenshot("bake_state_out_of_date")


def dialog_steps():
    """The confirmations Pack and Apply Preset ask (``invoke_confirm``), answered with real keys: Esc
    leaves everything as it was, Return goes on. Quick Grains on the startup cube first; the grain budget
    set to 10, so that Pack asks; the freefall benchmark (20,000 steps a frame) over 'Ask Before Bakes
    Longer Than' set to 1 minute, so that it asks."""
    from importlib import import_module

    scene = bpy.context.scene
    cube = scene.objects["Cube"]
    # The pointer in the middle of the window: the questions pop up under it.
    quick_grains_on_the_cube(pointer=lambda window: (window.x + window.width // 2, window.height // 2))
    preferences = bpy.context.preferences.addons[PACKAGE].preferences
    preferences.confirm_grains, preferences.confirm_minutes = 10, 1.0
    bpy.context.view_layer.objects.active = cube
    yield 1.0
    for key in ("Escape", "Return"):
        with bpy.context.temp_override(**properties_override()):
            log(f"invoke pack, then {key}", result=sorted(bpy.ops.mochi.pack("INVOKE_DEFAULT")))
        yield 1.0  # the question is drawn
        subprocess.run(["xdotool", "key", key], check=True)
        yield 2.0
        running = import_module(f"{PACKAGE}.addon.operators.pack")._running
        while running is not None and not running.finished:
            yield 0.1
        yield 0.5  # the modal operator's last timer event shows the preview
        preview = cube.mochi.pack_preview
        log(f"pack after {key}", packed=len(preview.data.vertices) if preview is not None else 0)
    freefall = str(Path(import_module(f"{PACKAGE}.engine.resources").data_dir("presets")) / "freefall.toml")
    for key in ("Escape", "Return"):
        before = (scene.mochi.timestep_mode, scene.mochi.dt)
        with bpy.context.temp_override(**properties_override()):
            log(f"invoke preset, then {key}", before=list(before),
                result=sorted(bpy.ops.mochi.preset_apply("INVOKE_DEFAULT", filepath=freefall)))
        yield 1.0
        subprocess.run(["xdotool", "key", key], check=True)
        yield 1.0
        log(f"preset after {key}", mode=scene.mochi.timestep_mode, dt=scene.mochi.dt)


def preferences_steps():
    """The maximised editor turned into Preferences › Add-ons, filtered to Mochi and expanded as a user clicks
    its arrow: the backends this Blender can start and, for a missing GPU package, its button
    (OUT/preferences_backends.png); the probe's rows and the Backend menu's items go to the report."""
    from importlib import import_module

    override = properties_override()
    with bpy.context.temp_override(**override):
        bpy.ops.screen.screen_full_area()
    yield 1.0
    override = properties_override()
    x, y = override["window"].x + 12, override["window"].height - 12
    subprocess.run(["xdotool", "mousemove", "--sync", str(x), str(y)], check=True)  # no tooltip over a button
    override["area"].type = "PREFERENCES"
    bpy.context.preferences.active_section = "ADDONS"
    bpy.context.window_manager.addon_search = "Mochi"
    with bpy.context.temp_override(**properties_override()):
        log("expand", result=sorted(bpy.ops.preferences.addon_expand(module=PACKAGE)))
    yield 2.0  # the probes run at the first draw (opening a ray-tracing device takes about a second)
    select = import_module(f"{PACKAGE}.engine.backends.select")
    log("backends", rows=[list(row) for row in select.probe_backends()])
    items = import_module(f"{PACKAGE}.addon.properties.scene").backend_items(None, bpy.context)
    log("backend menu", items=[[item[0], item[1]] for item in items])
    screenshot("preferences_backends")


arguments = sys.argv[sys.argv.index("--"):]
steps = (quick_grains_steps() if "quick_grains" in arguments else dialog_steps() if "dialogs" in arguments
         else preferences_steps() if "preferences" in arguments else run_steps())


def tick():
    try:
        if time.monotonic() - started > TIMEOUT:
            raise TimeoutError(f"the UI sequence took more than {TIMEOUT} s")
        return next(steps)
    except StopIteration:
        finish()
    except Exception:  # anything: record it for the test, and quit instead of hanging
        report["error"] = traceback.format_exc()
        finish()
    return None


bpy.app.timers.register(tick, first_interval=2.0)

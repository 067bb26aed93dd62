"""Render a baked cache the way a Blender user sees it: the add-on's geometry-nodes playback, on a ground,
under a sun that casts shadows, with Cycles on the CPU.

    python scripts/demo_render.py out/demo/cache --out out/demo          # needs the bpy module

Writes ``DIR/demo.png`` (the last frame), ``DIR/demo.gif`` (every other frame, in real time),
``DIR/demo_sheet.png`` (a contact sheet of ``SHEET_FRAMES`` and the last) and ``DIR/frames/frame_NNNN.png``. The
playback object is built by ``addon.playback.ensure_playback_object`` (the add-on loaded as Blender
loads the extension, through addon/headless.py), so the grains, their radius attribute, the
per-object colours and the 'Import PLY' per frame are exactly what the Bake button sets up.
``--still-only`` renders the last frame alone (the heaps of docs/looks.md).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
#: Frames of the animation (every other cache frame; 1 = the initial state) and of the contact sheet.
ANIMATION_STEP = 2
SHEET_FRAMES = (1, 3, 5, 7, 9, 13, 19)


def _addon():
    """The repository loaded and registered as the extension package 'mochi', as Blender loads it
    (addon/headless.py does the same for the CLI); (its playback module, its cache module)."""
    import importlib

    if "mochi" not in sys.modules:
        sys.path.insert(0, str(REPO / "addon"))
        import headless  # noqa: E402  (addon/headless.py, not a package)

        sys.path.pop(0)
        headless.load_package().register()
    return importlib.import_module("mochi.addon.playback"), importlib.import_module("mochi.engine.cache")


def _material(name: str, colour, roughness: float):
    import bpy

    material = bpy.data.materials.new(name)
    if hasattr(material, "use_nodes") and not material.use_nodes:
        material.use_nodes = True
    bsdf = material.node_tree.nodes.get("Principled BSDF")
    bsdf.inputs["Base Color"].default_value = (*colour, 1.0)
    bsdf.inputs["Roughness"].default_value = roughness
    return material


def build_scene(cache: Path, *, frames_completed: int, bounds: tuple[np.ndarray, np.ndarray],
                resolution: tuple[int, int], samples: int, view=(1.0, -1.5, 0.5), zoom: float = 1.25):
    """An empty scene with the cache's playback object, a ground, a sun, a sky and a camera.

    Args:
        cache: Cache folder.
        frames_completed: Last cache frame.
        bounds: Blender-space (Z up) box the camera frames [m], two corners of shape (3,).
        resolution: Image size [px].
        samples: Cycles samples.
        view: Direction from the target to the camera.
        zoom: >1 frames tighter.
    """
    import bpy
    from mathutils import Vector

    playback, _ = _addon()
    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.frame_start, scene.frame_end = 1, frames_completed
    # The same playback object and node group as the Bake button makes (engine presets are y up).
    playback.ensure_playback_object(scene, str(cache), start_frame=1, last_frame=frames_completed, up_axis="Y")

    lo, hi = bounds
    size = float(np.linalg.norm(hi - lo))
    ground = bpy.data.objects.new("Ground", bpy.data.meshes.new("Ground"))
    half = 20.0 * size
    ground.data.from_pydata([(-half, -half, 0), (half, -half, 0), (half, half, 0), (-half, half, 0)], [],
                            [(0, 1, 2, 3)])
    ground.data.materials.append(_material("Ground", (0.42, 0.40, 0.37), 0.9))
    scene.collection.objects.link(ground)

    sun = bpy.data.objects.new("Sun", bpy.data.lights.new("Sun", "SUN"))
    sun.data.energy = 4.0
    sun.data.angle = math.radians(3.0)  # a small sun: crisp shadows under and between the grains
    sun.rotation_euler = (math.radians(50), math.radians(0), math.radians(-35))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("Sky")
    if hasattr(world, "use_nodes") and not world.use_nodes:
        world.use_nodes = True
    world.node_tree.nodes["Background"].inputs["Color"].default_value = (0.55, 0.62, 0.72, 1.0)
    world.node_tree.nodes["Background"].inputs["Strength"].default_value = 0.6
    scene.world = world

    camera_data = bpy.data.cameras.new("Camera")
    camera_data.lens = 50
    camera = bpy.data.objects.new("Camera", camera_data)
    scene.collection.objects.link(camera)
    target = (lo + hi) / 2.0
    direction = np.asarray(view, float) / np.linalg.norm(view)
    distance = 0.5 * size / math.tan(camera_data.angle / 2.0) * 1.15 / zoom
    camera.location = Vector(target + direction * distance)
    camera.rotation_euler = Vector(tuple(-direction)).to_track_quat("-Z", "Y").to_euler()
    camera_data.clip_start, camera_data.clip_end = 0.01, distance * 20.0
    scene.camera = camera

    render = scene.render
    render.engine = "CYCLES"
    scene.cycles.device = "CPU"
    scene.cycles.samples = samples
    scene.cycles.use_denoising = False
    scene.cycles.max_bounces = 3
    render.resolution_x, render.resolution_y = resolution
    render.resolution_percentage = 100
    render.image_settings.file_format = "PNG"
    return scene


def render_frame(scene, frame: int, out: Path) -> Path:
    import bpy

    scene.frame_set(frame)
    scene.render.filepath = str(out)
    bpy.ops.render.render(write_still=True)
    return out


def blender_bounds(cache: Path, frames: list[int], cache_module) -> tuple[np.ndarray, np.ndarray]:
    """Box of (nearly all) the grains over ``frames`` in Blender space (engine y up → Blender z up) [m]."""
    lows, highs = [], []
    for frame in frames:
        c = cache_module.read_frame(cache, frame)
        keep = c["active"].astype(bool) if "active" in c else slice(None)
        p = np.stack([c["x"], -c["z"], c["y"]], 1)[keep]
        # A few grains that rolled far away should not shrink the picture of the rest.
        lows.append(np.percentile(p, 1.0, axis=0))
        highs.append(np.percentile(p, 99.5, axis=0))
    lo, hi = np.min(lows, 0), np.max(highs, 0)
    lo[2] = 0.0
    return lo, hi


def contact_sheet(images: list[Path], labels: list[str], out: Path, *, columns: int = 4) -> Path:
    """Tile the PNGs (same size) into one PNG with a frame label on each."""
    from PIL import Image, ImageDraw

    tiles = [Image.open(path).convert("RGB") for path in images]
    w, h = tiles[0].size
    rows = math.ceil(len(tiles) / columns)
    sheet = Image.new("RGB", (columns * w, rows * h), (255, 255, 255))
    for index, (tile, label) in enumerate(zip(tiles, labels)):
        draw = ImageDraw.Draw(tile)
        draw.text((8, 6), label, fill=(255, 255, 255))
        sheet.paste(tile, ((index % columns) * w, (index // columns) * h))
    sheet.save(out)
    return out


def animation(images: list[Path], out: Path, *, seconds_per_frame: float) -> Path:
    """The PNGs as a looping GIF."""
    from PIL import Image

    frames = [Image.open(path).convert("RGB").quantize(colors=128) for path in images]
    durations = [int(seconds_per_frame * 1000)] * len(frames)
    durations[-1] = 1500  # hold the result
    frames[0].save(out, save_all=True, append_images=frames[1:], duration=durations, loop=0)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="folder of the images")
    parser.add_argument("--samples", type=int, default=12)
    parser.add_argument("--size", type=int, nargs=2, default=(360, 270), metavar=("W", "H"),
                        help="size of the sheet's frames [px]; the still is twice as large")
    parser.add_argument("--still-only", action="store_true", help="render the last frame only (docs/looks.md)")
    parser.add_argument("--name", default="demo", help="file name of the still (NAME.png)")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    _, cache_module = _addon()
    cache = args.cache.resolve()
    manifest = cache_module.read_manifest(cache)
    completed = int(manifest["frames_completed"])
    frames = sorted(set(range(1, completed + 1, ANIMATION_STEP)) | {completed})
    sheet_frames = [f for f in frames if f in SHEET_FRAMES] + [completed]
    args.out.mkdir(parents=True, exist_ok=True)
    # The still frames the result, the animation everything from the first frame on.
    scene = build_scene(cache, frames_completed=completed, bounds=blender_bounds(cache, [completed], cache_module),
                        samples=args.samples * 2, resolution=(2 * args.size[0], 2 * args.size[1]))
    still = render_frame(scene, completed, (args.out / f"{args.name}.png").resolve())
    print(f"Still: {still} ({time.perf_counter() - began:.0f} s)", flush=True)
    if args.still_only:
        return 0

    scene = build_scene(cache, frames_completed=completed, bounds=blender_bounds(cache, [1, completed], cache_module),
                        samples=args.samples, resolution=tuple(args.size))
    fps = float(manifest.get("fps", 25.0))
    shots = [render_frame(scene, f, (args.out / "frames" / f"frame_{f:04d}.png").resolve()) for f in frames]
    labels = [f"frame {f}  t = {(f - 1) / fps:.2f} s" for f in sheet_frames]
    sheet = contact_sheet([shots[frames.index(f)] for f in sheet_frames], labels, args.out / f"{args.name}_sheet.png")
    gif = animation(shots, args.out / f"{args.name}.gif", seconds_per_frame=ANIMATION_STEP / fps)
    print(f"Contact sheet: {sheet}\nAnimation: {gif} ({time.perf_counter() - began:.0f} s)", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

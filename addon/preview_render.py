"""Render one cached frame with Cycles in a fresh scene: camera framed on the grains, a sun, a grey world."""

from __future__ import annotations

import math
from pathlib import Path

import bpy
import numpy as np

from ..engine.errors import MochiError
from . import compat, playback
from .settings import UP_AXIS_KEY


def _grain_bounds(cache: Path, frame: int, up_axis: str) -> tuple[np.ndarray, np.ndarray]:
    """World-space (Blender, Z up) bounding box [m] of the grains of one frame, corners (3,) each."""
    from ..engine.cache import read_frame

    columns = read_frame(cache, frame)
    points = np.stack([columns["x"], columns["y"], columns["z"]], axis=1).astype(np.float64)
    if up_axis == "Y":
        points = np.stack([points[:, 0], -points[:, 2], points[:, 1]], axis=1)
    r = float(np.max(columns["radius"]))
    return points.min(axis=0) - r, points.max(axis=0) + r


def render_cache_frame(cache: Path, *, frame: int, out: Path, samples: int = 16,
                       resolution: tuple[int, int] = (640, 480), overwrite: bool = False) -> Path:
    """Render cache frame ``frame`` to the PNG ``out``; returns its absolute path.

    Cycles writes a temporary PNG beside ``out`` that is then renamed over it: ``out`` is replaced only
    when Mochi can prove it wrote it (``engine.output_files``), or with ``overwrite``.

    Raises:
        MochiError: no cache, a frame that is not baked, bad sizes, a file at ``out`` that is not Mochi's
            (before the scene is built), or Cycles missing.
    """
    from ..engine.atomic import check_output_file
    from ..engine.cache import read_manifest
    from ..engine.output_files import plan_outputs

    out = check_output_file(out, suffix=".png")
    plan = plan_outputs([out], overwrite=overwrite)
    cache = cache.resolve()
    manifest = read_manifest(cache)
    if manifest is None:
        raise MochiError(f"'{cache}' is not a Mochi cache folder (no manifest.json).")
    completed = int(manifest.get("frames_completed", 0))
    if not 1 <= frame <= completed:
        raise MochiError(f"Frame {frame} is not in the cache '{cache}', which has frames 1–{completed}.")
    if samples < 1 or min(resolution) < 1:
        raise MochiError("Samples and resolution must be positive.")
    up_axis = str(manifest.get(UP_AXIS_KEY, "Y")).upper()

    bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
    scene = bpy.context.scene
    scene.frame_start = scene.frame_end = scene.frame_current = frame
    playback.ensure_playback_object(scene, str(cache), start_frame=1, last_frame=completed, up_axis=up_axis)

    lo, hi = _grain_bounds(cache, frame, up_axis)
    center = (lo + hi) / 2.0
    extent = max(float(np.linalg.norm(hi - lo)) / 2.0, 1e-3)
    camera_data = bpy.data.cameras.new("Mochi Camera")
    camera = bpy.data.objects.new("Mochi Camera", camera_data)
    scene.collection.objects.link(camera)
    direction = np.array([1.0, -1.3, 0.9]) / np.linalg.norm([1.0, -1.3, 0.9])
    distance = extent / math.sin(camera_data.angle / 2.0) * 1.05
    from mathutils import Vector

    camera.location = Vector(center + direction * distance)
    camera.rotation_euler = Vector(tuple(-direction)).to_track_quat("-Z", "Y").to_euler()
    camera_data.clip_start, camera_data.clip_end = distance * 1e-3, distance * 10.0
    scene.camera = camera
    sun = bpy.data.objects.new("Mochi Sun", bpy.data.lights.new("Mochi Sun", "SUN"))
    sun.data.energy = 3.0
    sun.rotation_euler = (math.radians(40), math.radians(10), math.radians(30))
    scene.collection.objects.link(sun)
    world = bpy.data.worlds.new("Mochi World")
    world.color = (0.18, 0.18, 0.2)
    if compat.needs_use_nodes():
        world.use_nodes = True
    background = world.node_tree.nodes.get("Background") if world.node_tree else None
    if background is not None:
        background.inputs["Color"].default_value = (0.18, 0.18, 0.2, 1.0)
    scene.world = world

    render = scene.render
    render.engine = "CYCLES"
    scene.cycles.samples = samples
    scene.cycles.device = "CPU"
    scene.cycles.use_denoising = False
    render.resolution_x, render.resolution_y = resolution
    render.resolution_percentage = 100
    render.image_settings.file_format = "PNG"

    def render_to(tmp: Path) -> None:
        render.filepath = str(tmp)
        bpy.ops.render.render(write_still=True)
        if tmp.stat().st_size == 0:
            raise MochiError(f"Cycles did not write '{out}'.")
    return plan.write_file(out, render_to)

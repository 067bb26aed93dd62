"""USD export of a bake cache: one ``UsdGeomPoints`` prim, one small layer per frame.

Layout, for ``mochi export CACHE --usd OUT.usda`` (or ``.usdc``)::

    OUT.usda                      the stage: /Mochi (Xform, default prim) / Grains (Points)
    OUT_frames/manifest.usda      the clip manifest: which attributes the frame layers hold
    OUT_frames/frame.0001.usdc    time samples of one frame (crate), one file per frame
    ...

/Mochi/Grains takes its samples from the frame layers through USD *template value clips*
(``templateAssetPath = ./OUT_frames/frame.####.usdc``). Adding a frame therefore writes one new
layer and rewrites the stage, whose size does not depend on the number of frames (only its end time
changes), so a long bake never rewrites a growing file; every file is written under a temporary name
and renamed, so a reader sees the old stage or the new one, never half of one. Files are replaced or
removed only when Mochi can prove it wrote them (``engine.output_files``: a record beside the stage and
one in OUT_frames/); any other file under a name the export needs is refused without ``overwrite``.

Per frame, /Mochi/Grains holds (USD names, units of the stage: metres, seconds):

    points            point3f[]   particle centres [m], (particle_count,)
    widths            float[]     diameters, 2 × radius [m] (UsdGeomPoints widths are diameters)
    velocities        vector3f[]  [m/s] (for motion blur)
    ids               int64[]     the cache's particle ids (stable across frames)
    primvars:object_id int[]      source object of each particle (vertex interpolation)
    primvars:material  int[]      material index
    primvars:active    int[]      1 while the particle is simulated, 0 once it has left the domain
    extent            float3[2]   bounds including the radii

Orientations are not written yet: cache format 2 holds them (``qw qx qy qz``, see docs/physics.md);
add ``orientations`` here, as quath[], from those columns.

Stage metadata: ``metersPerUnit = 1`` (the engine is SI), ``upAxis`` from the cache manifest's
``up_axis`` ('Y' for presets, whose gravity is −y; 'Z' for Blender bakes, which are in Blender's
world frame), ``timeCodesPerSecond = framesPerSecond =`` the bake's fps. Time code = cache frame +
``frame_start_scene`` − 1 (Blender bakes record the scene frame that shows cache frame 1; presets
start at 1), so an import into the .blend lines up with its timeline.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from ..cache import frame_path, read_frame, read_manifest
from ..cache_integrity import check_frame_digest
from ..errors import MochiError
from ..output_files import OVERWRITE_HINT, OutputPlan, plan_outputs

ROOT_PRIM = "/Mochi"
POINTS_NAME = "Grains"
POINTS_PRIM = f"{ROOT_PRIM}/{POINTS_NAME}"
#: Path of the points prim inside each frame layer (the clips' primPath).
CLIP_PRIM = f"/{POINTS_NAME}"
#: USD template clips need the form basename.####.usdc (the hashes are the time code, zero-padded).
FRAME_LAYER_PATTERN = "frame.{time:04d}.usdc"
FRAME_LAYER_TEMPLATE = "frame.####.usdc"
CLIP_MANIFEST_NAME = "manifest.usda"
#: customLayerData key holding what a Mochi stage was exported from (which cache, how many frames).
STAGE_MARK = "mochi"
STAGE_SUFFIXES = (".usda", ".usdc", ".usd")
UP_AXES = ("Y", "Z")


def _pxr():
    """The pxr modules, or one sentence saying how to install them."""
    try:
        from pxr import Sdf, Usd, UsdGeom, Vt
    except ImportError:
        raise MochiError("USD export needs Pixar's USD library; install it with: "
                         "pip install 'mochi-dem[usd]' (the usd-core package).") from None
    return Sdf, Usd, UsdGeom, Vt


def frames_folder(stage_path: str | os.PathLike) -> Path:
    """Folder of the frame layers of the stage ``stage_path`` (OUT.usda → OUT_frames/)."""
    stage_path = Path(stage_path)
    return stage_path.with_name(f"{stage_path.stem}_frames")


def frame_layer_path(stage_path: str | os.PathLike, time_code: int) -> Path:
    """Frame layer holding the samples at ``time_code``."""
    return frames_folder(stage_path) / FRAME_LAYER_PATTERN.format(time=time_code)


@dataclass(frozen=True)
class UsdTiming:
    """How cache frames map to USD time.

    Attributes:
        fps: Frames (= time codes) per second of the bake.
        first_time_code: Time code of cache frame 1.
        up_axis: 'Y' or 'Z', the cache's up axis.
    """

    fps: float
    first_time_code: int = 1
    up_axis: str = "Y"

    @classmethod
    def from_manifest(cls, manifest: dict) -> "UsdTiming":
        up_axis = str(manifest.get("up_axis", "Y")).upper()
        if up_axis not in UP_AXES:
            raise MochiError(f"The cache's up_axis is {up_axis!r}; USD export knows only Y and Z.")
        return cls(fps=float(manifest["fps"]), first_time_code=int(manifest.get("frame_start_scene", 1)),
                   up_axis=up_axis)

    def time_code(self, frame: int) -> int:
        return self.first_time_code + frame - 1


def _export_atomic(layer, path: Path, plan: OutputPlan) -> None:
    """Write an Sdf layer to ``path`` through ``plan`` (a temporary name with the same extension, since
    USD picks the format by it; then renamed)."""
    def export(tmp: Path) -> None:
        try:
            written = layer.Export(str(tmp))
        except Exception as exc:  # noqa: BLE001  USD reports a failed write (a full disk) as Tf.ErrorException
            reason = (str(exc).strip().splitlines() or [type(exc).__name__])[-1][:160]
            raise MochiError(f"Cannot write '{path}': USD could not write {tmp.name} ({reason}).") from None
        if not written:
            raise MochiError(f"Cannot write '{path}': USD could not write {tmp.name}.")
    plan.write_file(path, export)


_ATTRIBUTES = (  # (USD name, Sdf value type name, is a primvar)
    ("points", "Point3fArray", False),
    ("widths", "FloatArray", False),
    ("velocities", "Vector3fArray", False),
    ("ids", "Int64Array", False),
    ("extent", "Float3Array", False),
    ("primvars:object_id", "IntArray", True),
    ("primvars:material", "IntArray", True),
    ("primvars:active", "IntArray", True),
)


def _declare_attributes(prim_spec, Sdf) -> dict:
    """Attribute specs of the frame data on ``prim_spec``; primvars get vertex interpolation."""
    specs = {}
    for name, type_name, primvar in _ATTRIBUTES:
        spec = Sdf.AttributeSpec(prim_spec, name, getattr(Sdf.ValueTypeNames, type_name))
        if primvar:
            spec.SetInfo("interpolation", "vertex")
        specs[name] = spec
    return specs


def frame_values(columns: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """USD attribute values of one cache frame (``engine.cache.read_frame`` columns).

    Returns:
        USD attribute name → numpy array: points/velocities float32 (n, 3), widths float32 (n,),
        ids int64 (n,), extent float32 (2, 3), primvars int32 (n,).
    """
    points = np.stack([columns["x"], columns["y"], columns["z"]], axis=1).astype(np.float32)
    radius = np.asarray(columns["radius"], np.float32)
    velocities = np.stack([columns["vx"], columns["vy"], columns["vz"]], axis=1).astype(np.float32)
    if len(radius):
        extent = np.stack([(points - radius[:, None]).min(axis=0), (points + radius[:, None]).max(axis=0)])
    else:
        extent = np.zeros((2, 3), np.float32)
    return {
        "points": points, "widths": 2.0 * radius, "velocities": velocities,
        "ids": np.asarray(columns["id"], np.int64), "extent": extent.astype(np.float32),
        "primvars:object_id": np.asarray(columns["object_id"], np.int32),
        "primvars:material": np.asarray(columns["material"], np.int32),
        "primvars:active": np.asarray(columns["active"], np.int32),
    }


def write_frame_layer(path: Path, time_code: int, values: dict[str, np.ndarray], plan: OutputPlan) -> None:
    """Write one frame layer: /Grains with the samples of ``values`` at ``time_code``."""
    Sdf, _, _, Vt = _pxr()
    layer = Sdf.Layer.CreateAnonymous(".usdc")
    prim = Sdf.CreatePrimInLayer(layer, CLIP_PRIM)
    prim.specifier = Sdf.SpecifierDef
    prim.typeName = "Points"
    arrays = {"Point3fArray": Vt.Vec3fArray, "Vector3fArray": Vt.Vec3fArray, "Float3Array": Vt.Vec3fArray,
              "FloatArray": Vt.FloatArray, "Int64Array": Vt.Int64Array, "IntArray": Vt.IntArray}
    specs = _declare_attributes(prim, Sdf)
    for name, type_name, _ in _ATTRIBUTES:
        layer.SetTimeSample(specs[name].path, float(time_code),
                            arrays[type_name].FromNumpy(np.ascontiguousarray(values[name])))
    _export_atomic(layer, path, plan)


def write_clip_manifest(path: Path, plan: OutputPlan) -> None:
    """The clip manifest: the attributes the frame layers provide, declared without values (USD
    would otherwise open every frame layer to find out)."""
    Sdf, _, _, _ = _pxr()
    layer = Sdf.Layer.CreateAnonymous(".usda")
    prim = Sdf.CreatePrimInLayer(layer, CLIP_PRIM)
    prim.specifier = Sdf.SpecifierOver
    _declare_attributes(prim, Sdf)
    _export_atomic(layer, path, plan)


def write_stage(stage_path: Path, timing: UsdTiming, last_frame: int, plan: OutputPlan, *,
                info: dict | None = None) -> None:
    """Write the stage of frames 1..``last_frame``: metadata, /Mochi/Grains and its template clips.

    Built as a plain Sdf layer, never composed here (a composed stage would resolve the clip set, a
    cost that grows with the frame count), so its size and its cost do not depend on ``last_frame``.
    Replaced atomically.
    """
    Sdf, _, UsdGeom, _ = _pxr()
    layer = Sdf.Layer.CreateAnonymous(f"mochi{stage_path.suffix}")
    first, last = timing.time_code(1), timing.time_code(last_frame)
    layer.startTimeCode, layer.endTimeCode = first, last
    layer.timeCodesPerSecond = layer.framesPerSecond = timing.fps
    layer.pseudoRoot.SetInfo(UsdGeom.Tokens.metersPerUnit, UsdGeom.LinearUnits.meters)
    layer.pseudoRoot.SetInfo(UsdGeom.Tokens.upAxis, UsdGeom.Tokens.y if timing.up_axis == "Y" else UsdGeom.Tokens.z)
    root = Sdf.PrimSpec(layer, ROOT_PRIM.strip("/"), Sdf.SpecifierDef, "Xform")
    layer.defaultPrim = root.name
    points = Sdf.PrimSpec(root, POINTS_NAME, Sdf.SpecifierDef, "Points")
    # Clips supply values only: attributes (the primvars above all) must be declared in the stage.
    _declare_attributes(points, Sdf)
    folder = f"./{frames_folder(stage_path).name}"
    points.SetInfo("clips", {"default": {
        "primPath": CLIP_PRIM,
        "templateAssetPath": f"{folder}/{FRAME_LAYER_TEMPLATE}",
        "templateStartTime": float(first), "templateEndTime": float(last), "templateStride": 1.0,
        "manifestAssetPath": Sdf.AssetPath(f"{folder}/{CLIP_MANIFEST_NAME}"),
    }})
    layer.customLayerData = {STAGE_MARK: {"frames": last_frame, **(info or {})}}
    _export_atomic(layer, stage_path, plan)


def check_stage_name(stage_path: str | os.PathLike) -> Path:
    """``stage_path`` as a Path, if it names a USD file.

    Raises:
        MochiError: not a .usda, .usdc or .usd name.
    """
    stage_path = Path(stage_path)
    if stage_path.suffix.lower() not in STAGE_SUFFIXES:
        raise MochiError(f"'{stage_path}' must end in .usda, .usdc or .usd.")
    return stage_path


def export_files(stage_path: str | os.PathLike, time_codes: range) -> list[Path]:
    """Every file an export of the frames at ``time_codes`` writes: the stage, the clip manifest, the
    frame layers."""
    stage_path = check_stage_name(stage_path)
    return [stage_path, frames_folder(stage_path) / CLIP_MANIFEST_NAME,
            *(frame_layer_path(stage_path, time_code) for time_code in time_codes)]


def _previous_export(stage_path: Path, plan: OutputPlan) -> dict | None:
    """What the stage at ``stage_path`` was exported from (its Mochi mark), when Mochi wrote it; else None."""
    if not plan.proves(stage_path):
        return None
    Sdf, _, _, _ = _pxr()
    layer = None
    with contextlib.suppress(Exception):  # USD raises Tf errors of several kinds for damaged files
        layer = Sdf.Layer.OpenAsAnonymous(str(stage_path))
    mark = dict(layer.customLayerData).get(STAGE_MARK) if layer is not None else None
    return dict(mark) if mark is not None else None


def checked_frame(cache: Path, manifest: dict, frame: int) -> dict[str, np.ndarray]:
    """The columns of cache frame ``frame`` after proving it is the frame the bake wrote: its SHA-256
    is the manifest's, it holds the manifest's particle count and only finite positions, velocities and
    radii. Exports call this for every frame they read.

    Raises:
        MochiError: a frame that is damaged, edited, of another size or not finite.
    """
    path = frame_path(cache, frame)
    check_frame_digest(cache, manifest, frame, path.name)
    columns = read_frame(cache, frame)
    if len(columns["x"]) != manifest["particle_count"]:
        raise MochiError(f"Frame {frame} '{path}' holds {len(columns['x']):,} particles where the manifest lists "
                         f"{manifest['particle_count']:,} (damaged), so it is not exported.")
    if not all(np.isfinite(columns[k]).all() for k in ("x", "y", "z", "vx", "vy", "vz", "radius")):
        raise MochiError(f"Frame {frame} '{path}' holds non-finite positions, velocities or radii (damaged), so it "
                         "is not exported.")
    return columns


@dataclass
class UsdExport:
    """What an export did.

    Attributes:
        stage_path: The stage written.
        frames: Cache frames now in the stage (1..frames).
        written: Frame layers written by this call (the others were current already).
    """

    stage_path: Path
    frames: int = 0
    written: int = 0


def export_cache_to_usd(cache: str | os.PathLike, stage_path: str | os.PathLike, *, overwrite: bool = False,
                        overwrite_hint: str = OVERWRITE_HINT, log: Callable[[str], None] | None = None,
                        on_frame: Callable[[int, int], None] | None = None) -> UsdExport:
    """Export the complete frames of a bake cache to a USD stage, incrementally.

    A frame layer newer than its PLY frame, from an export of the same cache, is kept as it is, so
    calling this again while a bake runs (or from the bake's ``on_frame``, see ``UsdFollower``) writes
    only the frames that landed since. Layers of frames the cache no longer has (a bake redone
    shorter) are removed; exporting another cache to the same stage rewrites every layer.

    Args:
        cache: Cache folder (manifest.json + frame_NNNN.ply).
        stage_path: OUT.usda or OUT.usdc; its frame layers go to OUT_frames/.
        overwrite: Replace a stage, clip manifest or frame layer that Mochi cannot prove it wrote (a
            user's file or link under a name the export needs; engine.output_files).
        overwrite_hint: How a refusal says to allow that (the Blender operator names its option).
        log: Where one-line messages go.
        on_frame: Called as ``on_frame(frame, frames)`` after each frame is checked or written
            (progress bars).

    Raises:
        MochiError: no cache, no complete frame, a file under a name the export needs that Mochi cannot
            prove it wrote (before anything is written), usd-core missing, or a file that cannot be written.
    """
    cache, stage_path = Path(cache), check_stage_name(stage_path)
    manifest = read_manifest(cache) if cache.is_dir() else None
    if manifest is None:
        raise MochiError(f"'{cache}' is not a Mochi cache folder (no manifest.json).")
    frames = int(manifest.get("frames_completed", 0))
    if frames < 1:
        raise MochiError(f"The cache '{cache}' has no complete frame yet.")
    timing = UsdTiming.from_manifest(manifest)
    _pxr()  # usd-core missing: said before anything is written
    plan = plan_outputs(export_files(stage_path, range(timing.time_code(1), timing.time_code(frames) + 1)),
                        overwrite=overwrite, hint=overwrite_hint)
    previous = _previous_export(stage_path, plan)
    # Layers of another cache's export must not be mixed into this one: then every frame is rewritten.
    same_cache = previous is not None and previous.get("cache") == str(cache.resolve())
    folder = frames_folder(stage_path)
    if not plan.proves(folder / CLIP_MANIFEST_NAME):
        write_clip_manifest(folder / CLIP_MANIFEST_NAME, plan)
    result = UsdExport(stage_path, frames=frames)
    for frame in range(1, frames + 1):
        layer_path = frame_layer_path(stage_path, timing.time_code(frame))
        current = (same_cache and plan.proves(layer_path)
                   and layer_path.stat().st_mtime_ns >= frame_path(cache, frame).stat().st_mtime_ns)
        if not current:
            write_frame_layer(layer_path, timing.time_code(frame), frame_values(checked_frame(cache, manifest, frame)),
                              plan)
            result.written += 1
        if on_frame:
            on_frame(frame, frames)
    last_time = timing.time_code(frames)
    for stale in folder.glob("frame.*.usdc"):
        number = stale.name.split(".")[1]
        if number.isdigit() and int(number) > last_time:
            plan.remove_if_ours(stale)  # a layer of a longer export; anyone else's file stays
    write_stage(stage_path, timing, frames, plan, info={"cache": str(cache.resolve()),
                                                        "engine_version": manifest.get("engine_version", "")})
    if log:
        log(f"USD: frames 1–{frames} in '{stage_path}' ({result.written} frame layers written).")
    return result


@dataclass
class UsdFollower:
    """Exports frames to USD as a bake writes them: pass ``follower.on_frame`` as ``bake(on_frame=...)``.

    Each call exports the frames that landed since the last one (one layer each, plus the small stage).
    """

    cache: Path
    stage_path: Path
    overwrite: bool = False

    def on_frame(self, progress) -> None:
        export_cache_to_usd(self.cache, self.stage_path, overwrite=self.overwrite)
        self.overwrite = False  # replaced once, ours from then on


def follow_cache_to_usd(cache: str | os.PathLike, stage_path: str | os.PathLike, *, until: int | None = None,
                        idle_s: float = 60.0, poll_s: float = 0.5, overwrite: bool = False,
                        log: Callable[[str], None] | None = None) -> UsdExport:
    """Export a cache that another process is baking, frame by frame as they land.

    Polls the cache manifest (frames and manifest are written atomically, the manifest last, so every
    frame it names is complete) and exports whatever is new, until the cache has ``until`` frames or
    nothing new has landed for ``idle_s`` seconds (the bake ended or stopped).

    Raises:
        MochiError: as ``export_cache_to_usd``; a cache that has no frame yet is waited for.
    """
    import time

    cache = Path(cache)
    seen, last_change = 0, time.monotonic()
    result = UsdExport(Path(stage_path))
    while True:
        manifest = read_manifest(cache) if cache.is_dir() else None
        frames = int(manifest.get("frames_completed", 0)) if manifest else 0
        if frames != seen and frames >= 1:
            result = export_cache_to_usd(cache, stage_path, overwrite=overwrite and seen == 0)
            if log:
                log(f"USD: frames 1–{frames} in '{stage_path}'.")
            seen, last_change = frames, time.monotonic()
        if (until is not None and seen >= until) or time.monotonic() - last_change > idle_s:
            break
        time.sleep(poll_s)
    if seen == 0:
        raise MochiError(f"No frame landed in '{cache}' within {idle_s:g} s.")
    return result

"""Where the scene's bake stands, for the bake panel: idle, baking, baked (complete or not), out of date.

Blender's own caches are the model: a baked cache shows what it holds (frames, grains, size on disk,
time taken), Bake is greyed with the reason while a bake exists, Resume is offered only for an
incomplete bake, and a bake whose settings changed since is marked out of date, naming the change.

The panel draws often, so the state is kept until something changes: the scene (a depsgraph update,
counted by a handler), the manifest (its modification time) or the frame. Reading the scene again is
the snapshot a bake takes (``addon.snapshot``) less the colliders, which would step through frames;
it is skipped when the scene is animated and not at the bake's first frame, since the snapshot is taken
there.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import bpy

#: Fingerprint parts the panel compares with the bake's (the colliders are left to Resume's own check).
COMPARED_INPUTS = ("simulation", "domain", "sources")


@dataclass(frozen=True)
class BakeState:
    """The scene's bake as the panel shows it.

    Attributes:
        kind: 'IDLE' (nothing baked), 'BAKING', 'BAKED' or 'FOREIGN' (the folder holds another .blend's
            bake), or 'UNAVAILABLE' (no usable cache folder: ``reason`` says why).
        folder: Absolute cache folder, or None when there is none.
        frames: Frames in the cache.
        frames_total: Frames of the scene's bake range (what Resume bakes up to).
        grains: Grains in the bake.
        size_bytes: Size of the bake's files on disk [bytes].
        seconds: Time spent baking [s], or None when unknown.
        changed: '' when the scene is still as baked; else what changed, in words.
        reason: Why Bake cannot start now ('' when it can).
    """

    kind: str
    folder: Path | None = None
    frames: int = 0
    frames_total: int = 0
    grains: int = 0
    size_bytes: int = 0
    seconds: float | None = None
    changed: str = ""
    reason: str = ""

    @property
    def complete(self) -> bool:
        return self.frames >= self.frames_total > 0

    @property
    def out_of_date(self) -> bool:
        return bool(self.changed)


_revision = 0
_cached: tuple | None = None  # (key, BakeState)


@bpy.app.handlers.persistent
def _scene_changed(*_args):
    global _revision
    _revision += 1


def invalidate() -> None:
    """Forget the kept state (a bake ended, a bake was deleted)."""
    global _cached
    _cached = None


def manifest_seconds(manifest: dict) -> float | None:
    """Seconds from the bake's start (``bake_started``, written by the add-on) to the manifest's last
    update, or None when the manifest does not tell."""
    started, updated = manifest.get("bake_started"), manifest.get("updated")
    if not isinstance(started, (int, float)) or not isinstance(updated, str):
        return None
    try:
        end = datetime.strptime(updated, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return None
    return max(0.0, end - float(started))


def folder_size(folder: Path) -> int:
    """Bytes of the regular files directly in ``folder`` and in its ``.resume``/``colliders`` folders."""
    total = 0
    for sub in (folder, folder / ".resume", folder / "colliders"):
        try:
            with os.scandir(sub) as entries:
                total += sum(e.stat(follow_symlinks=False).st_size for e in entries
                             if e.is_file(follow_symlinks=False))
        except OSError:
            continue
    return total


def _scene_is_animated(scene) -> bool:
    return any(o.animation_data is not None or o.parent is not None or o.mochi.velocity_source == "ANIMATION"
               for o in scene.objects if o.mochi.role in {"SOURCE", "DOMAIN"})


def changes_since_bake(context, manifest: dict) -> str:
    """What differs between the scene now and the bake's stored inputs, in words ('' when nothing, or
    when it cannot be told cheaply: no stored inputs, an animated scene away from the first frame)."""
    from ..engine.digest import canonical, changes
    from ..engine.errors import MochiError
    from .snapshot import scene_blender_to_settings

    stored = manifest.get("inputs")
    scene = context.scene
    if not isinstance(stored, dict):
        return ""
    animated = _scene_is_animated(scene)
    if animated and scene.frame_current != scene.mochi.frame_start:
        return ""
    if any(o.mochi.velocity_source == "ANIMATION" for o in scene.objects if o.mochi.role == "SOURCE"):
        return ""  # its velocity is read at the next frame
    try:
        now = canonical(scene_blender_to_settings(context, frame_count=1, with_colliders=False).fingerprint())
    except MochiError as exc:
        return f"the scene cannot bake now ({exc})"
    differing = [key for key in COMPARED_INPUTS if stored.get(key) != now[key]]
    if not differing:
        return ""
    found = [changes(_readable(key, stored.get(key)), _readable(key, now[key])) for key in differing]
    return ", ".join(f for f in found if f) or "settings changed since the bake"


def _readable(key: str, value):
    """A fingerprint part as people read its differences: sources by object name ('Cube'.friction rather
    than sources[1].friction), floats to 6 significant digits (a float32 0.9 is 0.8999999761581421)."""
    if key == "sources" and isinstance(value, list):
        value = {f"'{item.get('name')}'": item for item in value if isinstance(item, dict)}
    elif key != "sources":
        value = {key: value}
    return _round(value)


def _round(value):
    if isinstance(value, float):
        return float(f"{value:.6g}")
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def _compute(context) -> BakeState:
    from ..engine.cache import read_manifest
    from ..engine.errors import MochiError
    from .bake_job import current_job
    from .bake_owner import cache_folder, check_bake_owner

    scene = context.scene
    if current_job() is not None:
        return BakeState("BAKING", reason="A bake is running.")
    try:
        folder = cache_folder(scene)
    except MochiError as exc:
        return BakeState("UNAVAILABLE", reason=str(exc))
    try:
        manifest = read_manifest(folder) if folder.is_dir() else None
    except MochiError as exc:
        return BakeState("UNAVAILABLE", folder=folder, reason=str(exc))
    if manifest is None or int(manifest.get("frames_completed", 0)) < 1:
        return BakeState("IDLE", folder=folder, frames_total=scene.mochi.frame_count())
    frames = int(manifest["frames_completed"])
    # Complete against the scene's range, which Resume bakes up to: raising the end frame after a bake
    # makes it incomplete, and Resume extends it.
    total = scene.mochi.frame_count()
    summary = dict(folder=folder, frames=frames, frames_total=total, grains=int(manifest.get("particle_count", 0)),
                   size_bytes=folder_size(folder), seconds=manifest_seconds(manifest))
    try:
        check_bake_owner(folder, manifest, scene)
    except MochiError as exc:
        return BakeState("FOREIGN", reason=str(exc), **summary)
    return BakeState("BAKED", changed=changes_since_bake(context, manifest),
                     reason="Delete the bake to bake again.", **summary)


def bake_state(context) -> BakeState:
    """The scene's bake state, computed again only when the scene, the manifest or the frame changed."""
    global _cached
    from .bake_job import current_job
    from .bake_owner import cache_directory_setting

    scene = context.scene
    raw = cache_directory_setting(scene)
    try:
        folder = Path(bpy.path.abspath(raw)) if raw else None
        mtime = (folder / "manifest.json").stat().st_mtime_ns if folder is not None else None
    except OSError:
        mtime = None
    key = (scene.name, scene.mochi.bake_token, bpy.data.filepath, raw, mtime, _revision, scene.frame_current,
           current_job() is None)
    if _cached is None or _cached[0] != key:
        try:
            state = _compute(context)
        except Exception as exc:  # noqa: BLE001 - a panel must draw; the state says what went wrong
            state = BakeState("UNAVAILABLE", reason=f"The bake's state cannot be read ({exc}).")
        _cached = (key, state)
    return _cached[1]


def human_size(size: int) -> str:
    """'12.3 MB' for a size in bytes."""
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000.0 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000.0
    return f"{value:.1f} TB"


def human_seconds(seconds: float) -> str:
    """'1 min 05 s', '42 s', '2 h 03 min'."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def summary_line(state: BakeState) -> str:
    """'4 of 4 frames, 152 grains, 1.2 MB, 3 s' for a baked state."""
    parts = [f"{state.frames} of {state.frames_total} frames" if not state.complete else f"{state.frames} frames",
             f"{state.grains:,} grains", human_size(state.size_bytes)]
    if state.seconds is not None:
        parts.append(human_seconds(state.seconds))
    return ", ".join(parts)


def register():
    if _scene_changed not in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.append(_scene_changed)


def unregister():
    invalidate()
    if _scene_changed in bpy.app.handlers.depsgraph_update_post:
        bpy.app.handlers.depsgraph_update_post.remove(_scene_changed)


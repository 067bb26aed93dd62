"""``mochi export CACHE --abc OUT.abc`` in a plain Python with the bpy module (no Blender executable).

    python <repo>/addon/export_alembic_cli.py CACHE_DIR OUT.abc [--overwrite]

Loads the extension as addon/headless.py does, makes an empty scene with a playback object for the
cache (turned to Z up as in Blender when the cache is Y up), and writes its frames with Blender's
Alembic exporter (addon/export_alembic.py). Errors print one sentence on stderr and exit with 2.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).resolve().parent
    # Running this file puts addon/ first on sys.path; its folders must not shadow top-level modules.
    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != here]
    overwrite = argv[2:] == ["--overwrite"]
    if len(argv) - overwrite != 2:
        print("usage: export_alembic_cli.py CACHE_DIR OUT.abc [--overwrite]", file=sys.stderr)
        return 2
    sys.path.insert(0, str(here))
    import headless  # addon/headless.py: loads the repository root as the package 'mochi'

    sys.path.pop(0)
    import bpy

    package = headless.load_package()
    from mochi.addon import playback  # noqa: E402  (the package exists only after load_package)
    from mochi.addon.export_alembic import export_playback_alembic
    from mochi.engine.cache import read_manifest
    from mochi.engine.errors import MochiError

    package.register()
    try:
        cache, out = Path(argv[0]), Path(argv[1])
        manifest = read_manifest(cache) if cache.is_dir() else None
        if manifest is None or int(manifest.get("frames_completed", 0)) < 1:
            raise MochiError(f"'{cache}' holds no Mochi bake with a complete frame.")
        bpy.ops.wm.read_homefile(use_empty=True, use_factory_startup=True)
        scene = bpy.context.scene
        first = int(manifest.get("frame_start_scene", 1))
        last = first + int(manifest["frames_completed"]) - 1
        scene.frame_start, scene.frame_end = first, last
        scene.render.fps = max(1, round(float(manifest["fps"])))
        obj = playback.ensure_playback_object(scene, str(cache.resolve()), start_frame=first,
                                              last_frame=int(manifest["frames_completed"]),
                                              up_axis=str(manifest.get("up_axis", "Y")))
        path = export_playback_alembic(bpy.context, obj, out, frame_start=first, frame_end=last,
                                       overwrite=overwrite, overwrite_hint="add --overwrite")
        print(f"Exported frames {first}–{last} of '{cache}' to '{path}' (grain centres and velocities).")
        return 0
    except MochiError as exc:
        print(f"mochi: error: {exc}", file=sys.stderr)
        return 2
    finally:
        package.unregister()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

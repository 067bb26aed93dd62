"""The demo's scene: a heap of the default look, and the bundled bunny packed above it, as a preset.

    python scripts/demo_scene.py --out out/demo      # → out/demo/heap.ply, out/demo/demo.toml

The heap is made the way docs/looks.md measures a look (benchmarks/looks_repose.py): a column of the
default look's grains settles, is released on the floor and stands as a heap, whose angle is printed.
Its grains are written as a PLY (``x y z radius``), and the preset ``demo.toml`` puts them back as a
file emitter under the bunny (presets/bunny.obj), which ``mochi bake`` packs into two-radius grains of
the same look (``radius`` and ``small_ratio``) and drops onto the heap's top. Engine coordinates are y
up, as in every bundled preset.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.looks_repose import run_heap  # noqa: E402
from engine.looks import DEFAULT_LOOK, look  # noqa: E402
from engine.ply import write_points  # noqa: E402

#: Heap column in grain diameters (radius, height): ~3,300 grains, a heap ~45 diameters across.
HEAP_COLUMN = (10.0, 11.0)
#: Bunny size (largest bounding-box edge) [m] and the gap between the heap's top and its lowest point [m].
BUNNY_FIT = 0.19
BUNNY_GAP = 0.03
#: Frames at 25 fps: the bunny lands at ~0.1 s and the heap is still again by ~0.8 s.
FPS, FRAMES = 25, 30


def heap(entry, *, seed: int = 0) -> dict:
    """Settle and release a column of ``entry``'s grains (``looks_repose.run_heap``); its result dict."""
    return run_heap(entry, seed=seed, column_radius=HEAP_COLUMN[0], column_height=HEAP_COLUMN[1])


def preset_text(entry, *, heap_file: str, heap_top: float, reach: float) -> str:
    """The demo preset: the look's material, the heap as a file emitter, the bunny packed above it."""
    m = entry.material
    bunny_y = heap_top + BUNNY_GAP + 0.5 * BUNNY_FIT * 0.8  # the bunny is ~0.8 of its fit tall
    name = entry.label.lower()
    return f"""# Written by scripts/demo_scene.py: a {name} bunny dropped onto a {name} heap.
[scene]
name = "Bunny onto a heap"
description = "The bundled bunny, packed into two-radius grains of one look, lands on a heap of the same grains."
fps = {FPS}
frames = {FRAMES}
seed = 1

[time]
dt = "auto"
stiffness = "auto"

[[materials]]
name = "{entry.key}"
density = {m.density}
restitution = {m.restitution}
friction = {m.friction}
rolling_friction = {m.rolling_friction}
cohesion = {m.cohesion}

[domain]
lo = [{-reach:.4f}, 0, {-reach:.4f}]
hi = [{reach:.4f}, {bunny_y + 0.6 * BUNNY_FIT:.4f}, {reach:.4f}]
wall_restitution = {m.restitution}
wall_friction = {m.friction}
wall_rolling_friction = {m.rolling_friction}

[gravity]
vector = [0, -9.81, 0]

[[emitters]]
type = "file"
path = "{heap_file}"
material = "{entry.key}"
object_id = 0

[[emitters]]
type = "mesh"
path = "{(REPO / 'presets' / 'bunny.obj').as_posix()}"
radius = {entry.radius}
small_ratio = {entry.small_ratio}
fit = {BUNNY_FIT}
center = [0, {bunny_y:.4f}, 0]
rotation = [0, -30, 0]
material = "{entry.key}"
object_id = 1
"""


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "out" / "demo")
    parser.add_argument("--look", default=DEFAULT_LOOK)
    args = parser.parse_args(argv)
    entry = look(args.look)
    args.out.mkdir(parents=True, exist_ok=True)

    began = time.perf_counter()
    result = heap(entry)
    positions, radii = result["positions"], result["radii"]
    print(f"Heap of {entry.label.lower()}: {len(radii):,} grains stand at {result['angle_deg']:.0f}° "
          f"({time.perf_counter() - began:.0f} s)", flush=True)
    write_points(args.out / "heap.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                         "radius": radii})
    top = float((positions[:, 1] + radii).max())
    spread = float(np.hypot(positions[:, 0], positions[:, 2]).max())
    reach = max(spread * 1.6, 0.3)  # room for the bunny's grains to run down the heap
    (args.out / "demo.toml").write_text(preset_text(entry, heap_file="heap.ply", heap_top=top, reach=reach))
    print(f"Scene: {args.out / 'demo.toml'}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

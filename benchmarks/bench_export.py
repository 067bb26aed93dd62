"""USD export cost per frame, beside the PLY frame the cache itself writes (issue 20).

For each particle count: a synthetic frame (grains at random in a unit box, radii 4–5 mm, the cache's
dtypes) is written ``--repeat`` times as the bake writes it (engine.cache.CacheWriter's PLY, the peer)
and as the USD export writes it (one crate layer per frame, engine.export.usd.write_frame_layer). The
stage is then written for a bake of 1, 100 and 10,000 frames to show that its size and cost do not
grow with the number of frames (template value clips: only the end time changes).

    python benchmarks/bench_export.py --json benchmarks/results/export_usd_run1.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def synthetic_columns(count: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """One cache frame's columns (engine.cache.FRAME_PROPERTIES, the cache's dtypes)."""
    xyz = rng.random((count, 3), dtype=np.float32)
    v = rng.normal(size=(count, 3)).astype(np.float32)
    return {"x": xyz[:, 0], "y": xyz[:, 1], "z": xyz[:, 2],
            "radius": rng.uniform(0.004, 0.005, count).astype(np.float32),
            "vx": v[:, 0], "vy": v[:, 1], "vz": v[:, 2], "id": np.arange(count, dtype=np.int32),
            "object_id": np.zeros(count, np.int32), "material": np.zeros(count, np.uint8),
            "active": np.ones(count, np.uint8)}


def timed(function, repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        began = time.perf_counter()
        function()
        times.append(time.perf_counter() - began)
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--particles", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()

    from pxr import Usd

    from engine.export.usd import UsdTiming, frame_values, write_frame_layer, write_stage
    from engine.ply import write_points

    rng = np.random.default_rng(20)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        for count in args.particles:
            columns = synthetic_columns(count, rng)
            ply = timed(lambda: write_points(folder / "frame_0001.ply", columns), args.repeat)
            usd = timed(lambda: write_frame_layer(folder / "frame.0001.usdc", 1, frame_values(columns)),
                        args.repeat)
            row = {"particles": count, "ply_ms_median": 1e3 * statistics.median(ply),
                   "usd_layer_ms_median": 1e3 * statistics.median(usd),
                   "ply_bytes": (folder / "frame_0001.ply").stat().st_size,
                   "usd_layer_bytes": (folder / "frame.0001.usdc").stat().st_size,
                   "ply_ms": [1e3 * t for t in ply], "usd_layer_ms": [1e3 * t for t in usd]}
            rows.append(row)
            print(f"{count:>9,} particles: PLY frame {row['ply_ms_median']:8.1f} ms ({row['ply_bytes'] / 1e6:6.1f} MB), "
                  f"USD frame layer {row['usd_layer_ms_median']:8.1f} ms ({row['usd_layer_bytes'] / 1e6:6.1f} MB)")
        stages = []
        for frames in (1, 100, 10_000):
            path = folder / "grains.usda"
            times = timed(lambda: write_stage(path, UsdTiming(fps=24.0), frames), args.repeat)
            stages.append({"frames": frames, "stage_bytes": path.stat().st_size,
                           "stage_ms_median": 1e3 * statistics.median(times)})
            print(f"stage of {frames:>6,} frames: {stages[-1]['stage_bytes']} bytes, "
                  f"{stages[-1]['stage_ms_median']:.2f} ms")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "benchmark": "export_usd", "machine": platform.processor() or platform.machine(),
            "python": platform.python_version(), "usd": ".".join(map(str, Usd.GetVersion())),
            "repeat": args.repeat, "frames": rows, "stages": stages}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())

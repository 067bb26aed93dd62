"""How fast a packing stops when asked, and what its chunking costs (issue 44 point 3).

1. Esc: the Stanford bunny packed into about ``--grains`` spheres (4.1 million by default, the size an
   artist cancelled in vain) in a worker thread, as Blender's Pack runs it, with an
   ``engine.packing.PackProgress``; a cancel is requested ``--cancel-after`` seconds after the start
   (one packing per delay); recorded: the seconds from the request to the worker's end, and the stage
   it was in. Before the chunking, a cancel was seen only between sources: after the whole packing.
2. Cost: the same packing of about ``--ab-grains`` spheres without and with a progress object,
   alternated ``--repeat`` times (the same bits each time).

    PYTHONPATH=. .venv/bin/python benchmarks/pack_cancel.py [--json benchmarks/results/pack_cancel.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

BUNNY = ROOT / "presets" / "bunny.obj"
#: Spheres of the paper's bunny at r = 5 mm in a 0.5 m box (benchmarks/bench_packing.py): count ∝ r⁻³.
PAPER_COUNT, PAPER_RADIUS = 82_337, 0.005


def radius_for(grains: float) -> float:
    return PAPER_RADIUS * (PAPER_COUNT / grains) ** (1.0 / 3.0)


def cancel_latency(grains: float, after: float) -> dict:
    from engine.packing import PackCancelled, PackProgress, pack_mesh_file

    progress = PackProgress()
    outcome = {}

    def work():
        try:
            outcome["count"] = pack_mesh_file(BUNNY, radius=radius_for(grains), fit=0.5, progress=progress).particle_count
        except PackCancelled:
            outcome["cancelled"] = True

    thread = threading.Thread(target=work)
    began = time.perf_counter()
    thread.start()
    thread.join(after)
    stage = progress.line()
    requested = time.perf_counter()
    progress.request_cancel()
    thread.join()
    return {"cancel_after_s": after, "stage_at_request": stage, "chunks": progress.chunks,
            "request_to_stop_s": round(time.perf_counter() - requested, 3),
            "finished_before_request": "count" in outcome, "packing_s": round(requested - began, 3)}


def chunking_cost(grains: float, repeat: int) -> dict:
    from engine.packing import PackProgress, pack_mesh_file

    radius = radius_for(grains)
    reference = pack_mesh_file(BUNNY, radius=radius, fit=0.5)  # compiles or loads the kernels
    plain, chunked = [], []
    for _ in range(repeat):
        for times, progress in ((plain, None), (chunked, PackProgress())):
            began = time.perf_counter()
            result = pack_mesh_file(BUNNY, radius=radius, fit=0.5, progress=progress)
            times.append(time.perf_counter() - began)
            assert result.positions.tobytes() == reference.positions.tobytes()
    return {"grains": reference.particle_count, "plain_s": [round(t, 3) for t in plain],
            "chunked_s": [round(t, 3) for t in chunked],
            "median_ratio": round(statistics.median(chunked) / statistics.median(plain), 3)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--grains", type=float, default=4.1e6)
    parser.add_argument("--cancel-after", type=float, nargs="+", default=[2.0, 6.0, 15.0, 30.0])
    parser.add_argument("--ab-grains", type=float, default=8.5e5)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    load_before = list(os.getloadavg())
    cost = chunking_cost(args.ab_grains, args.repeat)
    print(f"chunking cost: {cost['grains']:,} spheres, plain {cost['plain_s']} s, with progress "
          f"{cost['chunked_s']} s, median ratio {cost['median_ratio']}", flush=True)
    cancels = []
    for after in args.cancel_after:
        row = cancel_latency(args.grains, after)
        cancels.append(row)
        print(f"cancel {after:>5.1f} s into a {args.grains:,.0f}-sphere packing ({row['stage_at_request']}): "
              f"stopped {row['request_to_stop_s']:.3f} s after the request", flush=True)
    result = {"benchmark": "pack_cancel", "cpus": os.cpu_count(), "load_average_before": load_before,
              "load_average_after": list(os.getloadavg()), "chunking_cost": cost, "cancels": cancels}
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

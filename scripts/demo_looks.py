"""The heap of every look, baked and rendered side by side for docs/looks.md.

    python scripts/demo_looks.py --out out/looks      # → out/looks/<key>/ caches, docs/looks_heaps.png

Each look's column (``benchmarks/looks_repose.py``: settled, then released on an open floor) is baked
for 1 s into a cache with ``engine.bake.bake``, its last frame is measured with the same estimator as
the table of docs/looks.md, and rendered with the demo's renderer (scripts/demo_render.py: the add-on's
geometry-nodes playback, a ground, a sun with shadows, Cycles on the CPU). The stills are tiled into
one image with each look's name and measured angle.
"""

from __future__ import annotations

import argparse
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from benchmarks.looks_repose import heap_angle, release_setup, settled_column  # noqa: E402
from engine.bake import bake  # noqa: E402
from engine.cache import read_frame  # noqa: E402
from engine.looks import list_looks  # noqa: E402

FRAMES = 26  # 1 s at 25 fps after the release, as the table's heaps


def bake_heap(entry, folder: Path) -> dict:
    """Bake ``entry``'s heap into ``folder``; the measured heap of its last frame."""
    positions, radii = settled_column(entry)
    bake(release_setup(entry, positions, radii), folder, frames=FRAMES, overwrite=True)
    c = read_frame(folder, FRAMES)
    keep = c["active"].astype(bool)
    p = np.stack([c["x"], c["y"], c["z"]], 1)[keep]
    return {**heap_angle(p, c["radius"][keep]), "kept": int(keep.sum()), "grains": len(keep)}


def tile(images: list[Path], labels: list[str], out: Path, *, columns: int = 3) -> Path:
    from PIL import Image, ImageDraw

    tiles = [Image.open(path).convert("RGB") for path in images]
    w, h = tiles[0].size
    sheet = Image.new("RGB", (columns * w, math.ceil(len(tiles) / columns) * h), (255, 255, 255))
    for index, (image, label) in enumerate(zip(tiles, labels)):
        ImageDraw.Draw(image).text((10, 8), label, fill=(20, 20, 20))
        sheet.paste(image, ((index % columns) * w, (index // columns) * h))
    sheet.save(out, optimize=True)
    return out


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "out" / "looks")
    parser.add_argument("--image", type=Path, default=REPO / "docs" / "looks_heaps.png")
    args = parser.parse_args(argv)
    stills, labels = [], []
    for entry in list_looks():
        folder = args.out / entry.key
        heap = bake_heap(entry, folder / "cache")
        angle = "flat" if math.isnan(heap["angle_deg"]) else f"{heap['angle_deg']:.0f}°"
        print(f"{entry.label}: {angle}, {heap['kept']:,} of {heap['grains']:,} grains kept", flush=True)
        subprocess.run([sys.executable, str(REPO / "scripts" / "demo_render.py"), str(folder / "cache"),
                        "--out", str(folder), "--still-only", "--name", entry.key, "--size", "200", "150",
                        "--samples", "16"], check=True, stdout=subprocess.DEVNULL)
        stills.append(folder / f"{entry.key}.png")
        labels.append(f"{entry.label}: {angle}")
    print(f"Looks: {tile(stills, labels, args.image)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

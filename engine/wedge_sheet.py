"""The contact sheet of a wedge: the last frame of every variant, side by side, in one PNG.

Drawn with matplotlib's Agg backend (no display, no GPU, no Blender), so it runs on any farm node and
in CI; the Cycles preview (``mochi render-preview``) is the one to use for a look at the shading.
Each tile is an orthographic side view: horizontal x, vertical the up axis (y for presets, z for
Blender bakes), every grain a disc of its true radius, far grains drawn first and darker. All tiles
share one scale, so the variants compare at a glance.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from .cache import read_frame, read_manifest
from .errors import MochiError
from .wedge import WedgeVariant

#: The contact sheet's file name in the wedge folder.
CONTACT_SHEET_NAME = "contact_sheet.png"
#: Tile size in inches at ``DPI`` (a 3 × 4 wedge gives a 1200 × 900-pixel sheet).
TILE_INCHES = 3.0
DPI = 100


def _side_view(columns: dict[str, np.ndarray], up_axis: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(horizontal, vertical, depth) coordinates [m] of the grains, shape (n,) each; depth grows
    away from the viewer."""
    x, y, z = columns["x"], columns["y"], columns["z"]
    return (x, y, -z) if up_axis == "Y" else (x, z, y)


def last_frame_view(folder: Path) -> dict | None:
    """The last complete frame of a cache as a side view, or None when there is none.

    Returns:
        {'h', 'v', 'depth', 'radius': arrays (n,) [m], 'frame': int}.
    """
    manifest = read_manifest(folder) if folder.is_dir() else None
    frames = int(manifest.get("frames_completed", 0)) if manifest else 0
    if frames < 1:
        return None
    columns = read_frame(folder, frames)
    active = columns["active"].astype(bool)
    h, v, depth = _side_view(columns, str(manifest.get("up_axis", "Y")).upper())
    return {"h": h[active], "v": v[active], "depth": depth[active], "radius": columns["radius"][active],
            "frame": frames}


def render_contact_sheet(variants: list[WedgeVariant], out: str | Path, plan, *, title: str = "") -> Path:
    """Write the contact sheet of ``variants`` (their last frames) to the PNG ``out``.

    Variants without a frame get a tile that says so.

    Args:
        plan: The ``engine.output_files.OutputPlan`` that names ``out`` (checked before the bakes: a user's
            file there is not replaced without --overwrite).

    Raises:
        MochiError: matplotlib missing, or ``out`` cannot be written.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")  # before pyplot: no display on a farm node
        from matplotlib import pyplot
        from matplotlib.collections import EllipseCollection
    except ImportError:
        raise MochiError("The contact sheet needs matplotlib; install it with: pip install 'mochi-dem[wedge]'.") from None
    views = [last_frame_view(variant.folder) for variant in variants]
    drawn = [view for view in views if view is not None and len(view["h"])]
    if drawn:
        lo = np.array([min(float((w["h"] - w["radius"]).min()) for w in drawn),
                       min(float((w["v"] - w["radius"]).min()) for w in drawn)])
        hi = np.array([max(float((w["h"] + w["radius"]).max()) for w in drawn),
                       max(float((w["v"] + w["radius"]).max()) for w in drawn)])
        margin = 0.05 * float(max(hi - lo)) + 1e-6
        lo, hi = lo - margin, hi + margin
    columns = math.ceil(math.sqrt(len(variants)))
    rows = math.ceil(len(variants) / columns)
    figure, axes = pyplot.subplots(rows, columns, figsize=(TILE_INCHES * columns, TILE_INCHES * rows),
                                   dpi=DPI, squeeze=False)
    colormap = matplotlib.colormaps["copper"]
    for tile, (ax, variant, view) in enumerate(zip(axes.flat, variants, views)):
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_aspect("equal")
        if view is None or not len(view["h"]):
            ax.text(0.5, 0.5, "no frame baked" if view is None else "no grain left", ha="center", va="center",
                    transform=ax.transAxes)
            ax.set_title(variant.label, fontsize=9)
            continue
        order = np.argsort(-view["depth"])  # far first, so near grains cover them
        depth = view["depth"][order]
        shade = 1.0 - (depth - depth.min()) / max(float(np.ptp(depth)), 1e-12)  # near = bright
        diameters = 2.0 * view["radius"][order]
        discs = EllipseCollection(diameters, diameters, np.zeros_like(diameters), units="xy",
                                  offsets=np.stack([view["h"][order], view["v"][order]], axis=1),
                                  offset_transform=ax.transData, facecolors=colormap(0.25 + 0.7 * shade),
                                  edgecolors="none")
        ax.add_collection(discs)
        ax.set_xlim(lo[0], hi[0])
        ax.set_ylim(lo[1], hi[1])
        ax.set_title(f"{variant.label}  (frame {view['frame']})", fontsize=9)
    for ax in list(axes.flat)[len(variants):]:
        ax.axis("off")
    if title:
        figure.suptitle(title)
    figure.tight_layout()
    try:
        return plan.write(out, lambda handle: figure.savefig(handle, format="png", dpi=DPI))
    finally:
        pyplot.close(figure)

"""Point-cloud PLY files (binary little-endian), read and written through plyfile.

The cache, ``mochi contacts``, ``mochi bench --state`` and ``mochi pack`` all use this one module.
Blender's geometry-nodes 'Import PLY' reads these files directly, every vertex property becoming a
point attribute.
"""

from __future__ import annotations

import io
import os
from pathlib import Path

import numpy as np
from plyfile import PlyData, PlyElement, PlyListProperty

from .atomic import write_atomic
from .errors import MochiError
from .state import check_particles


def write_points(path: str | os.PathLike, columns: dict[str, np.ndarray]) -> None:
    """Write one 'vertex' element with the given 1-D columns, atomically.

    The file is written beside its destination under a temporary name, flushed to disk and renamed,
    so a reader (or a killed bake) only ever sees complete files.

    Args:
        path: Destination .ply.
        columns: Property name → array of shape (point_count,); dtypes are kept (float32, int32,
            uint8...).

    Raises:
        MochiError: the folder cannot be written.
    """
    data = encode_points(columns)
    write_atomic(Path(path), lambda handle: handle.write(data))


def encode_points(columns: dict[str, np.ndarray]) -> bytes:
    """The bytes of the binary little-endian PLY ``write_points`` writes for ``columns`` (a bake records
    their digest in its manifest before it writes them)."""
    count = len(next(iter(columns.values())))
    table = np.empty(count, dtype=[(name, np.asarray(col).dtype.str) for name, col in columns.items()])
    for name, col in columns.items():
        table[name] = col
    buffer = io.BytesIO()
    PlyData([PlyElement.describe(table, "vertex")], byte_order="<").write(buffer)
    return buffer.getvalue()


#: Bytes a PLY header may take before 'end_header'.
_HEADER_MAX_BYTES = 1 << 16


def _check_vertex_count(path: Path) -> None:
    """Refuse a PLY whose header claims more vertices than its file could hold (one byte each at the
    least), before anything that large is allocated.

    Raises:
        MochiError: naming the claimed count and the file size.
    """
    with open(path, "rb") as handle:
        header = handle.read(_HEADER_MAX_BYTES)
    end = header.find(b"end_header")
    for line in header[:end if end >= 0 else None].splitlines():
        words = line.split()
        if len(words) == 3 and words[0] == b"element" and words[1] == b"vertex" and words[2].isdigit():
            claimed, size = int(words[2]), path.stat().st_size
            if claimed > size:
                raise MochiError(f"'{path}' claims {claimed:,} vertices in {size:,} bytes (damaged or not a point "
                                 "PLY).")


def read_points(path: str | os.PathLike, required: tuple[str, ...] = ("x", "y", "z", "radius")) -> dict[str, np.ndarray]:
    """Read the 'vertex' element of a PLY file as property name → 1-D array.

    Raises:
        MochiError: missing file, not a PLY, no vertex element, or a required property missing.
    """
    path = Path(path)
    if not path.is_file():
        raise MochiError(f"The file '{path}' does not exist.")
    _check_vertex_count(path)
    try:
        data = PlyData.read(str(path))
        vertex = data["vertex"]
        names = [p.name for p in vertex.properties]
        lists = [p.name for p in vertex.properties if isinstance(p, PlyListProperty)]
        if lists:
            raise MochiError(f"'{path}' has the list property '{lists[0]}' on its vertices; a point PLY holds one "
                             "number per property and vertex.")
        columns = {name: np.asarray(vertex[name]) for name in names}
    except MochiError:
        raise
    except KeyError:
        raise MochiError(f"'{path}' has no 'vertex' element, so it holds no particles.") from None
    except MemoryError:
        raise MochiError(f"'{path}' claims more vertices than this machine can hold; it is not a readable PLY "
                         "file.") from None
    except Exception as exc:  # plyfile raises many types for malformed input
        raise MochiError(f"'{path}' is not a readable PLY file ({exc}).") from None
    missing = [name for name in required if name not in columns]
    if missing:
        raise MochiError(f"'{path}' lacks the vertex properties {', '.join(missing)} "
                         f"(it has {', '.join(names) or 'none'}).")
    return columns


def read_particles(path: str | os.PathLike, *, spins: bool = False) -> tuple:
    """Positions (n, 3) float32 [m], radii (n,) float32 [m] and velocities (n, 3) float32 [m/s] or
    None, from a PLY with x y z radius and optional vx vy vz; with ``spins``, a fourth item: the angular
    velocities (n, 3) float32 [rad/s] of optional wx wy wz columns (a Mochi cache frame has them), or None.

    Raises:
        MochiError: as ``read_points``, plus no points, or a position or radius a simulation cannot hold
            (``engine.state.check_particles``: NaN, beyond ±10⁶ m, a radius outside 10⁻⁸–10³ m).
    """
    cols = read_points(path)
    positions = np.stack([cols["x"], cols["y"], cols["z"]], axis=1).astype(np.float32)
    radius = cols["radius"].astype(np.float32)
    if positions.shape[0] == 0:
        raise MochiError(f"'{path}' holds no particles.")
    check_particles(positions, radius, f"'{path}'")
    velocities = None
    if all(name in cols for name in ("vx", "vy", "vz")):
        velocities = np.stack([cols["vx"], cols["vy"], cols["vz"]], axis=1).astype(np.float32)
    if not spins:
        return positions, radius, velocities
    angular = None
    if all(name in cols for name in ("wx", "wy", "wz")):
        angular = np.stack([cols["wx"], cols["wy"], cols["wz"]], axis=1).astype(np.float32)
    return positions, radius, velocities, angular

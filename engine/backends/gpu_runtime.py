"""What the GPU backends share: lazy CuPy/optix imports, kernel compilation, struct mirrors, and the
particle arrays on the device with their launchers (integration, Morton reorder, bucket sort).

Nothing here imports CuPy or optix at module import time, so ``import engine.backends`` works without
a GPU. Kernels live in ``kernels/`` (``engine.resources.data_dir``): ``<name>.h`` holds the structs shared
with this module (mirrored below as numpy dtypes and checked against the header by
tests/engine/test_kernels_compile.py), ``<name>.cu`` the code. CUDA kernels are compiled with NVRTC
through ``cupy.RawModule`` (CuPy caches the binaries on disk, keyed by the source, which is why local
includes are expanded here first); OptiX programs are compiled with NVRTC to PTX and cached under
``kernel_cache_dir()``.

Device layout of the particles (slot order, see ``DeviceParticles``): ``pos`` float4 (x, y, z, radius),
``vel`` float4 (vx, vy, vz, mass), ``force`` float4, ``info`` uint32 (active bit | material << 8); with
rotation (``Physics.rotation``) also ``omega`` float4 (ωx, ωy, ωz, moment of inertia), ``torque`` and
``orientation`` (w, x, y, z) float4, and with velocity Verlet the last step's accelerations ``accel``
and ``alpha``. Histories live by model index: springs and, beside them, rolling histories (rows, see
engine.backends.gpu_springs), wall springs and rolling histories, glue bond states (engine.bonds).
The paper's model (no rotation, Euler, no rolling, cohesion or bonds) runs the kernels' original path
and keeps its bits.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

import numpy as np

from ..contact_law import TANGENTIAL_STIFFNESS_RATIO
from ..errors import MochiError, SimulationDiverged
from ..fields import uniform_acceleration
from ..local_origin import local_to_world, round_to_world, world_to_local
from ..model import Model
from ..resources import data_dir
from ..state import State
from .gpu_springs import SPRING_SLOTS, SpringRows  # noqa: F401  (SPRING_SLOTS: part of this API)
from .prepared_physics import prepare_physics


#: Folder of the CUDA/OptiX sources.
KERNEL_DIR = data_dir("kernels")
#: Threads per block of every CUDA kernel launched here.
BLOCK = 256
#: Threads and items per block of the prefix sum (SCAN_THREADS, SCAN_ITEMS in kernels/dem_common.cu).
SCAN_THREADS = 256
SCAN_ITEMS = 1024
#: Bits per axis of the Morton key used to reorder particles at rebuilds (2^21 buckets).
MORTON_BITS = 7
INFO_ACTIVE = 1
INFO_MATERIAL_SHIFT = 8
DIAG_COUNT = 4
DIAG_SPRING_OVERFLOW = 3
INT_MAX = 2**31 - 1

#: Host mirror of ``struct DemParams`` (kernels/dem_params.h).
DEM_PARAMS_DTYPE = np.dtype({
    "names": ["pos", "vel", "force", "info", "beta", "mu", "wall_beta", "wall_mu", "field_table",
              "field_grid", "diag", "lo", "hi", "stiffness", "dt", "speed_limit2", "particle_count",
              "material_count", "field_count", "wall_mask", "cell_size", "inv_cell_size", "table_mask",
              "grid_bits_x", "grid_bits_y", "grid_bits_z", "springs", "wall_springs", "slot_to_model",
              "spring_parity", "spring_model", "tangential_ratio", "omega", "torque", "orientation", "accel",
              "alpha", "rolling", "wall_rolling", "rolling_mu", "cohesion", "wall_rolling_mu", "wall_cohesion",
              "history_dt", "model_to_slot", "bond_start", "bond_other", "bond_index", "bond_pairs", "bond_props",
              "bond_state", "clump_of", "clump_start", "clump_members", "clump_offset", "clump_mass",
              "clump_inertia_inv", "clump_body", "rotation", "integrator", "rolling_model", "cohesion_model",
              "bond_count", "clump_count"],
    "formats": ["u8"] * 11 + [("f8", (3,)), ("f8", (3,)), "f4", "f4", "f4", "i4", "i4", "i4", "i4", "f4", "f4",
                              "u4", "u4", "u4", "u4"] + ["u8"] * 4 + ["i4", "f4"] + ["u8"] * 26 + ["i4"] * 6,
}, align=True)
#: DemParams::integrator (DEM_INTEGRATOR_* in kernels/dem_params.h).
INTEGRATORS = {"euler": 0, "verlet": 1}

#: Host mirror of ``struct OptixDemParams`` (kernels/dem_params.h).
OPTIX_DEM_PARAMS_DTYPE = np.dtype({
    "names": ["dem", "handle", "pairs", "pair_count", "pair_capacity", "mode", "ray_tmax", "pad"],
    "formats": [DEM_PARAMS_DTYPE, "u8", "u8", "u8", "u4", "i4", "f4", "i4"],
}, align=True)

#: Host mirror of ``struct ColliderParams`` (kernels/dem_params.h).
COLLIDER_PARAMS_DTYPE = np.dtype({
    "names": ["vertices", "vertex_velocity", "displacement", "triangles", "order", "box_lo", "box_hi", "left",
              "start", "count", "beta", "mu", "restitution", "old_pos", "corrections", "springs", "normals",
              "contact_count", "half_thickness", "stiffness", "dt", "tangential_ratio", "spring_model"],
    "formats": ["u8"] * 18 + ["f8", "f8", "f8", "f8", "i4"],
}, align=True)


class GpuUnavailable(MochiError):
    """A GPU backend cannot start here; the message says why in one sentence."""


def import_cupy():
    """CuPy with a usable CUDA device, or ``GpuUnavailable`` naming what is missing."""
    try:
        import cupy
    except ImportError as exc:
        raise GpuUnavailable(f"The GPU backends need CuPy (pip install cupy-cuda13x or cupy-cuda12x); "
                             f"importing it failed: {exc}.") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver, or a driver too old for CuPy
        raise GpuUnavailable(f"CuPy found no usable NVIDIA driver or GPU ({exc}).") from None
    if count == 0:
        raise GpuUnavailable("CuPy found no NVIDIA GPU.")
    return cupy


def import_optix():
    """The pyoptix module, or ``GpuUnavailable`` (e.g. a driver older than the OptiX ABI it needs)."""
    try:
        import optix
    except ImportError as exc:
        hint = (" The driver is older than the OptiX version of the installed pyoptix-contrib wheel "
                "(OptiX 9.1 needs an R590 or newer driver)." if "ABI" in str(exc) else "")
        raise GpuUnavailable(f"The OptiX backend needs pyoptix-contrib; importing optix failed: {exc}.{hint}") from None
    return optix


def device_summary(cupy) -> tuple[str, tuple[int, int]]:
    """(name, (major, minor) compute capability) of the current device."""
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return name, (int(props["major"]), int(props["minor"]))


def kernel_cache_dir() -> Path:
    """Folder of compiled OptiX programs ($MOCHI_KERNEL_CACHE or ~/.cache/mochi/kernels)."""
    path = Path(os.environ.get("MOCHI_KERNEL_CACHE", Path.home() / ".cache" / "mochi" / "kernels"))
    path.mkdir(parents=True, exist_ok=True)
    return path


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$", re.M)


def kernel_source(name: str, *, _seen: set | None = None) -> str:
    """Text of kernels/``name`` with its local ``#include "..."`` files expanded (each once)."""
    seen = set() if _seen is None else _seen
    if name in seen:
        return ""
    seen.add(name)
    # Each file is inlined once, so its include guard would only make compilers warn in the main file.
    text = _PRAGMA_ONCE.sub("", (KERNEL_DIR / name).read_text(encoding="utf-8"))
    return _INCLUDE.sub(lambda m: kernel_source(m.group(1), _seen=seen), text)


def cuda_include_dirs() -> list[str]:
    """CUDA toolkit include folders that exist here (NVRTC needs them for the OptiX headers)."""
    found = []
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").is_file():
            found.append(str(Path(root) / "include"))
    return found[:1]


def compile_ptx(source: str, options: list[str], *, name: str = "program.cu") -> bytes:
    """PTX of ``source`` compiled with NVRTC (through CuPy's binding), cached on disk by content."""
    from cupy_backends.cuda.libs import nvrtc

    key = hashlib.sha256("\0".join([source, *options, str(nvrtc.getVersion())]).encode()).hexdigest()[:32]
    cached = kernel_cache_dir() / f"{key}.ptx"
    if cached.is_file():
        return cached.read_bytes()
    prog = nvrtc.createProgram(source, name, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError as exc:
            raise RuntimeError(f"NVRTC failed on {name}: {exc}\n{nvrtc.getProgramLog(prog)}") from None
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    ptx = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    ptx = ptx.rstrip(b"\0")
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(ptx)
    os.replace(tmp, cached)
    return ptx


_MODULES: dict[str, object] = {}


def raw_module(name: str, *, defines: tuple[str, ...] = (), options: tuple[str, ...] = ()):
    """``cupy.RawModule`` of kernels/``name`` with ``-D`` ``defines`` and further NVRTC ``options``
    (compiled once per process, cached on disk by CuPy)."""
    key = "\0".join((name, *defines, *options))
    if key not in _MODULES:
        import cupy

        options = ("-std=c++17", *(f"-D{d}" for d in defines), *options)
        _MODULES[key] = cupy.RawModule(code=kernel_source(name), options=options)
    return _MODULES[key]


def uses_springs(physics) -> bool:
    """True when the grains and walls need tangential springs: friction_model 'spring' with a non-zero
    particle or wall friction (without friction 'spring' and 'damper' are the same law)."""
    frictional = any(m.friction > 0 for m in physics.materials) or physics.domain.wall_friction > 0
    return getattr(physics, "friction_model", "damper") == "spring" and frictional


def check_friction_model(physics) -> None:
    """Refuse a friction model the GPU kernels do not implement (they have 'spring' and 'damper', for
    grains, walls and mesh colliders alike).

    Raises:
        MochiError: Any other friction_model.
    """
    model = getattr(physics, "friction_model", "damper")
    if model not in ("spring", "damper"):
        raise MochiError(f"The GPU backends know the friction models 'spring' and 'damper', not '{model}'.")


def rotation_settings(physics) -> tuple[bool, str]:
    """(rotation, integrator) of ``physics`` (``Physics.rotation``, ``Physics.integrator``)."""
    return bool(physics.rotation), str(physics.integrator)


def rotation_tables(physics) -> dict[str, np.ndarray]:
    """Per-material tables of the rotating law (engine.contact_law), float32 for ``DemParams``:
    ``rolling_mu`` (M, M) and ``wall_rolling_mu`` (M,) rolling coefficients μ_r, zero without rotation
    (as the CPU backend: rolling resistance acts through ω only); ``cohesion`` (M, M) and
    ``wall_cohesion`` (M,) SJKR cohesion c [Pa]."""
    p = prepare_physics(physics)
    return {"rolling_mu": p.roll.astype(np.float32), "cohesion": p.cohesion.astype(np.float32),
            "wall_rolling_mu": p.wall_roll.astype(np.float32), "wall_cohesion": p.wall_cohesion.astype(np.float32)}


def law_flags(physics) -> dict[str, int]:
    """The switches of ``DemParams`` that select the rotating law and the integrator."""
    rotation, integrator = rotation_settings(physics)
    if integrator not in INTEGRATORS:
        raise MochiError(f"The GPU backends know the integrators 'verlet' and 'euler', not '{integrator}'.")
    tables = rotation_tables(physics)
    return {"rotation": int(rotation), "integrator": INTEGRATORS[integrator],
            "rolling_model": int(bool((tables["rolling_mu"] > 0).any() or (tables["wall_rolling_mu"] > 0).any())),
            "cohesion_model": int(bool((tables["cohesion"] > 0).any() or (tables["wall_cohesion"] > 0).any()))}


def rotating_law(model) -> bool:
    """True when the contacts need the rotating law's kernels (dem_rotating_law in kernels/dem_math.cuh):
    rotation, rolling resistance, cohesion or glue bonds. Otherwise the paper's kernels run, as they were."""
    flags = law_flags(model.physics)
    return (bool(flags["rotation"] or flags["rolling_model"] or flags["cohesion_model"])
            or model_bonds(model) is not None or model_clumps(model) is not None)


def rotating_update(model) -> bool:
    """True when the update is ``dem_integrate_rotating``'s (dem_uses_rotating_update): the rotating law
    or velocity Verlet."""
    return rotating_law(model) or rotation_settings(model.physics)[1] != "euler"


def check_bodies(model) -> None:
    """Refuse rigid bodies (clumps, ``Model.clumps``) of grains that do not rotate: the GPU kernels
    compute the torques a clump turns by only for rotating grains.

    Raises:
        MochiError: Clumps with ``Physics.rotation`` false.
    """
    if model_clumps(model) is not None and not model.physics.rotation:
        raise MochiError("Rigid bodies on the GPU need rotating grains; turn rotation on or bake this scene "
                         "with the CPU backend.")


def model_clumps(model):
    """The model's rigid clumps (an ``engine.bonds.Clumps``), or None when it has none."""
    clumps = getattr(model, "clumps", None)
    return clumps if clumps is not None and clumps.count > 0 else None


def clump_bodies(model, state) -> np.ndarray:
    """Rigid-body state of each clump from its members, float64 (C, DEM_CLUMP_BODY = 19): centre of mass,
    velocity, angular momentum about the centre, orientation identity (the body frame is the frame of
    the initial positions), zero force and torque sums (as the CPU backend starts its clumps)."""
    c = model_clumps(model)
    mass = model.mass.astype(np.float64)
    x = state.positions.astype(np.float64)
    v = state.velocities.astype(np.float64)
    body = np.zeros((c.count, 19))
    for index in range(c.count):
        members = c.members[c.start[index]:c.start[index + 1]]
        w = mass[members, None]
        centre = (w * x[members]).sum(axis=0) / c.mass[index]
        body[index, 0:3] = centre
        body[index, 3:6] = (w * v[members]).sum(axis=0) / c.mass[index]
        spin = 0.4 * w * model.radius[members, None].astype(np.float64) ** 2 * state.angular_velocities[members]
        body[index, 6:9] = (np.cross(x[members] - centre, w * v[members]) + spin).sum(axis=0)
    body[:, 9] = 1.0
    return body


#: The clump state's history keys (the CPU backend's) and their columns in a ``clump_body`` row.
CLUMP_HISTORY = {"clump_centre": slice(0, 3), "clump_velocity": slice(3, 6), "clump_momentum": slice(6, 9),
                 "clump_orientation": slice(9, 13), "clump_force": slice(13, 16), "clump_torque": slice(16, 19)}


def spring_overflow_sentence(count: int, when: str) -> str:
    """Why a GPU bake stops when tangential springs do not fit their grain's row (the kernels keep a
    contact without its spring then, so its friction would slide history-free: not the physics asked
    for). ``when``: 'between steps A and B' or 'in the restored history'."""
    return (f"{count:,} contact spring(s) {when} did not fit in the {SPRING_SLOTS} a grain keeps on the "
            "GPU, so their friction would slide without history; bake this scene on the cpu backend, "
            "which keeps every spring.")


def model_bonds(model):
    """The model's glue bonds (an ``engine.bonds.Bonds``), or None when it has none."""
    bonds = getattr(model, "bonds", None)
    return bonds if bonds is not None and bonds.count > 0 else None


def moments_of_inertia(model) -> np.ndarray:
    """Moment of inertia of each solid sphere, 2/5 m r² [kg m²], float32 (n,)."""
    return (0.4 * model.mass.astype(np.float64) * model.radius.astype(np.float64) ** 2).astype(np.float32)


#: The array fields of ``DemParams``, in the header's order.
DEM_PARAMS_ARRAYS = ("pos", "vel", "force", "info", "beta", "mu", "wall_beta", "wall_mu", "field_table",
                     "field_grid", "diag", "springs", "wall_springs", "slot_to_model", "spring_parity", "omega",
                     "torque", "orientation", "accel", "alpha", "rolling", "wall_rolling", "rolling_mu", "cohesion",
                     "wall_rolling_mu", "wall_cohesion", "history_dt", "model_to_slot", "bond_start", "bond_other",
                     "bond_index", "bond_pairs", "bond_props", "bond_state", "clump_of", "clump_start",
                     "clump_members", "clump_offset", "clump_mass", "clump_inertia_inv", "clump_body")


def fill_dem_params(record, arrays: dict, model: Model, *, field_count: int, pointer, **extra) -> None:
    """Fill one ``DEM_PARAMS_DTYPE`` record.

    Args:
        record: The record (a numpy void of ``DEM_PARAMS_DTYPE``).
        arrays: The arrays named in ``DEM_PARAMS_ARRAYS`` (device arrays on the GPU, numpy arrays in the
            host build of the kernels).
        model: The static model (physics constants, particle count).
        field_count: Rows of the field table.
        pointer: Address of one of ``arrays``.
        extra: Further fields (the grid's).
    """
    physics = model.physics
    for name in DEM_PARAMS_ARRAYS:
        record[name] = pointer(arrays[name])
    prepared = prepare_physics(model.physics)  # the kernels work in local coordinates
    record["lo"] = prepared.lo
    record["hi"] = prepared.hi
    record["stiffness"] = physics.stiffness
    record["dt"] = physics.dt
    record["speed_limit2"] = physics.speed_limit ** 2
    record["particle_count"] = model.particle_count
    record["material_count"] = len(physics.materials)
    record["field_count"] = field_count
    record["wall_mask"] = int(sum(int(bit) << side for side, bit in enumerate(prepared.wall_mask)))
    record["spring_model"] = int(uses_springs(physics))
    bonds = model_bonds(model)
    record["bond_count"] = 0 if bonds is None else bonds.count
    clumps = model_clumps(model)
    record["clump_count"] = 0 if clumps is None else clumps.count
    record["tangential_ratio"] = TANGENTIAL_STIFFNESS_RATIO
    for name, value in law_flags(physics).items():
        record[name] = value
    for name, value in extra.items():
        record[name] = value


def grid_fields(cell_size: float, grid_bits: tuple[int, int, int]) -> dict:
    """The grid fields of ``DemParams``: cell edge [m], cells folded onto 2^bits per axis (x, y, z)."""
    if min(grid_bits) < 2:
        raise ValueError("every grid_bits must be at least 2 (27 distinct buckets around a cell)")
    return dict(cell_size=cell_size, inv_cell_size=1.0 / cell_size, table_mask=(1 << sum(grid_bits)) - 1,
                grid_bits_x=grid_bits[0], grid_bits_y=grid_bits[1], grid_bits_z=grid_bits[2])


def blocks(count: int) -> tuple[int]:
    return (max((count + BLOCK - 1) // BLOCK, 1),)


class BucketSorter:
    """Deterministic stable sort of items by a small integer key (kernels/dem_common.cu).

    After ``sort``, ``sorted[start[b]:start[b + 1]]`` are the items with key b in increasing order.

    Args:
        item_count: Items to sort.
        bucket_count: Keys are in [0, bucket_count).
    """

    def __init__(self, item_count: int, bucket_count: int):
        import cupy

        self.cp = cupy
        self.item_count = item_count
        self.bucket_count = bucket_count
        self.count = cupy.zeros(bucket_count, cupy.uint32)
        self.rank = cupy.zeros(max(item_count, 1), cupy.uint32)
        self.start = cupy.zeros(bucket_count + 1, cupy.uint32)
        self.sorted = cupy.zeros(max(item_count, 1), cupy.int32)
        self.block_sum = cupy.zeros(max((bucket_count + SCAN_ITEMS - 1) // SCAN_ITEMS, 1), cupy.uint32)
        module = raw_module("dem_common.cu")
        self._scan_blocks = module.get_function("scan_blocks")
        self._scan_block_sums = module.get_function("scan_block_sums")
        self._add_block_offsets = module.get_function("add_block_offsets")
        self._count = module.get_function("bucket_count")
        self._scatter = module.get_function("bucket_scatter")
        self._order = module.get_function("bucket_order")

    def scan(self) -> None:
        """start[1:] = inclusive prefix sum of count (start[0] stays 0); asynchronous."""
        buckets = np.int32(self.bucket_count)
        block_count = self.block_sum.shape[0]
        self._scan_blocks((block_count,), (SCAN_THREADS,), (self.count, buckets, self.start, self.block_sum))
        self._scan_block_sums((1,), (SCAN_THREADS,), (self.block_sum, np.int32(block_count)))
        self._add_block_offsets(blocks(self.bucket_count), (BLOCK,), (self.start, buckets, self.block_sum))

    def sort(self, key) -> None:
        """Sort by ``key`` (cupy uint32 (item_count,)); asynchronous."""
        n = np.int32(self.item_count)
        self.count.fill(0)
        self._count(blocks(self.item_count), (BLOCK,), (key, n, self.count, self.rank))
        self.scan()
        self._scatter(blocks(self.item_count), (BLOCK,), (key, n, self.start, self.rank, self.sorted))
        self._order(blocks(self.bucket_count), (BLOCK,), (self.start, np.int32(self.bucket_count), self.sorted))


class DeviceParticles:
    """The particles of one model on the GPU, in slot order, and the launchers every backend shares.

    ``slot_to_model[k]`` is the model index of the particle in slot k; slots are reordered along a
    Morton curve at rebuilds (``morton_reorder``) so that neighbours sit close in memory.

    Args:
        model: The static model.
    """

    def __init__(self, model: Model):
        import cupy

        self.cp = cupy
        self.model = model
        physics = model.physics
        check_friction_model(physics)
        check_bodies(model)
        n = model.particle_count
        self.particle_count = n
        self.pos = cupy.zeros((n, 4), cupy.float32)
        self.vel = cupy.zeros((n, 4), cupy.float32)
        self.force = cupy.zeros((n, 4), cupy.float32)
        self.info = cupy.zeros(n, cupy.uint32)
        self.slot_to_model = cupy.arange(n, dtype=cupy.int32)
        self.diag = cupy.zeros(DIAG_COUNT, cupy.int32)
        prepared = prepare_physics(model.physics)
        self.origin = prepared.origin
        if model.colliders is not None:
            model.colliders.set_origin(self.origin)
        table, grid = prepared.field_table, prepared.field_grid
        self.beta = cupy.asarray(prepared.beta, cupy.float32).ravel()
        self.mu = cupy.asarray(prepared.mu, cupy.float32).ravel()
        self.wall_beta = cupy.asarray(prepared.wall_beta, cupy.float32)
        self.wall_mu = cupy.asarray(prepared.wall_mu, cupy.float32)
        self.field_table = cupy.asarray(table if table.size else np.zeros((1, 16), np.float32)).ravel()
        self.field_grid = cupy.asarray(grid, cupy.float32)
        self.field_count = int(table.shape[0])
        self.springs_on = uses_springs(physics)
        flags = law_flags(physics)
        self.rotation_on = bool(flags["rotation"])
        self.verlet_on = flags["integrator"] == INTEGRATORS["verlet"]
        self.rolling_on = bool(flags["rolling_model"])
        # Rows of pair history hold the springs and, beside them, the rolling histories.
        self.rows_on = self.springs_on or self.rolling_on
        rows = n if self.rows_on else 0
        self.springs = cupy.zeros((2 * rows * SPRING_SLOTS + 1, 4), cupy.float32)
        self.wall_springs = cupy.zeros((6 * (n if self.springs_on else 0) + 1, 4), cupy.float32)
        rolling_rows = n if self.rolling_on else 0
        self.rolling = cupy.zeros((2 * rolling_rows * SPRING_SLOTS + 1, 4), cupy.float32)
        self.wall_rolling = cupy.zeros((6 * rolling_rows + 1, 4), cupy.float32)
        self.spring_parity = cupy.zeros(1, cupy.int32)
        spinning = n if self.rotation_on else 0
        self.omega = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.torque = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.orientation = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.alpha = cupy.zeros((max(spinning, 1), 4), cupy.float32)
        self.clumps = model_clumps(model)
        # Verlet's accelerations; the clumps sum their members' forces from them with Euler too.
        self.accel = cupy.zeros((max(n if self.verlet_on or self.clumps is not None else 0, 1), 4), cupy.float32)
        for name, table in rotation_tables(physics).items():
            setattr(self, name, cupy.asarray(np.ascontiguousarray(table.ravel())))
        self.history_dt = cupy.full(1, physics.dt, cupy.float32)
        self.model_to_slot = cupy.arange(n, dtype=cupy.int32)
        self.bonds = model_bonds(model)
        if self.bonds is not None:
            from ..bonds import bond_rows

            start, other, index = bond_rows(self.bonds, n)
            self.bond_start = cupy.asarray(start.astype(np.int32))
            self.bond_other = cupy.asarray(other.astype(np.int32))
            self.bond_index = cupy.asarray(index.astype(np.int32))
            self.bond_pairs = cupy.asarray(np.ascontiguousarray(self.bonds.pairs, np.int32))
            self.bond_props = cupy.asarray(np.ascontiguousarray(np.stack(
                [self.bonds.rest, self.bonds.area, self.bonds.stiffness, self.bonds.strength], 1), np.float64))
            self.bond_state = cupy.zeros((2 * self.bonds.count, 4), cupy.float32)
        else:
            for name in ("bond_start", "bond_other", "bond_index", "bond_pairs"):
                setattr(self, name, cupy.zeros(2, cupy.int32))
            self.bond_props = cupy.zeros(4, cupy.float64)
            self.bond_state = cupy.zeros((1, 4), cupy.float32)
        c = self.clumps
        if c is not None:
            self.clump_of = cupy.asarray(np.ascontiguousarray(c.clump, np.int32))
            self.clump_start = cupy.asarray(np.ascontiguousarray(c.start, np.int32))
            self.clump_members = cupy.asarray(np.ascontiguousarray(c.members, np.int32))
            self.clump_offset = cupy.asarray(np.ascontiguousarray(c.offset, np.float64))
            self.clump_mass = cupy.asarray(np.ascontiguousarray(c.mass, np.float64))
            self.clump_inertia_inv = cupy.asarray(np.ascontiguousarray(c.inertia_inv, np.float64).reshape(-1))
            self.clump_body = cupy.zeros((c.count, 19), cupy.float64)
        else:
            for name in ("clump_of", "clump_start", "clump_members"):
                setattr(self, name, cupy.zeros(2, cupy.int32))
            for name in ("clump_offset", "clump_mass", "clump_inertia_inv"):
                setattr(self, name, cupy.zeros(3, cupy.float64))
            self.clump_body = cupy.zeros((1, 19), cupy.float64)
        #: Velocity Verlet: ``accel``/``alpha`` hold the accelerations of the current state.
        self.primed = False
        self.host_params = np.zeros(1, DEM_PARAMS_DTYPE)
        self.params = cupy.zeros(DEM_PARAMS_DTYPE.itemsize, cupy.uint8)
        self.key = cupy.zeros(max(n, 1), cupy.uint32)
        self.morton_sorter = BucketSorter(n, (1 << (3 * MORTON_BITS)) + 1)
        self._scratch4 = cupy.zeros((n, 4), cupy.float32)
        self._scratch1 = cupy.zeros(n, cupy.uint32)
        module = raw_module("dem_common.cu")
        self.rotating_law = rotating_law(model)
        # The paper's model runs the kernels it always ran; everything else their rotating twins.
        self._integrate = module.get_function("dem_integrate_rotating" if rotating_update(model) else "dem_integrate")
        self._verlet_drift = module.get_function("dem_verlet_drift")
        self._verlet_prime = module.get_function("dem_verlet_prime")
        self._clump_step = module.get_function("dem_clump_step")
        self._morton = module.get_function("dem_morton_keys")
        self._gather4 = module.get_function("gather_float4")
        self._gather1 = module.get_function("gather_u32")
        self._flip_parity = module.get_function("dem_flip_spring_parity")
        self.last_checked_step = 0
        self.step_index = 0
        self._fill_params()

    def _fill_params(self, **extra) -> None:
        arrays = {name: getattr(self, name) for name in DEM_PARAMS_ARRAYS}
        fill_dem_params(self.host_params[0], arrays, self.model, field_count=self.field_count,
                        pointer=lambda a: a.data.ptr, **extra)
        self.params.set(self.host_params.view(np.uint8))

    def set_grid(self, cell_size: float, grid_bits: tuple[int, int, int]) -> None:
        """Grid of the CUDA grid backend: cell edge [m], cells folded onto 2^bits per axis (x, y, z)."""
        self._fill_params(**grid_fields(cell_size, grid_bits))

    def upload(self, state: State) -> None:
        """Copy ``state`` to the device in model order (slot k = particle k); synchronous."""
        cp = self.cp
        m = self.model
        n = self.particle_count
        host_pos = np.empty((n, 4), np.float32)
        host_pos[:, :3] = world_to_local(state.positions, self.origin)
        host_pos[:, 3] = m.radius
        host_vel = np.empty((n, 4), np.float32)
        host_vel[:, :3] = state.velocities
        host_vel[:, 3] = m.mass
        info = (state.active.astype(np.uint32) & INFO_ACTIVE) | (m.material_index.astype(np.uint32) << INFO_MATERIAL_SHIFT)
        self.pos.set(host_pos)
        self.vel.set(host_vel)
        self.info.set(info)
        self.force.fill(0)
        self.slot_to_model[:] = cp.arange(n, dtype=cp.int32)
        self.model_to_slot[:] = cp.arange(n, dtype=cp.int32)
        self.diag.set(np.array([INT_MAX, INT_MAX, 0, 0], np.int32))
        self.spring_parity.fill(0)
        if self.bonds is not None:
            self.set_bonds({})
        if self.rows_on:
            self.set_springs(SpringRows.empty(n, rolling=self.rolling_on))
        if self.rotation_on:
            omega = np.zeros((n, 4), np.float32)
            omega[:, 3] = moments_of_inertia(m)
            spin = getattr(state, "angular_velocities", None)
            if spin is not None:
                omega[:, :3] = spin
            self.omega.set(omega)
            orientation = np.zeros((n, 4), np.float32)
            turned = getattr(state, "orientations", None)
            if turned is not None:
                orientation[:] = turned
            else:
                orientation[:, 0] = 1.0
            self.orientation.set(orientation)
            self.torque.fill(0)
            self.alpha.fill(0)
        if self.verlet_on or self.clumps is not None:
            self.accel.fill(0)
            self.primed = False
        if self.clumps is not None:
            self.clump_body.set(clump_bodies(m, state))
        self.step_index = int(state.step)
        self.last_checked_step = int(state.step)

    def download(self) -> State:
        """The current state in model order; raises ``SimulationDiverged`` (see ``check``)."""
        cp = self.cp
        n = self.particle_count
        pos = cp.empty((n, 4), cp.float32)
        vel = cp.empty((n, 4), cp.float32)
        info = cp.empty(n, cp.uint32)
        pos[self.slot_to_model] = self.pos
        vel[self.slot_to_model] = self.vel
        info[self.slot_to_model] = self.info
        state = State(local_to_world(pos[:, :3].get(), self.origin), np.ascontiguousarray(vel[:, :3].get()),
                      (info.get() & INFO_ACTIVE).astype(np.uint8), self.step_index)
        if self.rotation_on and hasattr(state, "angular_velocities"):
            state.angular_velocities = np.ascontiguousarray(self.model_order(self.omega)[:, :3])
            state.orientations = np.ascontiguousarray(self.model_order(self.orientation))
        if self.bonds is not None:
            from ..bonds import bonds_per_particle

            state.bonds = bonds_per_particle(self.bonds, self.get_bonds()["bond_intact"], n)
        self.check()
        return state

    def get_clumps(self) -> dict[str, np.ndarray]:
        """The rigid clumps' body state in the CPU backend's history keys (``CLUMP_HISTORY``), float64;
        empty without clumps."""
        if self.clumps is None:
            return {}
        body = self.clump_body.get()
        return {name: np.ascontiguousarray(body[:, columns]) for name, columns in CLUMP_HISTORY.items()}

    def set_clumps(self, history: dict) -> None:
        """Restore ``get_clumps``'s arrays (missing keys: the state ``upload`` derived); synchronous."""
        if self.clumps is None or "clump_centre" not in history:
            return
        body = self.clump_body.get()
        for name, columns in CLUMP_HISTORY.items():
            body[:, columns] = np.asarray(history[name], np.float64).reshape(body[:, columns].shape)
        self.clump_body.set(body)

    def clump_step(self, phase: int) -> None:
        """Move every rigid clump as one body and set its members (kernels/dem_common.cu
        ``dem_clump_step``: 0 sums only, 1 Euler, 2 and 3 Verlet's halves); no-op without clumps."""
        if self.clumps is not None:
            self._clump_step(blocks(self.clumps.count), (BLOCK,), (self.params, np.int32(phase)))

    def get_bonds(self) -> dict[str, np.ndarray]:
        """The glue bonds' state the next step reads, in the CPU backend's history keys: ``bond_shear``
        ξ_b [m] float64 (B, 3) and ``bond_intact`` uint8 (B,); empty without bonds."""
        if self.bonds is None:
            return {}
        b = self.bonds.count
        half = int(self.spring_parity.get()[0])
        state = self.bond_state[half * b:(half + 1) * b].get()
        return {"bond_shear": state[:, :3].astype(np.float64), "bond_intact": (state[:, 3] != 0).astype(np.uint8)}

    def set_bonds(self, history: dict) -> None:
        """Restore ``get_bonds``'s arrays into the half the next step reads (every bond intact and
        unsheared when ``history`` has none); synchronous."""
        if self.bonds is None:
            return
        b = self.bonds.count
        data = np.zeros((2 * b, 4), np.float32)
        half = int(self.spring_parity.get()[0])
        rows = data[half * b:(half + 1) * b]
        if "bond_intact" in history:
            rows[:, :3] = np.asarray(history["bond_shear"], np.float64).reshape(b, 3)
            rows[:, 3] = np.asarray(history["bond_intact"]).reshape(b) != 0
        else:
            rows[:, 3] = 1.0
        self.bond_state.set(data)

    def model_order(self, array) -> np.ndarray:
        """A per-slot float4 array (cupy (n, 4)) in model order, on the host."""
        out = self.cp.empty_like(array)
        out[self.slot_to_model] = array
        return out.get()

    def slot_arrays4(self) -> list:
        """The per-slot float4 arrays a reorder must carry (the torque is rewritten every step)."""
        arrays = [self.pos, self.vel]
        if self.rotation_on:
            arrays += [self.omega, self.orientation, self.alpha]
        if self.verlet_on or self.clumps is not None:
            arrays.append(self.accel)
        return arrays

    def get_verlet(self) -> dict[str, np.ndarray]:
        """Velocity Verlet's accelerations of the current state in model order, in the CPU backend's
        history keys: ``acceleration`` [m/s²] and ``angular_acceleration`` [rad/s²], float64 (n, 3);
        empty with semi-implicit Euler or before they were computed."""
        if not (self.verlet_on and self.primed):
            return {}
        n = self.particle_count
        alpha = self.model_order(self.alpha)[:, :3] if self.rotation_on else np.zeros((n, 3), np.float32)
        return {"acceleration": self.model_order(self.accel)[:, :3].astype(np.float64),
                "angular_acceleration": alpha.astype(np.float64)}

    def set_verlet(self, history: dict) -> None:
        """Restore ``get_verlet``'s arrays (model order; after ``upload``, which leaves slots in model
        order). Without them the first step computes them (``prime``)."""
        if not self.verlet_on or "acceleration" not in history:
            return
        n = self.particle_count
        accel = np.zeros((n, 4), np.float32)
        accel[:, :3] = np.asarray(history["acceleration"], np.float64).reshape(n, 3)
        self.accel.set(accel)
        if self.rotation_on:
            alpha = np.zeros((n, 4), np.float32)
            alpha[:, :3] = np.asarray(history["angular_acceleration"], np.float64).reshape(n, 3)
            self.alpha.set(alpha)
        self.primed = True

    def flip_springs(self) -> None:
        """After a step's contact forces: the springs (and glue bond states) they kept are the ones the
        next step reads."""
        if self.rows_on or self.bonds is not None:
            self._flip_parity((1,), (1,), (self.spring_parity,))

    def set_springs(self, rows: "SpringRows") -> None:
        """Upload springs and rolling histories (the half the next step reads); synchronous."""
        if not self.rows_on:
            return
        n = self.particle_count
        self.spring_parity.fill(0)
        data = np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32)
        data[:n * SPRING_SLOTS] = rows.grains.reshape(-1, 4)
        data.view(np.int32)[n * SPRING_SLOTS:2 * n * SPRING_SLOTS, 3] = -1  # the other half: empty rows
        self.springs.set(data)
        if self.springs_on:
            walls = np.zeros((6 * n + 1, 4), np.float32)
            walls[:6 * n, :3] = rows.walls.reshape(-1, 3)
            self.wall_springs.set(walls)
        if self.rolling_on:
            rolling = np.zeros((2 * n * SPRING_SLOTS + 1, 4), np.float32)
            if rows.rolling is not None:
                rolling[:n * SPRING_SLOTS, :3] = rows.rolling.reshape(-1, 3)
            self.rolling.set(rolling)
            wall_rolling = np.zeros((6 * n + 1, 4), np.float32)
            if rows.wall_rolling is not None:
                wall_rolling[:6 * n, :3] = rows.wall_rolling.reshape(-1, 3)
            self.wall_rolling.set(wall_rolling)

    def get_springs(self) -> "SpringRows":
        """Download the springs the next step reads."""
        n = self.particle_count
        if not self.rows_on:
            return SpringRows.empty(0)
        half = int(self.spring_parity.get()[0])
        grains = self.springs[half * n * SPRING_SLOTS:(half + 1) * n * SPRING_SLOTS].get().reshape(n, SPRING_SLOTS, 4)
        walls = (self.wall_springs[:6 * n, :3].get().reshape(n, 6, 3) if self.springs_on
                 else np.zeros((n, 6, 3), np.float32))
        rolling = wall_rolling = None
        if self.rolling_on:
            rolling = self.rolling[half * n * SPRING_SLOTS:(half + 1) * n * SPRING_SLOTS, :3].get()
            rolling = rolling.reshape(n, SPRING_SLOTS, 3)
            wall_rolling = self.wall_rolling[:6 * n, :3].get().reshape(n, 6, 3)
        return SpringRows(grains, walls, rolling, wall_rolling)

    def spring_overflow(self) -> int:
        """Contacts so far whose spring did not fit in their owner's row (they slid history-free)."""
        return int(self.diag[DIAG_SPRING_OVERFLOW:DIAG_SPRING_OVERFLOW + 1].get()[0])

    def check(self) -> None:
        """Raise ``SimulationDiverged`` if a NaN or a speed above the limit appeared since the last check,
        and ``MochiError`` if a contact's spring found its grain's row full (``spring_overflow``)."""
        physics = self.model.physics
        first_nan, first_fast, max_speed2_bits, overflow = (int(v) for v in self.diag.get())
        first, last = self.last_checked_step, self.step_index
        self.last_checked_step = last
        if first_nan != INT_MAX:
            raise SimulationDiverged(
                f"The simulation produced NaN at step {first_nan} (t = {first_nan * physics.dt:.6g} s), between "
                f"steps {first} and {last} checked on the GPU; lower dt or the stiffness.", first_nan)
        if first_fast != INT_MAX:
            speed = float(np.sqrt(np.int32(max_speed2_bits).view(np.float32)))
            raise SimulationDiverged(
                f"Runaway energy at step {first_fast} (t = {first_fast * physics.dt:.6g} s), between steps "
                f"{first} and {last} checked on the GPU: a particle moved at up to {speed:.3g} m/s, above the "
                f"limit of {physics.speed_limit:.3g} m/s; lower dt or the stiffness.", first_fast)
        if overflow:
            raise MochiError(spring_overflow_sentence(overflow, f"between steps {first} and {last}"))

    def acceleration(self, step: int) -> np.ndarray:
        """Gravity plus uniform/rotating fields at t = step·dt, float32 (3,) [m/s²]."""
        physics = self.model.physics
        t = step * physics.dt
        return (physics.gravity.at(t) + uniform_acceleration(physics.fields, t)).astype(np.float32)

    def prime(self) -> None:
        """Velocity Verlet's accelerations of the current state (after its forces, with ``history_dt``
        0: see ``BackendGpu``); nothing moves; asynchronous."""
        a = self.acceleration(self.step_index)
        self._verlet_prime(blocks(self.particle_count), (BLOCK,),
                           (self.params, a[0], a[1], a[2], np.int32(self.step_index)))
        self.primed = True

    def verlet_drift(self) -> None:
        """Velocity Verlet's first half-kick and drift, before the forces (no-op with Euler); asynchronous."""
        if self.verlet_on:
            self._verlet_drift(blocks(self.particle_count), (BLOCK,), (self.params, np.int32(self.step_index)))

    def integrate(self) -> None:
        """The update after the forces (walls, fields, open sides): a semi-implicit Euler step, or
        velocity Verlet's second half-kick (``verlet_drift`` did the rest); asynchronous. Verlet's
        accelerations are evaluated at the end of the step, t = (step + 1)·dt, where the positions are."""
        a = self.acceleration(self.step_index + (1 if self.verlet_on else 0))
        self._integrate(blocks(self.particle_count), (BLOCK,),
                        (self.params, a[0], a[1], a[2], np.int32(self.step_index)))
        self.step_index += 1

    def morton_reorder(self) -> None:
        """Permute every slot array along the Morton curve of the current positions; asynchronous."""
        n = np.int32(self.particle_count)
        self._morton(blocks(self.particle_count), (BLOCK,), (self.params, np.int32(MORTON_BITS), self.key))
        self.morton_sorter.sort(self.key)
        order = self.morton_sorter.sorted
        for array in self.slot_arrays4():
            self._gather4(blocks(self.particle_count), (BLOCK,), (array, order, n, self._scratch4))
            array[...] = self._scratch4
        for array in (self.info, self.slot_to_model):
            self._gather1(blocks(self.particle_count), (BLOCK,), (array.view(self.cp.uint32), order, n, self._scratch1))
            array[...] = self._scratch1.view(array.dtype)
        self.model_to_slot[self.slot_to_model] = self.cp.arange(self.particle_count, dtype=self.cp.int32)

    def restore_model_order(self) -> None:
        """Put every slot array back in model order (slot k = particle k); asynchronous. A Morton reorder
        after it depends only on the positions, not on earlier reorders: how the CUDA grid resumes bit
        for bit."""
        order = self.slot_to_model
        for array in (*self.slot_arrays4(), self.info):
            scratch = self.cp.empty_like(array)
            scratch[order] = array
            array[...] = scratch
        self.slot_to_model[:] = self.cp.arange(self.particle_count, dtype=self.cp.int32)
        self.model_to_slot[:] = self.cp.arange(self.particle_count, dtype=self.cp.int32)

    def round_to_world(self) -> None:
        """Round local positions to what a cache frame holds (engine.local_origin; at frame boundaries,
        so that a bake resumed from a frame continues from the same bits); synchronous."""
        if self.origin.any():
            host = self.pos.get()
            host[:, :3] = round_to_world(host[:, :3], self.origin)
            self.pos.set(host)

    def slots_to_model_pairs(self, slot_pairs) -> np.ndarray:
        """Model-index pairs (i < j), int32 (P, 2), rows sorted, from slot pairs (cupy int32 (P, 2))."""
        model = self.slot_to_model[slot_pairs.ravel()].reshape(-1, 2)
        pairs = np.sort(model.get(), axis=1).astype(np.int32)
        if pairs.shape[0] == 0:
            return np.zeros((0, 2), np.int32)
        return pairs[np.lexsort((pairs[:, 1], pairs[:, 0]))]


class PhaseTimer:
    """Build/detect/update times from CUDA events, read once at the end of ``Backend.step``."""

    def __init__(self, cupy):
        self.cp = cupy
        self.marks: list[tuple[str, object, object]] = []

    def mark(self, phase: str, start, end) -> None:
        self.marks.append((phase, start, end))

    def event(self):
        event = self.cp.cuda.Event()
        event.record()
        return event

    def collect(self, timings) -> None:
        """Add the recorded phases to ``timings`` (waits for the last event)."""
        if not self.marks:
            return
        self.marks[-1][2].synchronize()
        for phase, start, end in self.marks:
            seconds = self.cp.cuda.get_elapsed_time(start, end) * 1e-3
            setattr(timings, phase, getattr(timings, phase) + seconds)
        self.marks.clear()

"""The host side of the device's launch parameters: numpy mirrors of the structs in
kernels/dem_params.h (checked against the header by tests/engine/test_kernels_compile.py on every
machine with a C++ compiler), the law's switches and tables as the kernels read them, and the checks
that refuse what the kernels do not implement.
"""

from __future__ import annotations

import numpy as np

from ..contact_law import TANGENTIAL_STIFFNESS_RATIO
from ..errors import MochiError
from ..model import Model
from .gpu_springs import SPRING_SLOTS
from .prepared_physics import prepare_physics

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
              "contact_count", "roll", "cohesion", "half_thickness", "stiffness", "dt", "tangential_ratio",
              "spring_model", "rolling_model"],
    "formats": ["u8"] * 20 + ["f8", "f8", "f8", "f8", "i4", "i4"],
}, align=True)


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


def check_contact_law(physics) -> None:
    """Refuse the Hertz–Mindlin law and the peers' friction caps, which the GPU kernels do not have yet
    (the CPU backend has them).

    Raises:
        MochiError: ``physics.contact_normal`` other than 'hooke', ``physics.friction_cap`` other than 'clipped'.
    """
    law = getattr(physics, "contact_normal", "hooke")
    if law != "hooke":
        raise MochiError(f"The GPU backends have only the linear (Hooke) contact law, not '{law}': bake this "
                         "scene on the CPU (--backend cpu), or set [contact] normal = \"hooke\".")
    cap = getattr(physics, "friction_cap", "clipped")
    if cap != "clipped":
        raise MochiError(f"The GPU backends have only Mochi's friction cap, not '{cap}': bake this scene on the CPU "
                         "(--backend cpu), or set [contact] friction_cap = \"clipped\".")


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

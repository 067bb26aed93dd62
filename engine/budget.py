"""Refusals before work: bakes that would run for days or run out of memory are stopped up front.

Both checks run before anything is allocated or written, and each refusal names the numbers and the
way out, so a user never waits for a frozen progress bar or a MemoryError after minutes of packing.
"""

from __future__ import annotations

import os

import numpy as np

from .errors import MochiError

#: Steps per frame above which a bake is refused unless the caller raises the budget. At the CPU
#: backend's ~1e7 particle-steps/s, 100k steps per frame of a 10k-grain scene take ~100 s a frame.
DEFAULT_MAX_STEPS_PER_FRAME = 100_000

#: Resident bytes a bake needs per particle, an upper estimate: state, model and backend arrays
#: (~100 B), Verlet-list capacity and tangential-spring history (~300 B with the spring model),
#: packing and frame-writing temporaries; measured at 85 B/particle for a contact-free 400k bake.
BYTES_PER_PARTICLE = 512
#: Resident bytes of the engine before any particle (Python, numpy, numba and its compiled kernels).
BASE_BYTES = 400 * 2**20


def check_steps_per_frame(steps_per_frame: int, dt: float, stiffness: float, *,
                          limit: int | None = DEFAULT_MAX_STEPS_PER_FRAME, hertz_youngs: float | None = None) -> None:
    """Refuse a bake that needs more than ``limit`` steps per frame (None: no limit).

    Args:
        hertz_youngs: With the Hertz contact law, the largest Young's modulus of the grains and walls [Pa]
            (engine.contact_law.largest_youngs_modulus): the moduli and the grains' size set dt then, and
            the sentence names them instead of a stiffness.

    Raises:
        MochiError: naming the steps per frame, dt and stiffness, and how to lift the limit.
    """
    if limit is not None and steps_per_frame > limit and hertz_youngs is not None:
        raise MochiError(
            f"This bake needs {steps_per_frame:,} steps per frame (dt = {dt:.3g} s for Hertz contacts of Young's "
            f"modulus up to {hertz_youngs:.3g} Pa), over the budget of {limit:,}; use a lower Young's modulus (in "
            "Pa, of the grains or the walls) or larger grains, or raise the budget (--max-steps-per-frame) if you "
            "mean it.")
    if limit is not None and steps_per_frame > limit:
        raise MochiError(
            f"This bake needs {steps_per_frame:,} steps per frame (dt = {dt:.3g} s for stiffness "
            f"{stiffness:.3g} N/m), over the budget of {limit:,}; use a softer stiffness or a larger dt, "
            "or raise the budget (--max-steps-per-frame) if you mean it.")


def available_memory_bytes() -> int | None:
    """Memory this process can still take [bytes] (Linux MemAvailable, else free pages), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def estimated_bake_bytes(particle_count: int) -> int:
    """Upper estimate of a bake's resident memory [bytes] for ``particle_count`` particles."""
    return BASE_BYTES + BYTES_PER_PARTICLE * int(particle_count)


def check_memory(particle_count: int, *, available: int | None = None) -> None:
    """Refuse a particle count whose bake would not fit in the memory this machine has free.

    Args:
        particle_count: Particles the bake will hold.
        available: Free memory [bytes]; default ``available_memory_bytes()``.

    Raises:
        MochiError: naming the estimate, the free memory and the largest count that fits.
    """
    available = available_memory_bytes() if available is None else available
    need = estimated_bake_bytes(particle_count)
    if available is not None and need > available:
        fits = max(0, (available - BASE_BYTES) // BYTES_PER_PARTICLE)
        raise MochiError(f"A bake of {particle_count:,} particles needs about {need / 2**30:.1f} GiB of memory and "
                         f"this machine has {available / 2**30:.1f} GiB free; use at most about {fits:,} particles.")


# --- What a grain costs: the figures the add-on shows before packing ---------------------------------

#: Contact-history arrays a bake keeps per grain with the full physics (spring friction, rolling
#: resistance, velocity Verlet), as engine.contact_history.ContactHistory stores them: name → (shape
#: per grain, dtype). tests/engine/test_grain_bytes.py checks them against a CPU backend's history.
HISTORY_PER_PARTICLE = {"wall_spring": ((6, 3), np.float64), "wall_rolling": ((6, 3), np.float64),
                        "acceleration": ((3,), np.float64), "angular_acceleration": ((3,), np.float64)}
#: Contact-history arrays per touching pair (each pair once): name → (shape per pair, dtype).
HISTORY_PER_PAIR = {"pair_i": ((), np.int32), "pair_j": ((), np.int32), "pair_spring": ((3,), np.float64),
                    "pair_rolling": ((3,), np.float64)}
#: Touching pairs per grain in a settled pile: 4.4–4.9 neighbours each (docs/physics.md), every pair
#: stored once, rounded up.
PAIRS_PER_PARTICLE = 2.5
#: Particle-steps per second a rough time figure assumes: the CPU backend on a settled pile on two
#: shared cores (sand_pile, 5,000 grains, ~1 ms a step: docs/estimate.md). A loose cloud steps up to 4×
#: faster and a GPU far faster, so the figure is an upper-side guess; Bake measures the real one.
ROUGH_PARTICLE_STEPS_PER_SECOND = 5.0e6


def _bytes_per_item(layout: dict) -> int:
    return sum(int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize for shape, dtype in layout.values())


def state_bytes_per_particle() -> int:
    """Bytes of one grain's ``State`` arrays (positions, velocities, activity, ω, orientation, bonds),
    measured on a real one-grain state, so that a new field or dtype is counted without edits [bytes]."""
    from .state import make_state

    state = make_state(np.zeros((1, 3), np.float32))
    return sum(int(array.nbytes) for array in (state.positions, state.velocities, state.active,
                                               state.angular_velocities, state.orientations, state.bonds))


def history_bytes_per_particle(*, pairs_per_particle: float = PAIRS_PER_PARTICLE) -> float:
    """Bytes of one grain's contact history with the full physics, its share of touching pairs included
    [bytes] (glue bonds, clumps and colliders add their own and are not counted)."""
    return _bytes_per_item(HISTORY_PER_PARTICLE) + pairs_per_particle * _bytes_per_item(HISTORY_PER_PAIR)


def grain_bytes(particle_count: int) -> int:
    """Memory the state and contact history of ``particle_count`` grains take in a settled pile [bytes]:
    what every cached frame holds and what a backend keeps a copy of (its working arrays, the neighbour
    list and the packer's temporaries come on top: ``estimated_bake_bytes``)."""
    return int(round(particle_count * (state_bytes_per_particle() + history_bytes_per_particle())))


def rough_bake_seconds(particle_count: int, steps: int) -> float:
    """A rough wall-clock time of ``steps`` steps of ``particle_count`` grains on the CPU [s], from
    ``ROUGH_PARTICLE_STEPS_PER_SECOND``: for a warning before any packing, never for a promise."""
    return float(particle_count) * float(steps) / ROUGH_PARTICLE_STEPS_PER_SECOND

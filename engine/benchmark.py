"""Timing a backend on a scene: the numbers ``mochi bench`` prints and benchmarks/ records."""

from __future__ import annotations

import time

import numpy as np

from .backends import make_backend
from .scene import SceneSetup


def physics_summary(setup: SceneSetup) -> dict:
    """The physical parameters a peer needs to run the same thing (SI units)."""
    physics = setup.model.physics
    return {
        "dt": physics.dt,
        "stiffness": physics.stiffness,
        "restitution": [m.restitution for m in physics.materials],
        "friction": [m.friction for m in physics.materials],
        "density": [m.density for m in physics.materials],
        "gravity": list(physics.gravity.vector),
        "gravity_rotation_axis": physics.gravity.rotation_axis,
        "gravity_rotation_rate": physics.gravity.rotation_rate,
        "box_lo": list(physics.domain.lo),
        "box_hi": list(physics.domain.hi),
        "open_sides": list(physics.domain.open_sides),
        "wall_restitution": physics.domain.wall_restitution,
        "wall_friction": physics.domain.wall_friction,
        "rebuild_interval": physics.rebuild_interval,
        "radius_min": float(setup.model.radius.min()),
        "radius_max": float(setup.model.radius.max()),
    }


def run_benchmark(setup: SceneSetup, *, backend: str = "cpu", steps: int = 100, warmup: int = 3,
                  untimed_setup: bool = False, rt_device: str | None = None) -> dict:
    """Time ``steps`` steps from the scene's initial state after ``warmup`` untimed steps.

    With ``untimed_setup`` the backend's set-up for the first step (``Backend.prepare``: the CPU's
    first neighbour-list build) runs before the clock starts, as LAMMPS and LIGGGHTS time their loop
    without their setup; rebuilds during the steps are timed either way.

    The warm-up (JIT compilation, GPU module loading) runs on the same state, which is then restored,
    so the timed steps start from exactly the state a peer is given.

    Args:
        rt_device: Device kind for rt or auto ('vulkan', 'd3d12', 'metal', 'cuda'; None: the first).

    Returns:
        A JSON-safe dict: particles, steps, seconds, ms_per_step, particle_steps_per_s, build/detect/
        update ms per step, rebuilds, backend, physics (``physics_summary``) and physics_json.
    """
    runner = make_backend(backend, setup.model, log=lambda message: None, rt_device=rt_device)
    if warmup:
        runner.set_state(setup.state)
        runner.step(warmup)
    runner.set_state(setup.state)
    if untimed_setup:
        runner.prepare()
    began = time.perf_counter()
    timings = runner.step(steps)
    final = runner.get_state()  # includes the device→host copy, as a frame write would
    seconds = time.perf_counter() - began
    n = setup.model.particle_count
    return {
        "scene": setup.name,
        "backend": runner.describe(),
        "particles": n,
        "steps": steps,
        "seconds": seconds,
        "ms_per_step": 1e3 * seconds / steps,
        "particle_steps_per_s": n * steps / seconds,
        "build_ms_per_step": 1e3 * timings.build_s / steps,
        "detect_ms_per_step": 1e3 * timings.detect_s / steps,
        "update_ms_per_step": 1e3 * timings.update_s / steps,
        "fused_ms_per_step": 1e3 * timings.fused_s / steps,
        "colliders_ms_per_step": 1e3 * timings.colliders_s / steps,
        "rebuilds": timings.rebuilds,
        "active_after": int(final.active.sum()),
        "finite_after": bool(np.isfinite(final.positions).all()),
        "physics": physics_summary(setup),
        "physics_json": setup.model.physics.to_json(),
    }

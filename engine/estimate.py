"""What a bake will cost, told before it starts: the resolved stepping and a measured time per step.

``estimate_bake`` steps a throwaway copy of the scene on the chosen backend for a moment (the bake's
own backend and state are never touched, so the bake stays bit-identical), and turns the measured
time per step into the time the whole bake should take on this machine. The first bake after an
install also compiles the CPU kernels (~45 s on two cores); the probe pays for that, and says so.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from .backends import make_backend
from .scene import SceneSetup

#: Steps the probe times after its warm-up step (it stops earlier once ``PROBE_SECONDS`` are spent).
PROBE_STEPS = 64
#: Wall-clock time the probe may take for its timed steps [s].
PROBE_SECONDS = 2.0


@dataclass(frozen=True)
class BakeEstimate:
    """The figures an artist sees before a bake.

    Attributes:
        particle_count: Grains in the scene.
        dt: Time step [s].
        stiffness: Normal contact stiffness [N/m].
        steps_per_frame: Steps between cached frames.
        expected_overlap: Overlap of a grain hitting at the expected impact speed, as a fraction of
            its radius.
        impact_speed: The expected impact speed [m/s].
        seconds_per_step: Measured wall-clock time of one step on this machine and backend [s].
        frames: Frames to bake after frame 1 (the initial state costs nothing).
        warmup_seconds: Time of the probe's first step, compilation included [s].
        backend: Backend the probe ran on.
    """

    particle_count: int
    dt: float
    stiffness: float
    steps_per_frame: int
    expected_overlap: float
    impact_speed: float
    seconds_per_step: float
    frames: int
    warmup_seconds: float
    backend: str

    @property
    def bake_seconds(self) -> float:
        """Estimated wall-clock time of the whole bake [s]."""
        return self.seconds_per_step * self.steps_per_frame * self.frames

    def lines(self) -> list[str]:
        """The figures as short lines for a terminal or a panel."""
        return [f"{self.particle_count:,} particles, {self.backend}",
                f"dt {self.dt:.3g} s, stiffness {self.stiffness:.3g} N/m, {self.steps_per_frame:,} steps per frame",
                f"expected overlap {self.expected_overlap:.1%} of a radius at {self.impact_speed:.3g} m/s",
                f"estimated bake time {format_duration(self.bake_seconds)} for {self.frames} frames "
                f"({self.seconds_per_step * 1e3:.3g} ms per step)"]


def format_duration(seconds: float) -> str:
    """'42 s', '3 min 20 s', '2 h 05 min'."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def estimate_bake(setup: SceneSetup, *, frames: int, backend: str = "cpu", log=lambda message: None,
                  probe_steps: int = PROBE_STEPS, probe_seconds: float = PROBE_SECONDS) -> BakeEstimate:
    """Time a few steps of ``setup`` on ``backend`` and extrapolate to ``frames`` frames.

    Args:
        setup: The scene (its state is copied, never stepped).
        frames: Last frame of the bake (frame 1 is the initial state).
        backend: Backend name, as for ``engine.bake.bake``.
        log: Where the probe says what it does ('compiling...').
        probe_steps: Most steps to time after the warm-up step.
        probe_seconds: Most wall-clock time for the timed steps [s].

    Raises:
        MochiError: the backend cannot run the scene (as the bake would).
    """
    model, choice = setup.model, setup.time_step
    runner = make_backend(backend, model, log=log)
    runner.set_state(setup.state.copy())
    log("Timing a few steps (the first bake after an install also compiles the kernels, ~45 s)...")
    began = time.perf_counter()
    runner.step(1)
    warmup = time.perf_counter() - began
    steps, began = 0, time.perf_counter()
    while steps < probe_steps and time.perf_counter() - began < probe_seconds:
        runner.step(1)
        steps += 1
    per_step = (time.perf_counter() - began) / max(steps, 1)
    return BakeEstimate(particle_count=model.particle_count, dt=choice.dt, stiffness=choice.stiffness,
                        steps_per_frame=model.physics.steps_per_frame, expected_overlap=choice.expected_overlap,
                        impact_speed=choice.impact_speed, seconds_per_step=per_step, frames=max(frames - 1, 0),
                        warmup_seconds=warmup, backend=runner.describe())

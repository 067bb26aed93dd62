"""What a bake will cost, told before it starts and refined while it runs.

A step's cost grows with the contacts the grains have: a loose cloud that is still falling steps 3–4
times faster than the pile it becomes (presets/sand_pile.toml: 0.26 ms per step at the start, ~1 ms
once piled), so timing the first steps alone promised 37 s for a bake that took over three minutes.
``estimate_bake`` therefore times two throwaway states on the chosen backend (the bake's own backend and
state are never touched, so the bake stays bit-identical):

1. the scene as it starts (the probe the estimate always had), and
2. when a fifth or more of the grains start loose, the same grains as a pile holds them: each dropped
   straight down onto the floor or a collider and stacked in columns 0.95 of a mean diameter apart, so
   each touches about as many neighbours as in a settled pile and the bottom ones touch the collider,
   with springs a million times softer so that nothing moves while the contacts are timed (a settled
   pile steps ``PACKED_COST_FACTOR`` = 1.35 times slower than these columns: measured, see there).

Grains that already touch two neighbours (a packed object, a heap) cost what they will cost; each loose
grain is counted loose until it can have landed (its fall along gravity onto the floor or a collider,
from its initial speed), then packed. The step cost in between is the straight line between the two probes in
the number of packed grains, and its sum over the frames is the estimate.

While the bake runs, ``BakeEstimate.remaining_seconds`` scales the predicted cost of the frames still to
come by what the frames done so far really took against what was predicted for them, so a busy machine
or a scene that piles differently corrects the figure within the first frames instead of at the end.
The first bake after an install also compiles the CPU kernels (~45 s on two cores); the first probe
pays for that, and says so.

The load the probes see sets the thread count as it will set the bake's: the CPU backend steps on one
thread when another process makes all threads slower (engine.backends.cpu_threads). So each probe
starts its thread choice afresh after the warm-up step (which compiles, and would count as all threads
being slow), and its figure is the median of the chunks stepped wholly on the count the choice ended
on, not of chunks that mixed in the tries of the other count; the estimate says which count that was.

Before any scene is measured, ``work_seconds`` gives the count-based figure Pack's sentence and the
panel show: the grain-steps at the cost per grain-step of this session's last measurement (or one
measured in Blender's window), so that Pack, the panel and Bake show one estimate that is refined as it
measures (docs/estimate.md). ``estimate_bake(should_stop=...)`` lets Esc stop a measurement between
chunks of 4 steps.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass

import numpy as np

from .backends import make_backend
from .backends.cpu_threads import ThreadCountChooser
from .scene import SceneSetup

#: Steps each probe times after its warm-up step (it stops earlier once ``PROBE_SECONDS`` are spent).
PROBE_STEPS = 64
#: Wall-clock time each probe may take for its timed steps [s].
PROBE_SECONDS = 2.0
#: Column spacing and stacking distance of the packed probe / mean grain diameter: ~4 touching
#: neighbours per grain (a settled pile: 4.4–4.9, docs/physics.md).
PACKED_SPACING = 0.85
#: A settled pile steps this much slower than the packed probe of its own grains: its random packing
#: has more neighbours in reach than the probe's columns, and it spreads over more floor. Measured on
#: sand_pile (5,000 grains): its baked frame 40 against the probe, interleaved on the same load, 1.37
#: and 1.40 (two runs). benchmarks/estimate_accuracy.py checks the whole bakes of four scenes.
PACKED_COST_FACTOR = 1.35
#: A grain that touches this many neighbours at the start is packed already (a packed object, a heap).
PACKED_NEIGHBOURS = 2
#: Share of loose grains from which the packed probe is worth its time: below it the scene is a packed
#: object or a heap already, and two probes of nearly the same contacts would only add their noise.
LOOSE_SHARE_PROBED = 0.2
#: Most ray-triangle tests spent on finding where grains land on colliders (grains × triangles).
RAY_BUDGET = 2e8
#: Grains the packed/loose classification looks at (a random sample of larger scenes).
CLASSIFY_SAMPLE = 20000
#: Wall-clock seconds of one grain's step before anything was measured in this session [s]: Quick
#: Grains' Suzanne (57,702 grains of sand) baked in Blender's window on the 2-core machine took 2 h 55 min
#: for 248 frames of 375 steps, 1.95e-6 s a grain-step. The count-based figure it replaces assumed 2e-7 s
#: (a 5,000-grain pile baked by the command line alone on the machine) and promised 17 min for that bake.
GRAIN_STEP_SECONDS_UNMEASURED = 1.95e-6

_measured_grain_step: list[float] = []  # the last measurement's seconds per grain-step in this process


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
        seconds_per_step: Measured wall-clock time of one step of the initial state [s].
        frames: Frames to bake after frame 1 (the initial state costs nothing).
        warmup_seconds: Time of the probe's first step, compilation included [s].
        backend: Backend the probe ran on.
        packed_seconds_per_step: Measured time of one step once every grain is packed [s]; equal to
            ``seconds_per_step`` when every grain starts packed.
        frame_seconds: Predicted wall-clock time of each frame to bake, frames 2, 3, ... [s], shape
            (frames,); empty for an estimate made without the packing model.
        loose_fraction: Share of the grains that start loose.
        threads: Threads the first probe ended up stepping on under the load it saw; 0 when the backend
            does not choose (GPU, or a scene small enough for one thread always).
        threads_allowed: Threads the backend may step on (0 as for ``threads``).
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
    packed_seconds_per_step: float | None = None
    frame_seconds: tuple[float, ...] = ()
    loose_fraction: float = 0.0
    threads: int = 0
    threads_allowed: int = 0

    @property
    def bake_seconds(self) -> float:
        """Estimated wall-clock time of the whole bake [s]."""
        if self.frame_seconds:
            return float(sum(self.frame_seconds))
        return self.seconds_per_step * self.steps_per_frame * self.frames

    def predicted_seconds(self, frames_stepped: float) -> float:
        """Predicted wall-clock time of the first ``frames_stepped`` frames after frame 1 [s]
        (fractions of a frame count pro rata)."""
        if not self.frame_seconds:
            return self.seconds_per_step * self.steps_per_frame * max(frames_stepped, 0.0)
        whole = min(int(max(frames_stepped, 0.0)), len(self.frame_seconds))
        done = float(sum(self.frame_seconds[:whole]))
        if whole < len(self.frame_seconds):
            done += (frames_stepped - whole) * self.frame_seconds[whole]
        return done

    def remaining_seconds(self, frames_stepped: float, stepping_seconds: float) -> float:
        """Time still to go [s], refined by the running bake.

        Args:
            frames_stepped: Frames stepped so far after frame 1 (``BakeProgress.frames_exact - 1``).
            stepping_seconds: Wall-clock time those steps took (``BakeProgress.stepping_seconds``) [s].

        The frames to come keep their predicted shape (a pour gets dearer as it piles) and are scaled
        by the measured / predicted time of the frames done, which carries the machine's real load.
        """
        predicted_done = self.predicted_seconds(frames_stepped)
        left = max(self.bake_seconds - predicted_done, 0.0)
        if frames_stepped <= 0 or predicted_done <= 0 or stepping_seconds <= 0:
            return left
        return left * stepping_seconds / predicted_done

    def lines(self) -> list[str]:
        """The figures as short lines for a terminal or a panel."""
        per_step = f"{self.seconds_per_step * 1e3:.3g} ms per step"
        if self.packed_seconds_per_step is not None and self.packed_seconds_per_step != self.seconds_per_step:
            per_step += f" now, {self.packed_seconds_per_step * 1e3:.3g} once piled"
        busy = [f"stepping on {self.threads} of {self.threads_allowed} threads: other programs keep the cores busy"] \
            if 0 < self.threads < self.threads_allowed else []
        return [f"{self.particle_count:,} particles, {self.backend}", *busy,
                f"dt {self.dt:.3g} s, stiffness {self.stiffness:.3g} N/m, {self.steps_per_frame:,} steps per frame",
                f"expected overlap {self.expected_overlap:.1%} of a radius at {self.impact_speed:.3g} m/s",
                f"estimated bake time {format_duration(self.bake_seconds)} for {self.frames} frames ({per_step})"]


def grain_step_seconds() -> tuple[float, bool]:
    """(Wall-clock seconds per grain per step [s], whether it was measured on this machine in this
    session): the last ``estimate_bake``'s figure, else ``GRAIN_STEP_SECONDS_UNMEASURED``."""
    if _measured_grain_step:
        return _measured_grain_step[-1], True
    return GRAIN_STEP_SECONDS_UNMEASURED, False


def work_seconds(particle_count: int, steps: int) -> float:
    """The bake time of ``steps`` steps of ``particle_count`` grains before the scene is measured [s]: the
    grain-steps at ``grain_step_seconds``. Pack's sentence and the panel show it until the measurement
    after Pack (``estimate_bake``) replaces it; the running bake then refines that."""
    return float(particle_count) * float(max(steps, 0)) * grain_step_seconds()[0]


def _remember(estimate: "BakeEstimate") -> None:
    """Keep ``estimate``'s seconds per grain-step for ``work_seconds`` (the count-based figures that
    come before the next measurement)."""
    steps = estimate.steps_per_frame * estimate.frames
    if estimate.particle_count > 0 and steps > 0 and estimate.bake_seconds > 0:
        _measured_grain_step[:] = [estimate.bake_seconds / (estimate.particle_count * steps)]


def format_duration(seconds: float) -> str:
    """'42 s', '3 min 20 s', '2 h 05 min'."""
    seconds = max(0.0, float(seconds))
    if seconds < 60:
        return f"{seconds:.0f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60):02d} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60):02d} min"


def _time_steps(runner, state, probe_steps: int, probe_seconds: float, *, chunk: int = 4,
                clock=time.perf_counter, should_stop=None) -> tuple[float, float, ThreadCountChooser | None]:
    """(warm-up step [s], time of one step [s], the runner's thread choice or None) of ``runner`` from
    ``state``.

    The steps are timed in chunks of ``chunk`` and the median chunk counts: a second-long burst of
    another process (a compile, a save) does not set the figure, while a load that lasts through the
    probe does, as it will through the bake (and ``BakeEstimate.remaining_seconds`` follows it after).
    A runner that chooses its thread count (engine.backends.cpu_threads) starts choosing after the
    warm-up, and only the chunks stepped wholly on the count it ends on count, when there are any.
    ``clock`` reads seconds (a parameter for tests). ``should_stop()`` is asked before each chunk; when
    it answers True, ``BakeCancelled`` is raised.
    """
    _stop_if(should_stop)
    runner.set_state(state)
    began = clock()
    runner.step(1)
    warmup = clock() - began
    chooser = getattr(runner, "threads", None)
    if isinstance(chooser, ThreadCountChooser):
        runner.threads = None  # the warm-up compiled: its step says nothing about the thread counts
    chunks, began = [], clock()  # (seconds per step, the one thread count of the chunk or 0)
    while len(chunks) * chunk < probe_steps and clock() - began < probe_seconds:
        _stop_if(should_stop)
        before = _steps_by_count(runner)
        chunk_began = clock()
        runner.step(chunk)
        seconds = (clock() - chunk_began) / chunk
        after = _steps_by_count(runner)
        counts = [threads for threads in after if after[threads] != before.get(threads, 0)]
        chunks.append((seconds, counts[0] if len(counts) == 1 else 0))
    chooser = getattr(runner, "threads", None)
    if not isinstance(chooser, ThreadCountChooser):
        chooser = None
    on_choice = [seconds for seconds, threads in chunks if chooser is not None and threads == chooser.current]
    return warmup, float(np.median(on_choice or [seconds for seconds, _ in chunks])), chooser


def _stop_if(should_stop) -> None:
    """Raise ``BakeCancelled`` when ``should_stop`` (None, or a callable) says so."""
    from .errors import BakeCancelled

    if should_stop is not None and should_stop():
        raise BakeCancelled()


def _steps_by_count(runner) -> dict[int, int]:
    """Steps ``runner`` has stepped on each thread count so far ({} when it does not choose)."""
    chooser = getattr(runner, "threads", None)
    return dict(chooser.steps_by_count) if isinstance(chooser, ThreadCountChooser) else {}


def loose_landing_times(setup: SceneSetup, *, sample: int = CLASSIFY_SAMPLE, seed: int = 0) -> tuple[float, np.ndarray]:
    """Which grains start loose, and when each can have landed.

    A grain is packed when it touches ``PACKED_NEIGHBOURS`` others (centres within 1.02 × the sum of
    the radii); a loose grain lands when it has fallen, from its initial speed along gravity, to the
    domain's wall or the collider below it (the growing pile would catch it earlier: a slight
    overestimate of the time a pour stays cheap).

    Args:
        setup: The scene.
        sample: Grains looked at (a random sample of a larger scene).
        seed: Seed of the sample.

    Returns:
        (share of the grains that start loose, landing times [s] of the loose grains of the sample,
        shape (loose in sample,); infinite where gravity never brings a grain down).
    """
    from scipy.spatial import cKDTree

    model, state = setup.model, setup.state
    n = model.particle_count
    active = state.active.astype(bool) if state.active is not None else np.ones(n, bool)
    positions = state.positions.astype(np.float64)
    radius = model.radius.astype(np.float64)
    picked = np.arange(n) if n <= sample else np.random.default_rng(seed).choice(n, sample, replace=False)
    picked = picked[active[picked]]
    if picked.size == 0:
        return 0.0, np.zeros(0)
    tree = cKDTree(positions)
    reach = 1.02 * (radius[picked] + float(radius.max()))
    touching = np.zeros(picked.size, np.int64)
    for row, (index, others) in enumerate(zip(picked, tree.query_ball_point(positions[picked], reach))):
        others = np.asarray(others, np.int64)
        others = others[others != index]
        gap = np.linalg.norm(positions[others] - positions[index], axis=1)
        touching[row] = int(np.count_nonzero(gap <= 1.02 * (radius[others] + radius[index])))
    loose = picked[touching < PACKED_NEIGHBOURS]
    share = loose.size / picked.size

    physics = model.physics
    g = np.asarray(physics.gravity.vector, np.float64)
    g_norm = float(np.linalg.norm(g))
    turning = physics.gravity.rotation_axis is not None and physics.gravity.rotation_rate != 0.0
    if loose.size == 0 or g_norm == 0.0 or turning:
        return share, np.full(loose.size, np.inf)
    down = g / g_norm
    fall = _landing_distance(setup, positions[loose], radius[loose], down)
    v0 = state.velocities[loose].astype(np.float64) @ down  # positive: already moving down
    landing = (np.sqrt(np.maximum(v0 * v0 + 2.0 * g_norm * fall, 0.0)) - v0) / g_norm
    return share, landing


def _landing_distance(setup: SceneSetup, positions: np.ndarray, radius: np.ndarray, down: np.ndarray) -> np.ndarray:
    """How far each grain can fall along ``down`` before its bottom meets the domain's wall or a
    collider (at its first pose) [m], shape (n,)."""
    physics = setup.model.physics
    lo, hi = np.asarray(physics.domain.lo, np.float64), np.asarray(physics.domain.hi, np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        to_wall = np.where(down > 0, (hi - positions) / down, np.where(down < 0, (lo - positions) / down, np.inf))
    distance = to_wall.min(axis=1)
    colliders = setup.model.colliders
    if colliders is not None and len(colliders) and positions.shape[0] * _triangle_count(colliders) <= RAY_BUDGET:
        from .scene import _distance_to_colliders

        distance = np.minimum(distance, _distance_to_colliders(positions, down, colliders))
    return np.clip(distance - radius, 0.0, None)


def _triangle_count(colliders) -> int:
    return int(sum(len(c.triangles) for c in colliders.colliders))


def packed_state(setup: SceneSetup):
    """The scene's grains rained down and stacked as a pile stacks them, for timing only: (a model whose
    springs are a million times softer, so nothing moves, without glue or clumps, with the scene's
    colliders; its state); None when gravity does not bring grains down.

    Each grain falls straight along gravity onto the floor or a collider; grains are gathered in columns
    ``PACKED_SPACING`` × the mean diameter apart and stacked in each column at that spacing from the
    lowest landing point up, so each touches its neighbours above and below and most of those beside it,
    and the grains resting on a collider touch it.
    """
    from .model import build_model
    from .state import make_state

    model = setup.model
    physics = model.physics
    g = np.asarray(physics.gravity.vector, np.float64)
    turning = physics.gravity.rotation_axis is not None and physics.gravity.rotation_rate != 0.0
    if np.linalg.norm(g) == 0.0 or turning:
        return None
    down = g / np.linalg.norm(g)
    radius = model.radius.astype(np.float64)
    positions = setup.state.positions.astype(np.float64)
    spacing = PACKED_SPACING * 2.0 * float(radius.mean())
    landed = positions + down * _landing_distance(setup, positions, radius, down)[:, None]
    # Two axes across gravity; columns on a square grid of them.
    across = np.linalg.svd(down[None, :])[2][1:]
    cells = np.floor(landed @ across.T / spacing).astype(np.int64)
    height = -(landed @ down)
    order = np.lexsort((height, cells[:, 1], cells[:, 0]))
    cells, height = cells[order], height[order]
    first = np.ones(len(order), bool)
    first[1:] = np.any(cells[1:] != cells[:-1], axis=1)
    stacked = height.copy()
    for row in range(1, len(order)):  # each grain on the one below it in its column, or on its landing point
        if not first[row]:
            stacked[row] = max(height[row], stacked[row - 1] + spacing)
    placed = np.empty_like(positions)
    placed[order] = (cells + 0.5) @ across * spacing - np.outer(stacked, down)
    lo, hi = np.asarray(physics.domain.lo, np.float64), np.asarray(physics.domain.hi, np.float64)
    placed = np.clip(placed, lo + radius[:, None], hi - radius[:, None])
    soft = dataclasses.replace(physics, stiffness=physics.stiffness * 1e-6, bodies=())
    colliders = model.colliders.fresh_copy() if model.colliders is not None else None
    probe_model = build_model(model.radius, soft, material_index=model.material_index, object_id=model.object_id,
                              colliders=colliders)
    return probe_model, make_state(placed.astype(np.float32))


def frame_costs(*, frames: int, steps_per_frame: int, fps: float, start_step: float, packed_step: float,
                landing: np.ndarray) -> tuple[float, ...]:
    """Predicted wall-clock time of each frame after frame 1 [s], shape (frames,).

    The step cost [s] is ``start_step`` at the start and moves in a straight line to ``packed_step`` as
    the loose grains land (``landing`` [s], the loose grains of a sample); it is taken at the middle of
    each frame.
    """
    landing = np.sort(np.asarray(landing, np.float64))
    costs = []
    for index in range(frames):
        middle = (index + 0.5) / fps
        landed = np.searchsorted(landing, middle, side="right") / landing.size if landing.size else 0.0
        cost = start_step + (packed_step - start_step) * landed
        costs.append(max(cost, 0.0) * steps_per_frame)
    return tuple(costs)


def estimate_bake(setup: SceneSetup, *, frames: int, backend: str = "cpu", log=lambda message: None,
                  probe_steps: int = PROBE_STEPS, probe_seconds: float = PROBE_SECONDS,
                  rt_device: str | None = None, should_stop=None) -> BakeEstimate:
    """Time a few steps of ``setup`` (and of its grains packed) on ``backend``; predict ``frames`` frames.

    Args:
        setup: The scene (its state is copied, never stepped).
        frames: Last frame of the bake (frame 1 is the initial state).
        backend: Backend name, as for ``engine.bake.bake``.
        log: Where the probe says what it does ('compiling...').
        probe_steps: Most steps to time after each probe's warm-up step.
        probe_seconds: Most wall-clock time for each probe's timed steps [s].
        rt_device: Device kind for rt or auto, as for ``engine.bake.bake``.
        should_stop: Asked between chunks of 4 steps (and before each probe): True stops the estimate
            with ``BakeCancelled`` (Esc in Blender, within a fraction of a second after the kernels
            are compiled).

    Raises:
        MochiError: the backend cannot run the scene (as the bake would).
        BakeCancelled: ``should_stop`` answered True.
    """
    from .errors import MochiError

    model, choice = setup.model, setup.time_step
    runner = make_backend(backend, model, log=log, rt_device=rt_device)
    log("Timing a few steps (the first bake after an install also compiles the kernels, ~45 s)...")
    warmup, per_step, chooser = _time_steps(runner, setup.state.copy(), probe_steps, probe_seconds,
                                            should_stop=should_stop)

    loose_share, landing = loose_landing_times(setup)
    packed_step = per_step
    if loose_share >= LOOSE_SHARE_PROBED:
        packed = packed_state(setup)
        if packed is not None:
            try:
                # The backend the first probe ended up on ('auto' may have fallen back), not a new choice.
                packed_runner = make_backend(runner.name or backend, packed[0], log=lambda message: None,
                                             rt_device=rt_device if runner.name == "rt" else None)
                _, probed, _ = _time_steps(packed_runner, packed[1], probe_steps, probe_seconds,
                                           should_stop=should_stop)
                packed_step = PACKED_COST_FACTOR * probed
            except MochiError:
                packed_step = per_step  # a state this backend refuses: no better guess than the start
    bake_frames = max(frames - 1, 0)
    physics = model.physics
    costs = frame_costs(frames=bake_frames, steps_per_frame=physics.steps_per_frame, fps=physics.fps,
                        start_step=per_step, packed_step=packed_step, landing=landing)
    estimate = BakeEstimate(particle_count=model.particle_count, dt=choice.dt, stiffness=choice.stiffness,
                        steps_per_frame=physics.steps_per_frame, expected_overlap=choice.expected_overlap,
                        impact_speed=choice.impact_speed, seconds_per_step=per_step, frames=bake_frames,
                        warmup_seconds=warmup, backend=runner.describe(), packed_seconds_per_step=packed_step,
                        frame_seconds=costs, loose_fraction=float(loose_share),
                        threads=chooser.current if chooser else 0, threads_allowed=chooser.most if chooser else 0)
    _remember(estimate)
    return estimate

"""What a bake will cost, told before it starts (engine.estimate) and refreshed while it runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cli.main import main
from engine.backends.base import StepTimings
from engine.backends.cpu_threads import ThreadCountChooser, step_choosing_threads
from engine.estimate import (PACKED_SPACING, PROBE_SECONDS, PROBE_STEPS, BakeEstimate, _time_steps, estimate_bake,
                             format_duration, frame_costs, loose_landing_times, packed_state)
from engine.preset import load_preset
from engine.scene import setup_from_preset

SAND = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"


def _frames(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


def test_probe_reports_the_scene_and_leaves_the_bake_bit_identical(tmp_path):
    setup = setup_from_preset(load_preset(SAND), particles=300)
    positions = setup.state.positions.copy()
    estimate = estimate_bake(setup, frames=4)
    physics, choice = setup.model.physics, setup.time_step
    assert estimate.particle_count == 300 and estimate.steps_per_frame == physics.steps_per_frame
    assert (estimate.dt, estimate.stiffness) == (physics.dt, physics.stiffness)
    assert estimate.expected_overlap == choice.expected_overlap <= 0.1
    assert estimate.seconds_per_step > 0 and estimate.frames == 3 and len(estimate.frame_seconds) == 3
    assert estimate.loose_fraction == 1.0 and estimate.packed_seconds_per_step > 0  # a poured cloud: both probes
    assert estimate.bake_seconds == pytest.approx(sum(estimate.frame_seconds))
    assert np.array_equal(setup.state.positions, positions)  # the probe stepped a copy
    bake(setup, tmp_path / "probed", frames=3)
    bake(setup_from_preset(load_preset(SAND), particles=300), tmp_path / "plain", frames=3)
    assert _frames(tmp_path / "probed") == _frames(tmp_path / "plain")


def test_progress_moves_within_a_frame_and_counts_down(tmp_path):
    seen = []

    def on_step(progress):
        seen.append((progress.frames_exact, progress.remaining_seconds))

    setup = setup_from_preset(load_preset(SAND), particles=300)
    bake(setup, tmp_path / "c", frames=3, on_step=on_step)
    exact = [f for f, _ in seen]
    assert exact == sorted(exact) and any(not float(f).is_integer() for f in exact)
    assert exact[-1] == pytest.approx(3.0)
    remaining = [r for _, r in seen]
    assert all(r is not None and r >= 0 for r in remaining) and remaining[-1] == pytest.approx(0.0, abs=1e-9)


def test_the_running_bake_refines_the_measured_estimate(tmp_path):
    """With the estimate measured before the bake, the remaining time is the estimate's own profile
    scaled by the frames done (BakeEstimate.remaining_seconds), not the plain mean cost per step."""
    from engine.bake import BakeProgress
    from engine.estimate import estimate_bake

    import dataclasses

    setup = setup_from_preset(load_preset(SAND), particles=300)
    # A profile that gets dearer frame by frame, as a pour's does (a 300-grain probe is flat), so the
    # refined figure differs from the mean cost per step times the steps left.
    estimate = dataclasses.replace(estimate_bake(setup, frames=4), frame_seconds=(0.01, 0.05, 0.25))
    seen = []

    def on_frame(progress):
        if 2 <= progress.frames_done < 4:  # frames stepped, and some still to come
            left = (4 - progress.frames_done) * progress.steps_per_frame - progress.steps_into_frame
            seen.append((progress.remaining_seconds,
                         estimate.remaining_seconds(progress.frames_exact - 1, progress.stepping_seconds),
                         left * progress.stepping_seconds / progress.timings.steps))

    progress = bake(setup, tmp_path / "c", frames=4, progress=BakeProgress(estimate=estimate), on_frame=on_frame)
    assert progress.estimate is estimate and seen
    assert all(shown == pytest.approx(refined) for shown, refined, _ in seen)
    assert any(shown != pytest.approx(plain, rel=0.05) for shown, _, plain in seen)


def test_cli_prints_the_figures_before_baking(tmp_path, capsys):
    assert main(["bake", str(SAND), "--particles", "300", "--frames", "2", "--out", str(tmp_path / "c")]) == 0
    err = capsys.readouterr().err
    for words in ("300 particles", "steps per frame", "stiffness", "expected overlap", "estimated bake time"):
        assert words in err
    assert main(["bake", str(SAND), "--particles", "300", "--frames", "2", "--out", str(tmp_path / "d"),
                 "--no-estimate"]) == 0
    assert "estimated bake time" not in capsys.readouterr().err


@pytest.mark.parametrize("seconds,text", [(42.4, "42 s"), (200, "3 min 20 s"), (7500, "2 h 05 min")])
def test_durations_read_like_a_person_writes_them(seconds, text):
    assert format_duration(seconds) == text


# --- the cost model: loose grains land and cost what a pile costs --------------------------------------

def _cloud_and_block(tmp_path, *, heights, block_at=None):
    """A scene of single grains at ``heights`` [m] above the floor (loose) and, optionally, a packed
    3×3×3 block of touching grains centred at ``block_at``."""
    from engine.scene import setup_from_arrays

    r = 0.005
    loose = np.array([[0.1 + 0.03 * i, h, 0.5] for i, h in enumerate(heights)])
    parts = [loose]
    if block_at is not None:
        grid = np.stack(np.meshgrid(*[np.arange(3)] * 3, indexing="ij"), -1).reshape(-1, 3) * 2 * r
        parts.append(grid - grid.mean(0) + np.asarray(block_at))
    positions = np.concatenate(parts)
    return setup_from_arrays(positions=positions, radius=np.full(len(positions), r), stiffness=1e4, dt=1e-4)


def test_loose_grains_land_when_their_fall_is_done_and_packed_ones_count_as_piled(tmp_path):
    setup = _cloud_and_block(tmp_path, heights=[0.2, 0.45, 0.8], block_at=(0.5, 0.5, 0.5))
    share, landing = loose_landing_times(setup)
    assert share == pytest.approx(3 / 30)  # the 27 grains of the block touch their neighbours
    fall = np.array([0.2, 0.45, 0.8]) - 0.005  # to the floor y = 0, less a radius
    assert np.sort(landing) == pytest.approx(np.sqrt(2 * fall / 9.81), rel=1e-6)


def test_a_pour_costs_the_start_until_grains_land_then_what_a_pile_costs():
    """Half the grains land at 0.1 s, half at 0.3 s (fps 10: frames centred at 0.05, 0.15, 0.25, 0.35 s)."""
    costs = frame_costs(frames=4, steps_per_frame=100, fps=10.0, start_step=1e-3, packed_step=4e-3,
                        landing=np.array([0.1, 0.1, 0.3, 0.3]))
    assert costs == pytest.approx((0.1, 0.25, 0.25, 0.4))
    flat = frame_costs(frames=2, steps_per_frame=100, fps=10.0, start_step=1e-3, packed_step=1e-3,
                       landing=np.zeros(0))
    assert flat == pytest.approx((0.1, 0.1))


def test_the_packed_probe_touches_like_a_pile_and_moves_nothing():
    """The packed probe's grains touch about four others each (a settled pile: 4.4–4.9,
    docs/physics.md; the poured cloud: ~0), stand on the floor inside the domain, without glue; its
    springs are too soft to move anything."""
    from scipy.spatial import cKDTree

    setup = setup_from_preset(load_preset(SAND), particles=2000)
    model, state = packed_state(setup)
    p, r = state.positions.astype(np.float64), model.radius.astype(np.float64)
    pairs = cKDTree(p).query_pairs(2 * r.max(), output_type="ndarray")
    touching = np.linalg.norm(p[pairs[:, 0]] - p[pairs[:, 1]], axis=1) <= r[pairs[:, 0]] + r[pairs[:, 1]]
    coordination = 2 * touching.sum() / len(p)
    assert 3.0 <= coordination <= 8.0, coordination
    lo, hi = np.asarray(model.physics.domain.lo), np.asarray(model.physics.domain.hi)
    assert np.all(p - r[:, None] >= lo - 1e-6) and np.all(p + r[:, None] <= hi + 1e-6)
    assert p[:, 1].min() == pytest.approx(r[np.argmin(p[:, 1])], abs=1e-6)  # the lowest rests on the floor
    assert p[:, 1].max() < 0.5 * (hi[1] - lo[1])  # piled, not in the air where the cloud started
    assert model.physics.stiffness == pytest.approx(setup.model.physics.stiffness * 1e-6)
    assert model.physics.bodies == () and PACKED_SPACING < 1.0


def test_grains_poured_over_a_bowl_are_packed_into_it():
    """bowl_pour's cloud falls into the bowl collider (rim at y = 0.32 m, radius 0.15 m), not through
    it onto the floor: the probe times the grains that rest on the collider."""
    setup = setup_from_preset(load_preset(SAND.with_name("bowl_pour.toml")), particles=1000)
    model, state = packed_state(setup)
    y = state.positions[:, 1]
    assert model.colliders is not None and len(model.colliders) == 1
    assert np.mean((y > 0.17) & (y < 0.5)) > 0.9, np.percentile(y, [5, 50, 95])
    share, landing = loose_landing_times(setup)
    assert share == 1.0 and np.all(landing < np.sqrt(2 * 0.8 / 9.81))  # caught by the bowl, before the floor


def test_the_running_bake_rescales_what_is_left():
    """Frames done twice as slowly as predicted: what is left takes twice its prediction; the shape of
    the prediction (dearer frames later) is kept."""
    estimate = BakeEstimate(particle_count=10, dt=1e-4, stiffness=1e3, steps_per_frame=100, expected_overlap=0.01,
                            impact_speed=1.0, seconds_per_step=1e-3, frames=4, warmup_seconds=0.0, backend="cpu",
                            packed_seconds_per_step=3e-3, frame_seconds=(0.1, 0.1, 0.3, 0.3))
    assert estimate.bake_seconds == pytest.approx(0.8)
    assert estimate.remaining_seconds(0, 0.0) == pytest.approx(0.8)
    assert estimate.remaining_seconds(2, 0.4) == pytest.approx(2 * 0.6)
    assert estimate.remaining_seconds(2.5, 0.25) == pytest.approx(0.45 * 0.25 / 0.35)
    assert estimate.remaining_seconds(4, 1.0) == pytest.approx(0.0)
    assert "3 ms per step once piled" in estimate.lines()[-1] or "3 once piled" in estimate.lines()[-1]


class _ChoosingRunner:
    """A CPU backend stand-in on a clock of its own: a step on t threads costs ``cost[t]`` s, the count
    chosen by the backend's own chooser and stepping loop (engine.backends.cpu_threads). Its first step
    also compiles (``compile_s``)."""

    def __init__(self, cost: dict[int, float], compile_s: float = 30.0):
        self.cost, self.now, self.threads, self.compile_s = cost, 0.0, None, compile_s

    def set_state(self, state) -> None:
        pass

    def step(self, count: int):
        if self.threads is None:
            self.threads = ThreadCountChooser(2)
        return step_choosing_threads(self.threads, self._step_on, count)

    def _step_on(self, threads: int, count: int) -> StepTimings:
        seconds, self.compile_s = self.cost[threads] * count + self.compile_s, 0.0
        self.now += seconds
        return StepTimings(fused_s=seconds, steps=count)


@pytest.mark.parametrize("cost, seconds, threads", [
    ({1: 5.6e-3, 2: 62e-3}, 5.6e-3, 1),  # a busy core: one thread (measured, issue 27)
    ({1: 14.3e-3, 2: 7.9e-3}, 7.9e-3, 2),  # quiet: both
    ({1: 11.3e-3, 2: 11.0e-3}, 11.3e-3, 1),  # a busy core, threads that sleep at once: as fast, so one
])
def test_the_probe_times_the_thread_count_the_load_it_sees_makes_the_bake_choose(cost, seconds, threads):
    """The estimate is for the thread count the load makes the backend choose, not a mix with the tries
    of the other, nor swayed by a compiling warm-up step."""
    runner = _ChoosingRunner(cost)
    warmup, per_step, chooser = _time_steps(runner, None, PROBE_STEPS, PROBE_SECONDS, clock=lambda: runner.now)
    assert warmup == pytest.approx(30.0 + cost[1]) and per_step == pytest.approx(seconds) and chooser.current == threads
    estimate = BakeEstimate(particle_count=10**5, dt=1e-4, stiffness=1e3, steps_per_frame=100, expected_overlap=0.01,
                            impact_speed=1.0, seconds_per_step=per_step, frames=4, warmup_seconds=warmup,
                            backend="cpu", threads=chooser.current, threads_allowed=chooser.most)
    assert ("stepping on 1 of 2 threads" in " ".join(estimate.lines())) == (threads == 1)


def test_the_estimate_stops_between_chunks_when_asked():
    """Esc during the measurement before a bake: ``should_stop`` is asked before each chunk of 4 steps,
    and the estimate ends with BakeCancelled at the first True."""
    from engine.errors import BakeCancelled

    setup = setup_from_preset(load_preset(SAND), particles=300)
    asked = []

    def should_stop():
        asked.append(True)
        return len(asked) >= 3

    with pytest.raises(BakeCancelled):
        estimate_bake(setup, frames=4, should_stop=should_stop)
    assert len(asked) == 3  # before the warm-up, before chunk 1, then before chunk 2: stopped there
    assert estimate_bake(setup, frames=4, should_stop=lambda: False).frames == 3


def test_the_count_based_time_uses_the_last_measurement():
    """Pack's sentence and the panel's rough line come from ``work_seconds``: before any measurement at
    the figure measured in Blender's window, after one at that measurement's cost per grain-step."""
    import engine.estimate as module

    saved = list(module._measured_grain_step)
    try:
        module._measured_grain_step.clear()
        assert module.grain_step_seconds() == (module.GRAIN_STEP_SECONDS_UNMEASURED, False)
        assert module.work_seconds(1000, 500) == pytest.approx(1000 * 500 * module.GRAIN_STEP_SECONDS_UNMEASURED)
        setup = setup_from_preset(load_preset(SAND), particles=300)
        estimate = estimate_bake(setup, frames=4)
        assert module.grain_step_seconds()[1]
        assert module.work_seconds(300, estimate.steps_per_frame * 3) == pytest.approx(estimate.bake_seconds)
    finally:
        module._measured_grain_step[:] = saved

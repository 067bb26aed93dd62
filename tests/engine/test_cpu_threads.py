"""The CPU backend's thread-count choice: the cheaper count wins, a changed load is noticed, bits never move."""

from __future__ import annotations

import numba
import numpy as np
import pytest

from engine.backends import cpu
from engine.backends.cpu import BackendCpu
from engine.backends.base import StepTimings
from engine.backends.cpu_threads import PROBE_AFTER_MAX_S, ThreadCountChooser, step_choosing_threads

from .conftest import scene


def _drive(chooser: ThreadCountChooser, cost, steps: int) -> list[int]:
    """Step ``chooser`` through ``steps`` steps where a step on t threads takes ``cost(t, step)`` s
    (no clock is read: the costs are given); returns the thread count of every step."""
    used = []

    def step_on(threads: int, count: int) -> StepTimings:
        seconds = sum(cost(threads, len(used) + i) for i in range(count))
        used.extend([threads] * count)
        return StepTimings(fused_s=seconds, steps=count)

    step_choosing_threads(chooser, step_on, steps)
    return used


def test_one_busy_core_makes_it_step_on_one_thread():
    """The measured case: 5.6 ms on 1 thread, 62 ms on 2 while another process keeps a core busy."""
    used = _drive(ThreadCountChooser(2), lambda t, s: 5.6e-3 if t == 1 else 62e-3, 2000)
    assert used[:4] == [1, 1, 1, 2] and used.count(2) <= 8, "two-thread steps: one per try"
    total = sum(5.6e-3 if t == 1 else 62e-3 for t in used)
    assert total < 1.05 * 2000 * 5.6e-3


def test_the_first_steps_set_up_does_not_decide_the_count():
    """The first step after ``set_state`` may carry one-off set-up (velocity Verlet's first force pass,
    reported as ``setup_s``): with a core kept busy, where all threads cost 1.5x one, set-up that made
    the first one-thread step cost 8 steps does not make all threads look cheaper."""
    used = []

    def step_on(threads: int, count: int) -> StepTimings:
        timings = StepTimings(fused_s=count * (20e-3 if threads == 1 else 30e-3), steps=count)
        if not used:
            timings.setup_s = 140e-3
        used.extend([threads] * count)
        return timings

    step_choosing_threads(ThreadCountChooser(2), step_on, 400)
    assert used[:5] == [1, 1, 1, 2, 2] and used.count(2) <= 5, used[:10]  # the first try: 2 steps


def test_a_step_that_compiles_does_not_decide_the_count():
    """A step in which numba compiled a kernel (its first call, no disk cache yet: seconds) is not
    compared: on a quiet machine whose first step on all threads compiled (the kernels of the crossing
    entries, which only several threads run), all threads are still chosen at their first try."""
    used = []

    def step_on(threads: int, count: int) -> StepTimings:
        seconds = count * (20e-3 if threads == 1 else 10.5e-3)
        if threads == 2 and 2 not in used:  # a real compilation

            @numba.njit(cache=False)
            def first_call(x):
                return x + 1.0

            first_call(1.0)
            seconds += 3.0
        used.extend([threads] * count)
        return StepTimings(fused_s=seconds, steps=count)

    chooser = ThreadCountChooser(2)
    step_choosing_threads(chooser, step_on, 400)
    # three steps on one thread, the try on all (its compiling step not counted), then all threads
    assert used[:3] == [1, 1, 1] and used[3:9] == [2] * 6 and used.count(1) <= 3 + 0.02 * len(used), used[:12]
    assert sum(chooser.steps_by_count.values()) == 400


def test_the_first_step_on_a_count_does_not_decide_it():
    """The first step on all threads loads the kernels only several threads run from the disk cache and
    wakes the threads (seen: a paper-model bake on a quiet machine kept one thread after a try whose
    first step cost that): it is not compared, so all threads win their first try."""
    used = []

    def step_on(threads: int, count: int) -> StepTimings:
        seconds = count * (20e-3 if threads == 1 else 10.5e-3)
        if threads == 2 and 2 not in used:
            seconds += 0.2
        used.extend([threads] * count)
        return StepTimings(fused_s=seconds, steps=count)

    step_choosing_threads(ThreadCountChooser(2), step_on, 400)
    assert used[:3] == [1, 1, 1] and used[3:9] == [2] * 6 and used.count(1) <= 3 + 0.02 * len(used), used[:12]


def test_a_noisy_single_thread_does_not_trigger_tries():
    """Under load the one-thread steps jitter (other processes preempt them too): that is no reason to
    try all threads again before the wait is over."""
    jitter = np.random.default_rng(3).uniform(0.6, 1.8, 4000)
    used = _drive(ThreadCountChooser(2), lambda t, s: 5.6e-3 * jitter[s] if t == 1 else 62e-3, 4000)
    assert used.count(2) <= 8


def test_a_quiet_machine_keeps_every_thread():
    used = _drive(ThreadCountChooser(2), lambda t, s: 14.3e-3 if t == 1 else 7.9e-3, 2000)
    assert used.count(1) <= 0.02 * len(used), "short tries, the waits doubling from 0.5 s"
    assert sum(14.3e-3 if t == 1 else 7.9e-3 for t in used) < 1.02 * 2000 * 7.9e-3


def test_a_load_that_comes_and_goes_is_followed():
    """Quiet for 18 s (the wait between tries has grown to its longest), a busy core for 2000 steps,
    quiet again: the load's arrival is seen at the next stretch (the cost per step jumped), its
    departure at the latest after one longest wait."""
    def cost(t, step):
        busy = 6000 <= step < 8000
        return (5.6e-3 if t == 1 else 62e-3) if busy else (5.6e-3 if t == 1 else 3.0e-3)

    used = _drive(ThreadCountChooser(2), cost, 12000)
    assert used[5900:6000].count(2) == 100
    assert used[6000:8000].count(2) < 12, "one thread from the stretch after the load came"
    settle = int(PROBE_AFTER_MAX_S / 5.6e-3) + 10
    after = used[8000 + settle:]
    assert after.count(1) <= 0.02 * len(after), "back on two threads after the load left (tries aside)"


def test_all_threads_no_faster_than_one_means_one_thread():
    """A busy core with threads that sleep at once: all threads cost about what one does (11.8 against
    11.3 ms, measured). They only take a core from the other programs then: one thread is chosen."""
    for all_threads in (11.8e-3, 11.0e-3):
        used = _drive(ThreadCountChooser(2), lambda t, s: 11.3e-3 if t == 1 else all_threads, 600)
        assert used[:4] == [1, 1, 1, 2] and used.count(2) <= 10, "tries of at most 3 steps"


def test_a_losing_try_is_given_up_after_one_step():
    """Tries cost about one step: on a quiet machine one thread's step (14.3 ms against 7.9) and with a
    busy core the all-thread step (19.6 ms against 11.3) each lose at their first step."""
    quiet = _drive(ThreadCountChooser(2), lambda t, s: 14.3e-3 if t == 1 else 7.9e-3, 2000)
    tries = sum(1 for a, b in zip(quiet, quiet[1:]) if a == 2 and b == 1)
    assert quiet.count(1) == 3 + tries, "the first 3 steps, then one step per try on one thread"
    busy = _drive(ThreadCountChooser(2), lambda t, s: 11.3e-3 if t == 1 else 19.6e-3, 2000)
    tries = sum(1 for a, b in zip(busy, busy[1:]) if a == 1 and b == 2)
    assert busy.count(2) == 1 + tries, "one step per try, and the first step on all threads (not compared)"


def test_one_thread_allowed_means_no_tries():
    assert _drive(ThreadCountChooser(1), lambda t, s: 1e-3, 50) == [1] * 50


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs numba with at least 2 threads")
def test_switching_threads_mid_run_changes_no_bit(rng, monkeypatch):
    """A chooser that alternates every stretch between 2 threads and 1 gives the bits of one thread."""
    monkeypatch.setattr(cpu, "SINGLE_THREAD_BELOW", 0)
    n = 3000
    setup = scene(rng.uniform(-0.3, 0.3, (n, 3)), rng.uniform(0.01, 0.014, n), gravity=(0, -9.81, 0),
                  stiffness=2.0e3, dt=1e-4, rotation=False, integrator="euler")

    class Alternating(ThreadCountChooser):
        def plan(self, remaining):
            self.current = 1 if self.current == 2 else 2
            return self.current, min(3, remaining), False

    before = numba.get_num_threads()
    states = []
    try:
        for adaptive in (False, True):
            numba.set_num_threads(1 if not adaptive else 2)
            backend = BackendCpu(setup.model)
            backend.adaptive_threads = adaptive
            backend.threads = Alternating(2) if adaptive else None
            backend.set_state(setup.state)
            backend.step(120)
            states.append(backend.get_state())
            if adaptive:
                assert backend.threads.steps_by_count == {1: 60, 2: 60}
    finally:
        numba.set_num_threads(before)
    assert np.array_equal(states[0].positions, states[1].positions)
    assert np.array_equal(states[0].velocities, states[1].velocities)
    assert np.abs(states[0].positions - setup.state.positions).max() > 0


def test_the_engine_asks_for_a_short_spin_unless_a_wait_is_named(monkeypatch):
    import engine

    for named in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
        monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
        engine.prefer_short_spin()
        assert (engine.os.environ["OMP_WAIT_POLICY"], engine.os.environ["GOMP_SPINCOUNT"]) == \
            ("PASSIVE", str(engine.SPIN_COUNT))
        monkeypatch.delenv("OMP_WAIT_POLICY")
        monkeypatch.delenv("GOMP_SPINCOUNT")
        monkeypatch.setenv(named, "ACTIVE" if named == "OMP_WAIT_POLICY" else "7")
        engine.prefer_short_spin()
        assert [key for key in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT") if key in engine.os.environ] == [named]


class _Load:
    """The other processes' load [cores] as ``OtherLoad.sample`` reads it, given by the test."""

    def __init__(self, cores):
        self.cores = cores

    def sample(self):
        return self.cores


@pytest.mark.parametrize("faster_alone", [False, True])
def test_a_steady_load_spends_no_step_on_tries(faster_alone):
    """Quiet (all threads faster) or one core busy all along (one thread faster): after the first try,
    tries come due only at the longest wait while the load reads the same."""
    cost = (lambda t, s: 14.3e-3 if t == 1 else 7.9e-3) if not faster_alone else \
        (lambda t, s: 11.3e-3 if t == 1 else 19.6e-3)
    chooser = ThreadCountChooser(2, load=_Load(0.8 if faster_alone else 0.0))
    used = _drive(chooser, cost, 600)
    if faster_alone:  # the busy core read at the start: no try before the longest wait (8 s; this is 6.8 s)
        assert used == [1] * 600
    else:
        assert used[:4] == [1, 1, 1, 2] and used.count(1) == 3
    assert chooser.skipped >= 3


def test_a_load_read_to_change_is_tried_and_followed():
    """A busy core for 2000 steps, then quiet: while the load reads the same no try; when it reads
    changed, the next due try goes back to every thread."""
    load = _Load(0.9)

    def cost(t, step):
        if step == 2000:
            load.cores = 0.0
        return (5.6e-3 if t == 1 else 62e-3) if step < 2000 else (5.6e-3 if t == 1 else 3.0e-3)

    chooser = ThreadCountChooser(2, load=load)
    used = _drive(chooser, cost, 4000)
    busy_tries = used[2:2000].count(2)
    assert busy_tries <= 3, "the first try (two steps), then only at the longest wait (8 s of stepping)"
    assert used[2000 + int(1.0 / 5.6e-3):].count(1) <= 20, "back on two threads within the next waits"


def test_an_unreadable_load_keeps_the_timer():
    quiet = lambda t, s: 14.3e-3 if t == 1 else 7.9e-3  # noqa: E731
    assert _drive(ThreadCountChooser(2, load=_Load(None)), quiet, 2000) == _drive(ThreadCountChooser(2), quiet, 2000)

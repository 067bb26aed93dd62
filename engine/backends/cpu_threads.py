"""How many threads the CPU backend steps with: all of them while they are clearly faster than one.

On a machine where another process keeps a core busy (Blender's UI, a render, a browser), numba's
parallel loops lose badly: every parallel region ends at a barrier, and the thread that shares its core
with the other process arrives a scheduler quantum late; with the OpenMP layer's spinning barriers a
100k-grain step measured 62 ms on 2 threads against 5.6 ms on 1 (issue 27). No setting known before
the run says which count wins, so ``ThreadCountChooser`` measures: it times the steps at the count in
use, now and then tries the other count for a few steps, and keeps whichever costs less per step. The
results do not depend on the thread count (engine.backends.cpu_fused), so switching changes no bit.

Threads that wait at a barrier spin only briefly, then sleep (``GOMP_SPINCOUNT``, set by
``engine.prefer_short_spin`` at the engine's import, before numba starts its OpenMP layer, which reads
it once): long enough to cover a barrier on a quiet machine, where both threads arrive within
microseconds and waking a sleeping one would cost more, too short to hold the core a late thread needs
for long. With a busy core the short spin still makes all threads clearly slower than one, which is what
lets the measurement below tell them apart (sleeping at once left the two within a few per cent, and
the choice stayed on all threads while one was as fast).

Policy: start by timing a few steps on one thread, then try all threads for a few (a try on a losing count
stops after its first step; where the other processes' load, read before the start, shows a busy core, that
first try waits as later ones do); then run on the cheaper count (one thread unless all are ``HYSTERESIS``
cheaper: a count that is not faster only takes a core from the artist's other programs; with a core kept
busy, a single step on all threads can be as cheap as a quiet machine's by luck, so the first choice weighs
several, and one thread's steps are the steady reference), trying the other after ``PROBE_AFTER_S`` seconds
of stepping, doubling that wait (up to ``PROBE_AFTER_MAX_S``) each time the try confirms the choice,
resetting it when the choice changes, and trying at once when the smoothed cost per step on all threads
rises by ``CHANGE`` (a load came). Where the load other processes put on our cores can be read
(engine.backends.cpu_load), it is read every ``PROBE_AFTER_S`` of stepping instead: while it reads as it did
when the choice was made (within ``LOAD_CHANGE`` cores) the other count is tried only every
``PROBE_AFTER_MAX_S``, and at once when it reads changed, so a quiet machine or a steady load spends no step
on tries. A try stops as soon as it can no longer win (its cost per step so far is above what it needs to be
chosen, with ``GIVE_UP_SLACK`` for one noisy step), so trying a losing count costs about one step. What is
not the step's own cost is left out of every comparison: neighbour-list builds, the first step's set-up
(``StepTimings.setup_s``), the first step on each count (kernels loaded, threads woken) and any step in
which numba compiled a kernel (a bake's first, before the disk cache has it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from numba.core import event as numba_event

from .base import StepTimings
from .cpu_load import OtherLoad

#: Seconds of stepping before the other count is tried again, first and at most.
PROBE_AFTER_S = 0.5
PROBE_AFTER_MAX_S = 8.0
#: Steps and seconds a try and a running stretch last at least (one `_step` call per running
#: stretch): a stretch shorter than a few scheduler quanta would measure the scheduler, not the step.
PROBE_STEPS = 3
CHUNK_STEPS = 4
CHUNK_S = 0.03
#: All threads must be this much cheaper than one to be chosen (noise must not flip the choice), and
#: one thread is chosen back when it costs at most ``PREFER_ONE`` more than all (``1 - HYSTERESIS``
#: against ``1 + PREFER_ONE``: a band in between, so the choice does not flap). With a core kept busy,
#: two threads on the 100k pile measured 0.95–0.97× one thread on average but now and then a stretch
#: 10–20% cheaper (0.1 let those switch); a quiet machine's cost 0.53–0.7× one thread's (the freefall's
#: short steps the most), which 0.25 sometimes refused (bench_threads trial runs of 2026-11-27, not kept;
#: the kept runs with 0.15 are in docs/benchmarks.md, "Points 4 and 5 met").
HYSTERESIS = 0.15
PREFER_ONE = 0.05
#: A try is given up once its mean cost per step exceeds the cost that would win by this factor.
GIVE_UP_SLACK = 1.25
#: A rise of the (smoothed) cost per step on all threads by this factor triggers a try: the load
#: came. (On one thread a competing process barely shows; its departure is found by the next try.)
CHANGE = 1.5
#: Weight of the newest stretch in the smoothed cost per step.
SMOOTHING = 0.3
#: Change of the other processes' load [cores] that makes a due try worth its step (a busy core
#: reads as 0.7–1; a quiet machine as 0–0.1).
LOAD_CHANGE = 0.3
#: The other processes' load [cores] read before the first choice at which all threads are not tried
#: at the start (each try on a busy core costs a step several times one thread's).
BUSY_AT_START = 0.5


@dataclass
class ThreadCountChooser:
    """Chooses between ``most`` threads and one (see the module docstring).

    Attributes:
        most: The thread count allowed (numba's count when the bake started), ≥ 1.
        current: The count stepping now.
        cost: Latest measured seconds per step, by thread count.
        switches: How often the choice changed (for benchmarks and tests).
        steps_by_count: Steps run on each count.
        load: Reads the other processes' load on our cores (None: tries on the timer alone).
        skipped: Readings of the load that found it unchanged, each sparing a try the timer alone
            would have made at its doubling waits (for benchmarks and tests).
    """

    most: int
    current: int = 0
    cost: dict[int, float] = field(default_factory=dict)
    switches: int = 0
    steps_by_count: dict[int, int] = field(default_factory=dict)
    load: OtherLoad | None = None
    skipped: int = 0
    _load_at_choice: float | None = None  # the other processes' load [cores] when last chosen
    _forced: bool = False  # the cost on all threads rose: try whatever the load reads
    _wait_s: float = PROBE_AFTER_S
    _since_probe_s: float = 0.0
    _since_check_s: float = 0.0  # stepping time since the load was last read [s]
    _load_read: bool = False  # the last reading of the load succeeded
    _reference: float = 0.0  # cost per step of the count in use when it was last chosen or confirmed
    _smoothed: float = 0.0
    _try_steps: int = PROBE_STEPS
    _started: bool = False  # the first plan has read the load
    _deferred: bool = False  # a busy core read at the start: the first try waits as a later one would

    def __post_init__(self):
        self.current = 1  # all threads are tried at once (plan), and must win over several steps

    @property
    def other(self) -> int:
        return 1 if self.current != 1 else self.most

    def plan(self, remaining: int) -> tuple[int, int, bool]:
        """(threads, steps, is_try) for the next stretch of at most ``remaining`` steps."""
        if self.most <= 1:
            return 1, remaining, False
        if not self._started:
            self._read_load_at_start()
        if self.current not in self.cost:
            return self.current, min(PROBE_STEPS, remaining), False
        if (self.other not in self.cost and not self._deferred) or self._try_due():
            if self._forced:  # the load changed unread: the next reading is the one this try decides for
                self._forced, self._load_at_choice = False, None
            self._try_steps = min(max(PROBE_STEPS, self._stretch_steps()), remaining)
            return self.other, self._try_steps, True
        return self.current, min(max(CHUNK_STEPS, self._stretch_steps()), remaining), False

    def _read_load_at_start(self) -> None:
        """Read the other processes' load before the first choice (over the time since ``load`` was last
        read: the backend's is ``cpu_load.PROCESS_LOAD``, so the first reading spans what the process did
        before). At ``BUSY_AT_START`` cores or more, all threads would wait on that core: the first try
        waits as a later one would (the longest wait, or at once when the load reads changed)."""
        self._started = True
        now = self.load.sample() if self.load is not None else None
        if now is None:
            return
        self._load_at_choice, self._load_read = now, True
        self._deferred = now >= BUSY_AT_START

    def _try_due(self) -> bool:
        """Whether to try the other count now: the cost on all threads rose, the load read changed, or
        the wait is over (the longest wait while the load reads steady, the doubling one unread)."""
        if self._forced:
            return True
        if self.load is not None and self._since_check_s >= PROBE_AFTER_S:
            self._since_check_s = 0.0
            changed = self._load_changed()
            self._load_read = changed is not None
            if changed:
                return True
        if self._load_read:
            return self._since_probe_s >= PROBE_AFTER_MAX_S
        return self._since_probe_s >= self._wait_s

    def _load_changed(self) -> bool | None:
        """Whether the other processes' load reads changed since the choice was made or confirmed (None:
        unreadable). The first reading spans the first stretches, where the choice was made: it is the
        reference until a reading differs by ``LOAD_CHANGE``, which the try it triggers decides for."""
        now = self.load.sample()
        if now is None:
            return None
        if self._load_at_choice is None or abs(now - self._load_at_choice) < LOAD_CHANGE:
            self._load_at_choice = now if self._load_at_choice is None else self._load_at_choice
            self.skipped += 1
            return False
        self._load_at_choice = now
        return True

    def _stretch_steps(self) -> int:
        """Steps of the count in use that last ``CHUNK_S``."""
        return int(CHUNK_S / max(self.cost[self.current], 1e-9))

    def record(self, threads: int, steps: int, seconds: float, *, is_try: bool) -> None:
        """Account ``steps`` steps run on ``threads`` threads in ``seconds`` (stepping time only; the
        caller counts them in ``steps_by_count``, measured or not)."""
        per_step = seconds / max(steps, 1)
        self._since_check_s += seconds
        if not is_try:
            self.cost[threads] = per_step
            self._since_probe_s += seconds
            self._smoothed = per_step if not self._smoothed else \
                SMOOTHING * per_step + (1.0 - SMOOTHING) * self._smoothed
            if threads > 1 and self._reference and self._smoothed > CHANGE * self._reference:
                self._wait_s = self._since_probe_s = PROBE_AFTER_S  # the load came: try at once
                self._forced = True
            return
        winning = self._winning_cost(threads)
        self.cost[threads] = per_step
        self._since_probe_s = 0.0
        if per_step <= winning:
            self.current = threads
            self.switches += 1
            self._wait_s = PROBE_AFTER_S
        else:
            self._wait_s = min(2.0 * self._wait_s, PROBE_AFTER_MAX_S)
        self._reference = self._smoothed = self.cost[self.current]

    def _winning_cost(self, threads: int) -> float:
        """Seconds per step below which a try on ``threads`` replaces the count in use."""
        current = self.cost.get(self.current, float("inf"))
        return current * (1.0 + PREFER_ONE) if threads == 1 else current * (1.0 - HYSTERESIS)

    def give_up_try(self, threads: int, steps_done: int, seconds: float) -> bool:
        """Whether a try on ``threads`` that has run ``steps_done`` steps in ``seconds`` has lost: its
        mean step is beyond what would win (by ``GIVE_UP_SLACK``), or it already cost more than the whole
        try would on the count in use."""
        if steps_done < 1:
            return False
        current = self.cost.get(self.current, float("inf"))
        return seconds > GIVE_UP_SLACK * self._winning_cost(threads) * steps_done or \
            seconds > current * self._try_steps


def step_choosing_threads(chooser: ThreadCountChooser, step_on: Callable[[int, int], StepTimings],
                          count: int) -> StepTimings:
    """Run ``count`` steps in the stretches ``chooser`` plans, timing each for it.

    Args:
        chooser: Plans the stretches and is told what each cost.
        step_on: ``step_on(threads, steps)`` runs ``steps`` steps on ``threads`` threads and returns
            their timings (a backend's step on a set thread count).
        count: Steps to run.
    """
    timings = StepTimings()
    done = 0
    while done < count:
        threads, steps, is_try = chooser.plan(count - done)
        spent, ran, measured = 0.0, 0, 0
        while ran < steps:  # a try one step at a time, so a losing count is left early
            first_on_count = threads not in chooser.steps_by_count
            compiled = COMPILATIONS.count
            part = step_on(threads, 1 if is_try or first_on_count else steps - ran)
            timings.add(part)
            ran += part.steps
            chooser.steps_by_count[threads] = chooser.steps_by_count.get(threads, 0) + part.steps
            if first_on_count or COMPILATIONS.count != compiled:
                # One-offs, not compared: the first step on a count (the kernels only several threads run
                # are loaded from the disk cache, the threads woken, their caches filled) and any step
                # in which numba compiled a kernel (no disk cache yet).
                continue
            # Builds come at irregular steps, and the first step's setup once: neither is compared.
            spent += part.total_s - part.build_s - part.setup_s
            measured += part.steps
            if is_try and chooser.give_up_try(threads, measured, spent):
                break
        if measured:
            chooser.record(threads, measured, spent, is_try=is_try)
        done += ran
    return timings


class _CompilationCount(numba_event.Listener):
    """Counts numba's compilations in this process (``numba:compile`` events: a kernel's first call
    where the disk cache has none for it). The first step of a new thread count can compile kernels
    that only several threads run (the fused pass's crossing entries), which takes seconds: a choice
    made on that step would keep one thread for the longest wait."""

    def __init__(self):
        self.count = 0

    def on_start(self, event) -> None:
        pass

    def on_end(self, event) -> None:
        self.count += 1


COMPILATIONS = _CompilationCount()
numba_event.register("numba:compile", COMPILATIONS)

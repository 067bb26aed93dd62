"""How many threads the CPU backend steps with: all of them, unless one is faster right now.

On a machine where another process keeps a core busy (Blender's UI, a render, a browser), numba's
parallel loops lose badly: every parallel region ends at a barrier, and the thread that shares its core
with the other process arrives a scheduler quantum late; with the OpenMP layer's spinning barriers a
100k-grain step measured 62 ms on 2 threads against 5.6 ms on 1 (issue 27). No setting known before
the run says which count wins, so ``ThreadCountChooser`` measures: it times the steps at the count in
use, now and then tries the other count for a few steps, and keeps whichever costs less per step. The
results do not depend on the thread count (engine.backends.cpu_fused), so switching changes no bit.

Policy: start by timing one step on all threads and one on a single thread; then run on the cheaper
count, trying the other after ``PROBE_AFTER_S`` seconds of stepping, doubling that wait (up to
``PROBE_AFTER_MAX_S``) each time the try confirms the choice and resetting it when the choice changes
or the cost per step of the count in use moves by more than ``CHANGE`` (the load changed). A try stops
as soon as it has cost more than the steps it replaced would have, so trying a bad count costs about
one step.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: Seconds of stepping before the other count is tried again, first and at most.
PROBE_AFTER_S = 0.5
PROBE_AFTER_MAX_S = 8.0
#: Steps a try lasts at most, and steps timed together while running (one `_step` call each).
PROBE_STEPS = 3
CHUNK_STEPS = 4
#: The other count must be this much cheaper to be chosen (noise must not flip the choice).
HYSTERESIS = 0.05
#: A change of the cost per step of the count in use by this factor (either way) triggers a try.
CHANGE = 1.5


@dataclass
class ThreadCountChooser:
    """Chooses between ``most`` threads and one (see the module docstring).

    Attributes:
        most: The thread count allowed (numba's count when the bake started), ≥ 1.
        current: The count stepping now.
        cost: Latest measured seconds per step, by thread count.
        switches: How often the choice changed (for benchmarks and tests).
        steps_by_count: Steps run on each count.
    """

    most: int
    current: int = 0
    cost: dict[int, float] = field(default_factory=dict)
    switches: int = 0
    steps_by_count: dict[int, int] = field(default_factory=dict)
    _wait_s: float = PROBE_AFTER_S
    _since_probe_s: float = 0.0
    _reference: float = 0.0

    def __post_init__(self):
        self.current = self.most

    @property
    def other(self) -> int:
        return 1 if self.current != 1 else self.most

    def plan(self, remaining: int) -> tuple[int, int, bool]:
        """(threads, steps, is_try) for the next stretch of at most ``remaining`` steps."""
        if self.most <= 1:
            return 1, remaining, False
        if self.current not in self.cost:
            return self.current, 1, False
        if self.other not in self.cost or self._since_probe_s >= self._wait_s:
            return self.other, min(PROBE_STEPS, remaining), True
        return self.current, min(CHUNK_STEPS, remaining), False

    def record(self, threads: int, steps: int, seconds: float, *, is_try: bool) -> None:
        """Account ``steps`` steps run on ``threads`` threads in ``seconds`` (stepping time only)."""
        self.steps_by_count[threads] = self.steps_by_count.get(threads, 0) + steps
        per_step = seconds / max(steps, 1)
        if not is_try:
            self.cost[threads] = per_step
            self._since_probe_s += seconds
            if self._reference and not (self._reference / CHANGE <= per_step <= self._reference * CHANGE):
                self._wait_s = self._since_probe_s = PROBE_AFTER_S  # the load changed: try at once
            return
        self.cost[threads] = per_step
        self._since_probe_s = 0.0
        if per_step < self.cost[self.current] * (1.0 - HYSTERESIS):
            self.current = threads
            self.switches += 1
            self._wait_s = PROBE_AFTER_S
        else:
            self._wait_s = min(2.0 * self._wait_s, PROBE_AFTER_MAX_S)
        self._reference = self.cost[self.current]

    def give_up_try(self, threads: int, steps_done: int, seconds: float) -> bool:
        """Whether a try on ``threads`` that has run ``steps_done`` steps in ``seconds`` already cost more
        than the whole try would on the count in use (then stop it: it lost)."""
        return seconds > self.cost.get(self.current, float("inf")) * PROBE_STEPS and steps_done >= 1

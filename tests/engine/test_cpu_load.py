"""The other processes' load on our cores, from /proc/stat's ticks less our own CPU time (no clock read)."""

from __future__ import annotations

import os

import pytest

from engine.backends.cpu_load import MIN_WINDOW_S, OtherLoad


class _Clocks:
    """Wall seconds, our CPU seconds and the busy ticks of our cores, moved by the test."""

    def __init__(self):
        self.wall, self.ours, self.ticks = 0.0, 0.0, 0

    def load(self) -> OtherLoad:
        return OtherLoad(clock=lambda: self.wall, cpu_clock=lambda: self.ours, busy_ticks=lambda cpus: self.ticks)

    def run(self, seconds: float, ours: float, others: float, tick_s: float) -> None:
        """``seconds`` of wall time with ``ours`` and ``others`` cores busy."""
        self.wall += seconds
        self.ours += ours * seconds
        self.ticks += round((ours + others) * seconds / tick_s)


@pytest.mark.parametrize("others", [0.0, 0.7, 1.0])
def test_the_load_is_what_the_cores_did_beyond_our_own_time(others):
    clocks = _Clocks()
    load = clocks.load()
    tick_s = load._tick_s
    clocks.run(0.5, 1.3, others, tick_s)
    assert load.sample() == pytest.approx(others, abs=2 * tick_s / 0.5)


def test_a_short_window_repeats_the_last_reading_and_unreadable_ticks_say_none():
    clocks = _Clocks()
    load = clocks.load()
    assert load.sample() is None  # nothing read yet over a window long enough
    clocks.run(1.0, 1.0, 1.0, load._tick_s)
    assert load.sample() == pytest.approx(1.0, abs=0.05)
    clocks.run(MIN_WINDOW_S / 2, 2.0, 0.0, load._tick_s)
    assert load.sample() == pytest.approx(1.0, abs=0.05)
    assert OtherLoad(busy_ticks=lambda cpus: None).sample() is None


@pytest.mark.skipif(not os.path.exists("/proc/stat"), reason="Linux only")
def test_proc_stat_is_read_for_our_cores():
    from engine.backends.cpu_load import _busy_ticks

    assert _busy_ticks(OtherLoad().cpus) >= 0

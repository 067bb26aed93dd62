"""How much of the cores this process may run on other processes used: the load the thread choice sees.

engine.backends.cpu_threads times the thread counts it steps on; this module tells it, between its
tries, whether a try could change anything: while all our threads have cores to themselves (another
process uses next to nothing of them) one thread cannot be faster, and while another process keeps a
core busy all threads cannot beat one unless that core frees up. So the chooser tries a count only when
the load it sees has changed, instead of every few seconds (each try costs about one step).

Linux only: the busy time of the cores in this process's affinity mask (``/proc/stat``, in clock ticks
of 1/``SC_CLK_TCK`` s, 10 ms usually) less this process's own CPU time. Elsewhere, or when the file
cannot be read, ``OtherLoad.sample`` answers None and the chooser keeps trying on its timer alone. The
ticks are coarse, so a sample spans at least ``MIN_WINDOW_S``; a container whose CPU quota is smaller
than its cores is not seen (the chooser's timer and tries still catch it), and this process's other
threads (Blender's own, when it bakes inside Blender) count as ours: their load shows only in the
chooser's timing.
"""

from __future__ import annotations

import os
import time

#: Shortest span a sample of the load covers [s]: 50 ticks of 10 ms on 2 cores, so a core kept busy
#: reads as about 1 against a tick or two of noise.
MIN_WINDOW_S = 0.25
#: Fields of a ``cpuN`` line of /proc/stat that are not busy time: idle and iowait.
IDLE_FIELDS = (3, 4)


def _busy_ticks(cpus: set[int]) -> int | None:
    """Busy clock ticks summed over ``cpus`` since boot, or None when /proc/stat cannot tell."""
    try:
        with open("/proc/stat", "rb") as stat:
            text = stat.read().decode("ascii", "replace")
    except OSError:
        return None
    busy, seen = 0, 0
    for line in text.splitlines():
        if not line.startswith("cpu") or line.startswith("cpu "):
            continue
        name, *fields = line.split()
        if not name[3:].isdigit() or int(name[3:]) not in cpus:
            continue
        # guest time is counted in user already: the first 8 fields (user .. steal) hold it all
        busy += sum(int(value) for index, value in enumerate(fields[:8]) if index not in IDLE_FIELDS)
        seen += 1
    return busy if seen == len(cpus) else None


class OtherLoad:
    """Samples the cores other processes used, of those this process may run on.

    Attributes:
        cpus: The cores this process may run on (its affinity mask when known).
    """

    def __init__(self, *, clock=time.perf_counter, cpu_clock=time.process_time, busy_ticks=_busy_ticks):
        """``clock`` (wall seconds), ``cpu_clock`` (this process's CPU seconds, all threads) and
        ``busy_ticks`` (a function of the core set) are parameters for tests."""
        try:
            self.cpus = set(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            self.cpus = set(range(os.cpu_count() or 1))
        try:
            self._tick_s = 1.0 / os.sysconf("SC_CLK_TCK")
        except (AttributeError, ValueError, OSError):
            self._tick_s = 0.01
        self._clock, self._cpu_clock, self._busy_ticks = clock, cpu_clock, busy_ticks
        self._last = self._read()
        self._value: float | None = None

    def _read(self) -> tuple[float, float, int | None]:
        return self._clock(), self._cpu_clock(), self._busy_ticks(self.cpus)

    def sample(self) -> float | None:
        """Cores' worth of CPU time other processes used on ``cpus`` since the last sample [cores],
        the previous answer while less than ``MIN_WINDOW_S`` has passed, None when unknown."""
        now = self._read()
        wall = now[0] - self._last[0]
        if now[2] is None or self._last[2] is None:
            self._last = now
            return None
        if wall < MIN_WINDOW_S:
            return self._value
        ours = now[1] - self._last[1]
        busy = (now[2] - self._last[2]) * self._tick_s
        self._last = now
        self._value = max(busy - ours, 0.0) / wall
        return self._value


#: This process's reader, made when the engine's CPU backend is imported and shared by its backends:
#: the thread choice's first reading then spans what the process did before its first step (imports,
#: compiling, the scene's set-up; a benchmark's warm-up), long enough to see a busy core at once.
PROCESS_LOAD = OtherLoad()

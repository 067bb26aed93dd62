"""Worker threads yield the CPU to Blender's window: they run at a lower scheduling priority.

A bake, a Pack or the measurement after Pack keeps every core busy for minutes (numba's parallel loops
on all of them). On a machine with few cores Blender's main thread then waits its turn behind them for
each redraw, and the window stalls for most of a second at a time (0.5–1.35 s measured on two cores
during a 30,000-grain bake; docs/benchmarks.md). On Linux a thread has its own nice value, and the
threads it starts inherit it (numba's OpenMP team is started by the thread that runs the parallel
loop), so a worker that raises its nice value before its first parallel loop leaves the cores to the
window whenever the window wants them, and takes all of them the rest of the time: the bake keeps its
speed while the window is idle. Elsewhere (Windows, macOS: no per-thread nice value) nothing changes.
No bpy in this module.
"""

from __future__ import annotations

import os
import sys
import threading

#: Nice value added to a worker thread: 10 gives it about a tenth of the CPU share of a thread at
#: Blender's own priority when both want the same core (Linux's CFS weights 1024 against 110).
WORKER_NICENESS = 10


def lower_worker_priority(increment: int = WORKER_NICENESS) -> bool:
    """Raise the calling thread's nice value by ``increment`` (Linux only; call it first thing in the
    worker). True when it was raised; False where it cannot be (another system, a refusal)."""
    if not sys.platform.startswith("linux") or not hasattr(os, "setpriority"):
        return False
    try:
        thread = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, thread, min(os.getpriority(os.PRIO_PROCESS, thread) + increment, 19))
    except OSError:
        return False
    return True

"""Workers yield the CPU to Blender's window (addon/worker_priority.py): a worker thread's nice value is
raised, the main thread's is not, and the threads numba starts for the worker's parallel loops inherit it."""

from __future__ import annotations

import os
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from .conftest import mochi_module

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice_of_tasks() -> dict[int, int]:
    """Nice value of each thread of this process (field 19 of /proc/self/task/<tid>/stat)."""
    out = {}
    for task in Path("/proc/self/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[int(task.name)] = int(fields[16])  # after the ')' : state is field 3, nice field 19
    return out


def test_a_worker_and_the_threads_of_its_parallel_loops_run_below_the_window(mochi):
    from numba import njit, prange

    @njit(parallel=True, nogil=True)
    def busy(values):
        total = 0.0
        for i in prange(values.shape[0]):
            total += np.sqrt(values[i])
        return total

    priority = mochi_module("addon.worker_priority")
    main_before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    tasks_before = set(_nice_of_tasks())
    seen = {}

    def worker():
        seen["raised"] = priority.lower_worker_priority()
        seen["tid"] = threading.get_native_id()
        busy(np.arange(200_000, dtype=np.float64))  # numba starts this thread's team of threads here
        seen["tasks"] = _nice_of_tasks()

    thread = threading.Thread(target=worker)
    thread.start()
    thread.join(300)
    assert seen["raised"]
    worker_nice = seen["tasks"][seen["tid"]]
    assert worker_nice == min(main_before + priority.WORKER_NICENESS, 19)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == main_before  # the window's thread
    started = {tid: nice for tid, nice in seen["tasks"].items() if tid not in tasks_before and tid != seen["tid"]}
    if os.cpu_count() > 1 and started:  # the OpenMP team the worker's loop started runs at its priority
        assert set(started.values()) == {worker_nice}

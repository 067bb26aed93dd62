"""The worker processes of a wedge: several bakes at once, and none outliving the ``mochi wedge`` that started them.

Each variant of a wedge bakes in a spawned worker process (fresh interpreters: numba's threads and a
CUDA device per process). A worker holds its variant folder's lock while it bakes, so a worker left
behind by a dead parent would bake on unseen and lock the folder against the next wedge. Three things
make the workers die with their parent, whatever ends it:

* SIGTERM to the parent (``kill``, a farm cancelling the task): the parent kills its workers, then
  dies of the SIGTERM as it would have (exit status 143);
* Ctrl-C or an error in the parent: the parent kills its workers before the error goes on (exit 130 for
  Ctrl-C; workers ignore SIGINT, so a Ctrl-C to the whole process group is acted on once, by the parent);
* the parent killed outright (SIGKILL, a crash, a closed terminal): on Linux the kernel sends each worker
  SIGKILL (``PR_SET_PDEATHSIG``, stopped workers included); everywhere (macOS, Windows) a thread in each
  worker waits on the parent's process sentinel (a pipe on POSIX, the process handle on Windows) and
  ends the worker when it fires.

A killed worker's lock goes with it (``engine.cache_lock``: the kernel drops it), and its bake keeps
every complete frame (``--resume`` continues it). No process of ``multiprocessing``'s outlives them
either: the slot queue needs no manager process, and the resource tracker exits when the last process
holding its pipe (the parent, then the workers) is gone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import threading
from concurrent.futures import ProcessPoolExecutor, as_completed
from typing import Any, Callable, Iterable

#: prctl option: the signal the kernel sends this process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: How long the parent waits for a worker it asked to stop (SIGTERM) before it kills it [s].
WORKER_STOP_S = 5.0


def _die_with_parent() -> None:
    """In a worker: end this process when the process that started it ends (module docstring)."""
    parent = multiprocessing.parent_process()
    if parent is None:  # not a multiprocessing child
        return
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if not parent.is_alive():  # it died before the request was made
        os._exit(1)

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(1)  # ends every thread of the worker, a bake in the middle of a step included

    threading.Thread(target=watch, name="mochi-parent-watch", daemon=True).start()


def _start_worker(slots, threads: int, gpu: bool) -> None:
    """Pool initializer: die with the parent; ignore Ctrl-C (the parent stops its workers); take a slot;
    pin this process to one GPU or to ``threads`` CPU threads.

    Runs before the worker imports numba or CuPy (engine.bake is imported inside the task), so the
    environment variables take effect.
    """
    _die_with_parent()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    slot = slots.get()
    if gpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = str(slot)
    else:
        os.environ["NUMBA_NUM_THREADS"] = str(threads)


def _stop_workers(pool: ProcessPoolExecutor) -> None:
    """Stop every worker of ``pool`` now: SIGTERM, then SIGKILL for one still there after ``WORKER_STOP_S``
    (a stopped one cannot act on SIGTERM)."""
    # ProcessPoolExecutor gains kill_workers() in Python 3.14; until then its process table is the only
    # handle on the workers.
    workers = list((getattr(pool, "_processes", None) or {}).values())
    for process in workers:
        if process.is_alive():
            process.terminate()
    for process in workers:
        process.join(WORKER_STOP_S)
        if process.is_alive():
            process.kill()
            process.join()


class _TerminatedBySignal(BaseException):
    """SIGTERM reached the parent while its workers ran: they are stopped, then the parent dies of it."""


def run_in_workers(task: Callable, items: Iterable, *, parallel: int, threads: int, gpu: bool,
                   on_result: Callable[[Any, Any], None] | None = None) -> dict[int, Any]:
    """Run ``task(item)`` for every item in up to ``parallel`` worker processes that die with this one.

    Args:
        task: A picklable function of one item.
        items: The items (picklable).
        parallel: Worker processes.
        threads: numba threads per worker (CPU backends).
        gpu: One GPU per worker (``CUDA_VISIBLE_DEVICES`` = its slot).
        on_result: Called in this process as each result arrives: ``on_result(item, result)``.

    Returns:
        ``{position of the item: result}``.
    """
    context = multiprocessing.get_context("spawn")  # fresh interpreters: numba threads, CUDA devices
    slots = context.Queue()  # one slot per worker process: its GPU, or just its turn on the CPU
    for slot in range(parallel):
        slots.put(slot)
    results: dict[int, Any] = {}
    items = list(items)
    previous, pool = None, None
    try:
        previous = _on_sigterm_raise()
        pool = ProcessPoolExecutor(max_workers=parallel, mp_context=context, initializer=_start_worker,
                                   initargs=(slots, threads, gpu))
        futures = {pool.submit(task, item): position for position, item in enumerate(items)}
        for future in as_completed(futures):
            position = futures[future]
            results[position] = future.result()
            if on_result:
                on_result(items[position], results[position])
    except BaseException as exc:
        terminated = isinstance(exc, _TerminatedBySignal)
        if terminated:  # a second SIGTERM must not cut the stopping short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if pool is not None:
            _stop_workers(pool)
            pool.shutdown(wait=True, cancel_futures=True)
        slots.cancel_join_thread()
        if terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            os.kill(os.getpid(), signal.SIGTERM)  # die of it, as without workers (exit status 143)
        raise
    finally:
        _restore(previous)
    pool.shutdown(wait=True)
    return results


def _on_sigterm_raise():
    """While workers run, SIGTERM stops them first (``_TerminatedBySignal``); returns the handler it replaced,
    or None where none can be set (not the main thread)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "SIGTERM"):
        return None

    def terminated(signum, frame):
        raise _TerminatedBySignal()

    return signal.signal(signal.SIGTERM, terminated)


def _restore(previous) -> None:
    if previous is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, previous)

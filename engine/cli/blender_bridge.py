"""Running the bpy-side commands (addon/headless.py) from the engine's CLI.

The engine never imports bpy: commands that need Blender (baking a .blend, rendering a preview) run
``addon/headless.py`` in a child Python, which loads the extension and the bpy module. The child dies
with its parent: on Linux the kernel sends it SIGTERM when the parent dies for any reason (SIGKILL
included, ``PR_SET_PDEATHSIG``), and everywhere a SIGTERM to the parent is passed on to it, so a child
bake never goes on alone holding its cache folder's lock.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib.util
import os
import signal
import subprocess
import sys
from pathlib import Path

from ..errors import MochiError

HEADLESS_SCRIPT = Path(__file__).resolve().parents[2] / "addon" / "headless.py"
#: prctl option: the signal the kernel sends this process when its parent dies (linux/prctl.h).
_PR_SET_PDEATHSIG = 1
#: How long a child gets to stop after the parent passed on SIGTERM or Ctrl-C [s].
CHILD_STOP_S = 30.0


def _die_with_parent(parent_pid: int):
    """A ``preexec_fn``: ask the kernel for SIGTERM when the parent dies; exit if it already has."""
    def arm() -> None:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
        if os.getppid() != parent_pid:  # the parent died before the request was made
            os._exit(1)
    return arm


def run_child(command: list[str]) -> int:
    """Run ``command`` and return its exit status; the child dies with this process.

    SIGTERM to this process is passed on to the child, which is waited for (at most ``CHILD_STOP_S``,
    then killed); the status is then 128 + SIGTERM. Ctrl-C reaches the child by itself (one process
    group); the child is waited for as well.
    """
    linux = sys.platform.startswith("linux")
    child = subprocess.Popen(command, preexec_fn=_die_with_parent(os.getpid()) if linux else None)
    stopped = []

    def pass_on(signum, frame) -> None:
        stopped.append(signum)
        child.send_signal(signum)

    previous = signal.signal(signal.SIGTERM, pass_on) if _main_thread() else None
    try:
        while True:
            try:
                status = child.wait()
                break
            except KeyboardInterrupt:
                stopped.append(signal.SIGINT)
                try:
                    child.wait(CHILD_STOP_S)
                except subprocess.TimeoutExpired:
                    child.kill()
                raise
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
        if child.poll() is None:
            child.kill()
            child.wait()
    return 128 + signal.SIGTERM if signal.SIGTERM in stopped else status


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def run_headless(arguments: list[str], *, script: str = HEADLESS_SCRIPT.name) -> int:
    """Run ``addon/SCRIPT ARGUMENTS`` (default addon/headless.py) with this Python; returns its exit status.

    Raises:
        MochiError: bpy is not installed or the add-on is missing from this installation.
    """
    if importlib.util.find_spec("bpy") is None:
        raise MochiError("This needs Blender's Python module (bpy), which is not installed; install it "
                         "with: pip install 'mochi-dem[blender]'.")
    path = HEADLESS_SCRIPT.with_name(script)
    if not path.is_file():
        raise MochiError(f"The Blender add-on is missing from this installation ({path}).")
    return run_child([sys.executable, str(path), *arguments])

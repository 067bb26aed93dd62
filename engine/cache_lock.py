"""One writer per cache folder: a lock held for a whole bake, resume or free.

The lock is an ``flock`` on the folder itself (on Windows, where folders cannot be locked,
``filelock``'s ``LockFileEx`` on ``DIR/.mochi.lock``). Locking the folder creates no file, so a refused
command leaves nothing behind and no lock file can ever make a foreign folder look like a Mochi cache.
The kernel drops it when its holder exits for any reason, SIGKILL and power loss included, so a killed
bake never leaves a stale lock behind: the next bake simply takes it. Who holds it (process id, host,
program, start time) is written in ``DIR/.mochi.lock.owner`` while it is held, so that a refused second
bake can name the other process; that file is only informative and goes with the lock.

Readers (Blender's playback, ``mochi export``) do not lock: frames and the manifest are written
atomically, so a reader always sees complete files.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from .atomic import write_atomic
from .errors import MochiError

LOCK_NAME = ".mochi.lock"
OWNER_NAME = ".mochi.lock.owner"


def _program() -> str:
    """A short description of this process for the owner file ('mochi bake', 'Blender 5.2'...)."""
    name = Path(sys.argv[0]).name if sys.argv and sys.argv[0] else "python"
    if "bpy" in sys.modules:
        version = getattr(getattr(sys.modules["bpy"], "app", None), "version_string", "")
        return f"Blender {version}".strip()
    return " ".join([name, *sys.argv[1:3]])[:120]


#: How long a refused process waits for the holder's owner file [s]: the holder writes it just after it
#: takes the lock, so a bake refused in that instant would otherwise name 'another process'.
OWNER_WAIT_S = 0.5


def describe_owner(folder: str | os.PathLike, wait_s: float = OWNER_WAIT_S) -> str:
    """Who holds the lock of ``folder``, as a phrase: 'process 123 on host (mochi bake …, since 18:02)';
    'another process' when its owner file is still missing or unreadable after ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            owner = json.loads((Path(folder) / OWNER_NAME).read_text(encoding="utf-8"))
            since = time.strftime("%H:%M:%S", time.localtime(float(owner["since"])))
            return f"process {int(owner['pid'])} on {owner['host']} ({owner['program']}, since {since})"
        except (OSError, ValueError, KeyError, TypeError):
            if time.monotonic() >= deadline:
                return "another process"
            time.sleep(0.02)


class CacheLock:
    """The exclusive lock of one cache folder, as a context manager.

    Args:
        folder: Cache folder; it must exist.
        action: What the holder does, for the refusal sentence ('bake', 'free'...).

    Raises:
        MochiError: on ``acquire``, when another process (or another bake in this one) holds it.
    """

    def __init__(self, folder: str | os.PathLike, *, action: str = "bake"):
        self.folder = Path(folder)
        self.action = action
        self._fd: int | None = None
        self._lock = None
        if fcntl is None:
            # thread_local=False: Blender takes the lock in its bake thread and may release it from the
            # same object in another; is_singleton=False so that two bakes in one process exclude each other.
            self._lock = FileLock(str(self.folder / LOCK_NAME), timeout=0, thread_local=False, is_singleton=False)

    @property
    def held(self) -> bool:
        return self._fd is not None if self._lock is None else self._lock.is_locked

    def _refused(self) -> MochiError:
        return MochiError(f"The cache folder '{self.folder}' is in use by {describe_owner(self.folder)}; wait for "
                          f"that bake to finish or cancel it before you {self.action} here.")

    def acquire(self) -> CacheLock:
        try:
            if self._lock is not None:
                self._lock.acquire(timeout=0)
            else:
                # One open file description per CacheLock: two locks of one process exclude each other.
                fd = os.open(self.folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0))
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BaseException:
                    os.close(fd)
                    raise
                self._fd = fd
        except (Timeout, BlockingIOError):
            raise self._refused() from None
        except OSError as exc:
            raise MochiError(f"Cannot lock the cache folder '{self.folder}': {exc.strerror or exc}.") from None
        owner = {"pid": os.getpid(), "host": socket.gethostname(), "program": _program(), "since": time.time(),
                 "action": self.action}
        try:
            write_atomic(self.folder / OWNER_NAME, lambda handle: handle.write(json.dumps(owner).encode()))
        except MochiError:
            pass  # the lock holds without its description (a full disk is reported by the frame writes)
        return self

    def release(self) -> None:
        if not self.held:
            return
        (self.folder / OWNER_NAME).unlink(missing_ok=True)
        if self._lock is not None:
            self._lock.release()
        else:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor of the open file description drops the flock

    def __enter__(self) -> CacheLock:
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()

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

import contextlib
import json
import os
import socket
import stat
import sys
import time
from pathlib import Path

from filelock import FileLock, Timeout

try:
    import fcntl
except ImportError:  # Windows
    fcntl = None

from .atomic import TOKEN_LENGTH, write_atomic
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


#: The keys of an owner record (``format`` is 'mochi-lock-owner'; records of earlier engines lack it).
OWNER_KEYS = {"pid", "host", "program", "since", "action"}
OWNER_FORMAT = "mochi-lock-owner"
#: An owner record is a few hundred bytes; a larger file is not one.
OWNER_MAX_BYTES = 4096


def is_owner_record(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a regular file holding a lock-owner record and nothing else (JSON with exactly
    the keys a ``CacheLock`` writes), so that replacing or removing it loses nothing of anyone's.

    Proof by contents: whoever made such a file made a Mochi owner record, whatever it was for."""
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > OWNER_MAX_BYTES:
            return False
        record = json.loads(Path(path).read_bytes())
    except (OSError, ValueError):
        return False
    keys = set(record) if isinstance(record, dict) else set()
    return keys == OWNER_KEYS or (keys == OWNER_KEYS | {"format"} and record["format"] == OWNER_FORMAT)


def is_owner_temporary(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a temporary of an owner record that a holder killed while writing it left:
    '..mochi.lock.owner.tmp-TOKEN' (``engine.atomic``'s name) holding the start of a record, or nothing.

    Proof by contents again: such a file holds nothing of anyone's, so the next holder removes it."""
    path = Path(path)
    prefix = f".{OWNER_NAME}.tmp-"
    token = path.name[len(prefix):]
    if not path.name.startswith(prefix) or len(token) != TOKEN_LENGTH or token.strip("0123456789abcdef"):
        return False
    try:
        info = os.lstat(path)
        if not stat.S_ISREG(info.st_mode) or info.st_size > OWNER_MAX_BYTES:
            return False
        data = path.read_bytes()
    except OSError:
        return False
    start = f'{{"format": "{OWNER_FORMAT}", "pid": '.encode()
    return start.startswith(data) or data.startswith(start)


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
        self._record: bytes | None = None  # the owner record this lock wrote, while held
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
        owner = {"format": OWNER_FORMAT, "pid": os.getpid(), "host": socket.gethostname(), "program": _program(),
                 "since": time.time(), "action": self.action}
        record = json.dumps(owner).encode()
        path = self.folder / OWNER_NAME
        with contextlib.suppress(OSError):
            for entry in os.scandir(self.folder):
                if is_owner_temporary(entry.path):
                    os.unlink(entry.path)  # what a holder killed while writing its record left
        # A record a killed holder left is replaced; any other file of that name is not (engine.cache_files
        # then names it as not Mochi's), and the lock holds without its description.
        if not os.path.lexists(path) or is_owner_record(path):
            try:
                write_atomic(path, lambda handle: handle.write(record))
                self._record = record
            except MochiError:
                pass  # the lock holds without its description (a full disk is reported by the frame writes)
        return self

    def release(self) -> None:
        if not self.held:
            return
        record, self._record = self._record, None
        path = self.folder / OWNER_NAME
        with contextlib.suppress(OSError):
            if record is not None and path.read_bytes() == record:
                path.unlink()  # the record this lock wrote, and only that
        if self._lock is not None:
            self._lock.release()
        else:
            fd, self._fd = self._fd, None
            os.close(fd)  # closing the last descriptor of the open file description drops the flock

    def __enter__(self) -> CacheLock:
        return self.acquire()

    def __exit__(self, *exc_info) -> None:
        self.release()

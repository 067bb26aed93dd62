"""Atomic file writes: a reader, or a bake killed mid-write, only ever sees complete files."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Callable, IO

from .errors import MochiError


def write_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, flush it to disk, rename it.

    The temporary name starts with a dot and contains '.tmp-' so a resumed bake can sweep up what a
    killed one left.

    Raises:
        MochiError: the folder cannot be written (one sentence naming ``path``).
    """
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(tmp, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None


def check_output_file(path: str | os.PathLike, *, suffix: str) -> Path:
    """Check, before any work, that ``path`` can be written as a ``suffix`` file; returns it absolute.

    Its folder may not exist yet (it is created) but must be creatable, and writable.

    Raises:
        MochiError: a wrong extension, a folder in the way, or a folder that cannot be written.
    """
    path = Path(path).absolute()
    if path.suffix.lower() != suffix:
        raise MochiError(f"The output '{path}' must be a {suffix} file (it would be written as {suffix} "
                         "whatever its name says).")
    if path.is_dir():
        raise MochiError(f"The output '{path}' is a folder; give a file name ending in {suffix}.")
    folder = path.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir() or not os.access(folder, os.W_OK | os.X_OK):
        raise MochiError(f"Cannot write '{path}': the folder '{folder}' is not writable.")
    return path

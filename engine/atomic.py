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

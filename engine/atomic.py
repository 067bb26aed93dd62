"""Atomic file writes: a reader, or a bake killed mid-write, only ever sees complete files."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path
from typing import Callable, IO

from .errors import MochiError


#: Characters of the random part of a temporary name (128 bits in hex): no other program's file, and no
#: other Mochi process's, has the same name.
TOKEN_LENGTH = 32


def new_token() -> str:
    """A fresh random token for temporary names (``TOKEN_LENGTH`` hex digits)."""
    return secrets.token_hex(TOKEN_LENGTH // 2)


def temporary_path(path: str | os.PathLike, token: str) -> Path:
    """The temporary beside ``path`` that a write under ``token`` uses: '.NAME.tmp-TOKEN'."""
    path = Path(path)
    return path.with_name(f".{path.name}.tmp-{token}")


def write_atomic(path: str | os.PathLike, write: Callable[[IO[bytes]], None], *, token: str | None = None,
                 replace: bool = True) -> None:
    """Call ``write(handle)`` on a temporary file beside ``path``, flush it to disk, rename it.

    The temporary ('.NAME.tmp-TOKEN') is created by this call (``O_EXCL``: never an existing file) and
    is the only temporary it ever removes (when the write fails). Without ``token`` a fresh random one is
    drawn; a bake passes the token its manifest announced, so a temporary left by a killed bake is one
    its manifest names (``engine.cache_files``).

    Args:
        path: Destination.
        write: Writes the contents to the open binary handle.
        token: The temporary's token (default: a fresh one).
        replace: False refuses a destination that exists at the moment of the rename (a bake never
            replaces a file it did not prove its own).

    Raises:
        MochiError: the folder cannot be written, the temporary's name is taken, or (``replace`` False)
            the destination exists (one sentence naming the file).
    """
    path = Path(path)
    tmp = temporary_path(path, token or new_token())
    try:
        descriptor = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    except FileExistsError:
        raise MochiError(f"Cannot write '{path}': its temporary name '{tmp.name}' is taken by a file Mochi did not "
                         "create now, so nothing was replaced.") from None
    except OSError as exc:
        raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None
    try:
        with open(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        if not replace and os.path.lexists(path):
            raise MochiError(f"'{path}' appeared while Mochi was writing it; it is not Mochi's, so it is not "
                             "replaced.")
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()  # created above by this call: the one temporary it may remove
        if isinstance(exc, OSError):
            raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None
        raise


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

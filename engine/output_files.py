"""Files Mochi writes outside a bake folder: it replaces only those it can prove it wrote.

Every command that writes beside the user's own files (``mochi wedge``'s wedge.json, contact sheet
and Flamenco job, ``mochi export``'s USD stage and frame layers and its Alembic file, ``mochi preset
export``'s preset and meshes, ``mochi contacts --out``, ``mochi pack --out``, ``mochi render-preview``)
goes through ``plan_outputs`` before any work, then writes each file through the plan.

The proof is a record in each folder Mochi writes into, ``.mochi-outputs.jsonl``: a header line, then
one line per file Mochi renamed into place, ``{"name", "sha256", "check"}`` — the file's name in that
folder (looked up by exact name, so a line naming a path matches nothing), the SHA-256 of the bytes
Mochi wrote, and the SHA-256 of those two (``check``), so a torn, truncated or hand-edited line proves
nothing. A line is appended (one write,
``O_APPEND``) *before* the rename that puts the file in place, so a process killed at any moment leaves
every file it renamed proven, and two processes writing into one folder keep each other's lines. A file
is Mochi's when its current bytes hash to a digest some line gives for its name: a re-run of the same
command replaces its own earlier outputs; a user's file of the same name, a file edited since, a
symbolic link, anything else needs ``--overwrite`` (refused before any work, one sentence naming it).
Anyone can write a record (the check is not a signature): a forged line can only claim a file whose
bytes the forger already knows.

What is refused even with ``--overwrite``: a folder or a special file (FIFO, socket, device) where the
file would go, an output inside a bake folder (the bake's ownership rule would then refuse that folder:
``engine.cache_files``), and an output that is one of the command's inputs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import stat
from pathlib import Path
from typing import IO, Callable, Iterable

from .errors import MochiError

#: The record of the files Mochi wrote in a folder (one per folder written into).
RECORD_NAME = ".mochi-outputs.jsonl"
_HEADER = b'{"mochi_output_record": 1}\n'
#: A record larger than this is not read (a record grows by ~150 bytes per file written).
RECORD_MAX_BYTES = 64 * 2**20
#: What the refusals tell a command-line user to add; the Blender operators name their own option.
OVERWRITE_HINT = "add --overwrite"
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
#: Digests of files already hashed in this process, by (device, inode, size, mtime, ctime): a follower
#: re-checks every frame layer on every poll. ctime changes with any write or metadata change and no
#: user tool can set it back, so an entry never vouches for bytes that changed.
_KNOWN_DIGESTS: dict[tuple[int, ...], str] = {}
_KNOWN_DIGESTS_MAX = 200_000


def _line_check(name: str, sha256: str) -> str:
    """The ``check`` of a record line: SHA-256 of the name and digest it holds."""
    text = f"mochi output\0{name}\0{sha256}".encode("utf-8", "surrogatepass")
    return hashlib.sha256(text).hexdigest()


def _stat_key(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _remember(info: os.stat_result, sha256: str) -> None:
    if len(_KNOWN_DIGESTS) >= _KNOWN_DIGESTS_MAX:
        _KNOWN_DIGESTS.clear()
    _KNOWN_DIGESTS[_stat_key(info)] = sha256


def _regular_digest(path: Path) -> str | None:
    """SHA-256 of the regular file ``path`` (hex), or None for a link, folder, FIFO or missing file.

    Opened without following a link and without blocking, checked as a regular file on the open handle.
    """
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except OSError:
        return None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as handle:
        known = _KNOWN_DIGESTS.get(_stat_key(info))
        if known is not None:
            return known
        digest = hashlib.sha256()
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
        _remember(info, digest.hexdigest())
        return digest.hexdigest()


class _NotARecord(Exception):
    """The file at a record's name is not a Mochi output record."""


def read_record(folder: Path) -> dict[str, set[str]]:
    """The digests the record of ``folder`` proves, by file name ({} when there is no record).

    Lines that fail their check or are not JSON are skipped (a line torn by a kill is the
    last one, and the file it was for was never renamed into place).

    Raises:
        _NotARecord: a record name taken by a link, a folder, a file that does not start with the
            header, or one larger than ``RECORD_MAX_BYTES``.
    """
    path = folder / RECORD_NAME
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise _NotARecord(exc.strerror or str(exc)) from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size > RECORD_MAX_BYTES:
        os.close(fd)
        raise _NotARecord("not a regular file" if not stat.S_ISREG(info.st_mode) else "too large")
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(RECORD_MAX_BYTES + 1)
    if not data.startswith(_HEADER):
        if _HEADER.startswith(data):  # being created by another process this instant
            return {}
        raise _NotARecord("no record header")
    proven: dict[str, set[str]] = {}
    for line in data[len(_HEADER):].splitlines():
        try:
            entry = json.loads(line)
            name, sha256, check = entry["name"], entry["sha256"], entry["check"]
        except (ValueError, TypeError, KeyError):
            continue
        # Looked up by exact file name only: a line naming '../x' or 'a/b' matches no file Mochi writes.
        if isinstance(name, str) and isinstance(sha256, str) and check == _line_check(name, sha256):
            proven.setdefault(name, set()).add(sha256)
    return proven


def _bake_folder_of(folder: Path) -> Path | None:
    """The bake folder that ``folder`` is or lies in (its ``.resume`` or ``colliders``), else None.

    A bake folder holds a ``manifest.json`` of format ``mochi-cache``.
    """
    for candidate in (folder, folder.parent) if folder.name in (".resume", "colliders") else (folder,):
        manifest = candidate / "manifest.json"
        with contextlib.suppress(OSError):
            if manifest.is_file():
                with open(manifest, "rb") as handle:
                    if b'"mochi-cache"' in handle.read(4096):
                        return candidate
    return None


def _normal(path: str | os.PathLike) -> Path:
    """``path`` with its folder resolved (links and '..' as the kernel follows them), its name kept."""
    path = Path(path).absolute()
    return path.parent.resolve() / path.name


def _record_refusal(record: Path, hint: str) -> str:
    return (f"'{record}' is not a record of Mochi's outputs (damaged, edited or someone else's), so Mochi "
            f"cannot prove which files beside it are its own; remove it, choose another folder, or {hint}.")


def _check_place(path: Path, inputs: list[Path]) -> None:
    """Refuse what ``--overwrite`` never allows: a bad name, a bake folder, an input, an unwritable folder."""
    if path.name in ("", ".", "..", RECORD_NAME):
        raise MochiError(f"'{path}' cannot be an output file name; choose another.")
    bake = _bake_folder_of(path.parent)
    if bake is not None:
        raise MochiError(f"'{path}' is inside the bake folder '{bake}', which holds only its bake (any other "
                         "file there stops --overwrite, --resume and free); write it outside that folder.")
    for source in inputs:
        with contextlib.suppress(OSError):
            if os.path.lexists(path) and os.path.samefile(path, source):
                raise MochiError(f"'{path}' is the input '{source}' itself; write the output to another file.")
    existing = path.parent
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise MochiError(f"Cannot write '{path}': '{existing}' is a file, not a folder.")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise MochiError(f"Cannot write '{path}': the folder '{existing}' is not writable.")


class OutputPlan:
    """The files one command writes outside a bake folder, checked by ``plan_outputs`` before any work.

    ``write`` and ``replace_with`` put each file in place after checking it again (a file that appeared
    during the work is not replaced either), its record line appended first.
    """

    def __init__(self, paths: list[Path], *, overwrite: bool, hint: str):
        self.paths = set(paths)
        self.overwrite = overwrite
        self.hint = hint
        #: Each folder's record as read (None: the name is taken by something that is not a record).
        self._records: dict[Path, dict[str, set[str]] | None] = {}
        self._records_replaced: set[Path] = set()

    def _record(self, folder: Path, *, reread: bool = False) -> dict[str, set[str]] | None:
        if reread or folder not in self._records:
            try:
                self._records[folder] = read_record(folder)
            except _NotARecord:
                self._records[folder] = None
        return self._records[folder]

    def proves(self, path: str | os.PathLike) -> bool:
        """Whether the bytes now at ``path`` are bytes Mochi recorded writing under its name."""
        path = _normal(path)
        digest = None
        for reread in (False, True):  # another process may have written it since the record was read
            record = self._record(path.parent, reread=reread)
            if not record or path.name not in record:
                continue
            digest = digest or _regular_digest(path)
            if digest is not None and digest in record[path.name]:
                return True
        return False

    def check(self, path: Path) -> None:
        """Refuse, in one sentence, replacing what is at ``path`` now (see the module's rule)."""
        folder = path.parent
        if not self.overwrite and folder not in self._records_replaced and (
                self._record(folder) is None and self._record(folder, reread=True) is None):
            raise MochiError(_record_refusal(folder / RECORD_NAME, self.hint))
        try:
            info = os.lstat(path)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise MochiError(f"Cannot check '{path}': {exc.strerror or exc}.") from None
        if stat.S_ISDIR(info.st_mode):
            raise MochiError(f"'{path}' is a folder where Mochi would write a file; choose another name "
                             "(--overwrite never replaces a folder).")
        if stat.S_ISLNK(info.st_mode):
            if not self.overwrite:
                raise MochiError(f"'{path}' is a symbolic link, which Mochi neither replaces nor writes through; "
                                 f"choose another name, or {self.hint} to replace the link itself.")
            return
        if not stat.S_ISREG(info.st_mode):
            raise MochiError(f"'{path}' is not a regular file (a FIFO, socket or device), so Mochi does not "
                             "write there; choose another name.")
        if self.overwrite:
            return
        if not self.proves(path):
            raise MochiError(f"'{path}' exists and Mochi cannot prove it wrote it (the record '{RECORD_NAME}' "
                             "beside it holds no such bytes under that name), so it is not replaced; choose "
                             f"another name, move it away, or {self.hint}.")
        if not info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):  # its mode, whoever runs Mochi
            raise MochiError(f"'{path}' is read-only, so Mochi does not replace it although it wrote it; make "
                             f"it writable, choose another name, or {self.hint}.")

    def _target(self, path: str | os.PathLike) -> Path:
        path = _normal(path)
        if path not in self.paths:
            raise ValueError(f"'{path}' is not an output of this plan")  # a bug, not a user error
        self.check(path)
        return path

    def temporary(self, path: str | os.PathLike) -> Path:
        """A new empty file beside ``path`` with its extension (some writers choose the format by it), for
        a writer that needs a file name; hand it to ``replace_with``. Never an existing name."""
        path = _normal(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            while True:  # O_EXCL: a name another program (a backup tool, a sync client) holds is never reused
                tmp = path.with_name(f".{path.stem}.tmp-{secrets.token_hex(6)}{path.suffix}")
                with contextlib.suppress(FileExistsError):
                    # Mode 0o666 less the umask, as any new file: outputs are shared (mkstemp's are private).
                    os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666))
                    return tmp
        except OSError as exc:
            raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None

    def write(self, path: str | os.PathLike, write: Callable[[IO[bytes]], None]) -> Path:
        """Write ``path`` through ``write(handle)``, atomically; returns its absolute path."""
        def to_file(tmp: Path) -> None:
            try:
                with open(tmp, "wb") as handle:
                    write(handle)
                    handle.flush()
                    os.fsync(handle.fileno())
            except OSError as exc:
                raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None
        return self.write_file(path, to_file)

    def write_file(self, path: str | os.PathLike, write_to: Callable[[Path], None]) -> Path:
        """Write ``path`` by ``write_to(temporary_path)`` (a writer that takes a file name: USD, Blender,
        a PLY writer), then put it in place; the temporary file is removed if ``write_to`` fails."""
        target = self._target(path)
        tmp = self.temporary(target)
        try:
            write_to(tmp)
        except BaseException:
            with contextlib.suppress(OSError):
                tmp.unlink()
            raise
        return self.replace_with(tmp, target)

    def replace_with(self, tmp: str | os.PathLike, path: str | os.PathLike) -> Path:
        """Put the finished file ``tmp`` (from ``temporary``) in place as ``path``, its record line first.

        Raises:
            MochiError: ``path`` became a file Mochi cannot prove it wrote, or the folder cannot be written.
        """
        tmp = Path(tmp)
        try:
            target = self._target(path)
            sha256 = _regular_digest(tmp)
            if sha256 is None:
                raise MochiError(f"Cannot write '{target}': its temporary file '{tmp.name}' is gone.")
            self._append(target.parent, target.name, sha256)
            os.replace(tmp, target)
        except OSError as exc:
            raise MochiError(f"Cannot write '{path}': {exc.strerror or exc}.") from None
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
        with contextlib.suppress(OSError):
            _remember(os.lstat(target), sha256)
        return target

    def remove_if_ours(self, path: str | os.PathLike) -> bool:
        """Delete ``path`` if Mochi can prove it wrote it, else leave it; returns whether it did."""
        path = _normal(path)
        if not self.proves(path):
            return False
        try:
            path.unlink()
        except OSError as exc:
            raise MochiError(f"Cannot remove '{path}': {exc.strerror or exc}.") from None
        return True

    def _append(self, folder: Path, name: str, sha256: str) -> None:
        """Append the line proving ``name``'s bytes to the record of ``folder``: made when missing,
        replaced (once) when the name is taken by something else and ``overwrite`` allows that."""
        record = folder / RECORD_NAME
        if sha256 in (self._record(folder) or {}).get(name, ()):
            return  # the same bytes again (a re-run): the record proves them already
        if self._record(folder) is None and folder not in self._records_replaced:
            fresh = self.temporary(record)
            fresh.write_bytes(_HEADER)
            os.replace(fresh, record)  # only reached with overwrite: check() refused it otherwise
            self._records_replaced.add(folder)
        line = json.dumps({"name": name, "sha256": sha256, "check": _line_check(name, sha256)},
                          ensure_ascii=True).encode("ascii") + b"\n"
        try:
            fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o666)
            line = _HEADER + line
        except FileExistsError:
            fd = os.open(record, os.O_WRONLY | os.O_APPEND | _NOFOLLOW | _NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise MochiError(_record_refusal(record, self.hint))
            os.write(fd, line)  # one write: lines of two processes never interleave
            os.fsync(fd)
        finally:
            os.close(fd)
        known = self._records.get(folder)
        if known is not None:
            known.setdefault(name, set()).add(sha256)


def plan_outputs(paths: Iterable[str | os.PathLike], *, overwrite: bool = False,
                 inputs: Iterable[str | os.PathLike] = (), hint: str = OVERWRITE_HINT) -> OutputPlan:
    """Check, before any work, that a command may write each of ``paths``; returns the plan that writes them.

    Args:
        paths: Every file the command will write (their folders need not exist yet).
        overwrite: The user's ``--overwrite``: replace existing files and links Mochi cannot prove it
            wrote (never a folder, a special file, an input, or anything in a bake folder).
        inputs: Files the command reads; an output that is one of them is refused.
        hint: How the refusals say to allow a replacement (CLI: 'add --overwrite').

    Raises:
        MochiError: one sentence naming the first path that may not be written.
    """
    normal = [_normal(p) for p in paths]
    sources = [Path(p) for p in inputs]
    plan = OutputPlan(normal, overwrite=overwrite, hint=hint)
    for path in normal:
        _check_place(path, sources)
        plan.check(path)
    return plan

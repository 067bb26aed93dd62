"""Fingerprints of what a bake was made from, so a resume can prove it continues the same bake.

``canonical`` turns settings (dataclasses, dicts, tuples, numpy arrays, paths) into plain JSON values;
arrays and the files a setting names are replaced by their SHA-256, so a fingerprint stays small
however many vertices a mesh has. ``digest`` hashes that; ``changes`` lists, in words, which settings
differ between two canonical values (the manifest keeps the canonical inputs for exactly that).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np


def file_digest(path: str | Path) -> str:
    """SHA-256 of a file's bytes (hex)."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


#: SHA-256 of the files read during one command, by (device, inode, size, mtime, ctime), or None outside
#: ``files_read_once``: proving a bake's files before and again under its lock reads each once.
_KNOWN_FILES: contextvars.ContextVar[dict | None] = contextvars.ContextVar("known_file_digests", default=None)


@contextlib.contextmanager
def files_read_once():
    """Within the block (one bake, resume or free), ``file_digest_known`` reads each version of a file
    once. Only within one command: timestamps are coarse, so a file rewritten to the same size a moment
    later could look unchanged to a memory kept longer."""
    token = _KNOWN_FILES.set({})
    try:
        yield
    finally:
        _KNOWN_FILES.reset(token)


def file_digest_known(path: str | Path, info: os.stat_result) -> str:
    """``file_digest(path)`` for the file ``info`` (its ``os.lstat``) describes; inside
    ``files_read_once`` each version of a file is read once.

    Raises:
        OSError: the file cannot be read.
    """
    known = _KNOWN_FILES.get()
    if known is None:
        return file_digest(path)
    key = (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    if key not in known:
        known[key] = file_digest(path)
    return known[key]


def canonical(value: Any) -> Any:
    """``value`` as JSON-ready data with a single spelling for equal settings.

    Floats keep their exact value (JSON's repr round-trips); numpy arrays become
    ``{"array_sha256", "shape", "dtype"}``; dataclasses become dicts of their fields.
    """
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: canonical(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, dict):
        return {str(k): canonical(v) for k, v in sorted(value.items(), key=lambda item: str(item[0]))}
    if isinstance(value, (list, tuple)):
        return [canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        data = np.ascontiguousarray(value)
        return {"array_sha256": hashlib.sha256(data.tobytes()).hexdigest(), "shape": list(data.shape),
                "dtype": data.dtype.str}
    if isinstance(value, np.generic):
        return canonical(value.item())
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return repr(value)


def digest(value: Any) -> str:
    """SHA-256 (hex) of the canonical JSON of ``value``."""
    text = json.dumps(canonical(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def files_by_contents(value: Any) -> Any:
    """The canonical ``value`` with every absolute path of an existing file replaced by
    'file NAME sha256 HEX': an edited mesh changes the fingerprint, a moved project does not."""
    value = canonical(value)
    if isinstance(value, dict):
        return {k: files_by_contents(v) for k, v in value.items()}
    if isinstance(value, list):
        return [files_by_contents(v) for v in value]
    if isinstance(value, str) and value and Path(value).is_absolute() and Path(value).is_file():
        return f"file {Path(value).name} sha256 {file_digest(value)}"
    return value


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict) and "array_sha256" not in value:
        for key, item in value.items():
            _flatten(item, f"{prefix}.{key}" if prefix else str(key), out)
    elif isinstance(value, list):
        out[f"{prefix}#count"] = len(value)
        for index, item in enumerate(value):
            _flatten(item, f"{prefix}[{index}]", out)
    else:
        out[prefix] = value


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "array " + value.get("array_sha256", "")[:8]
    if isinstance(value, str) and value.startswith("file ") and " sha256 " in value:
        name, sha = value[5:].split(" sha256 ", 1)
        return f"{name} (contents {sha[:8]})"
    return json.dumps(value, ensure_ascii=False)


def changes(old: Any, new: Any, *, limit: int = 3) -> str:
    """Which settings differ between two canonical values, as a phrase: 'materials[0].friction 0.4 → 0.9'.

    Returns:
        '' when they are equal; at most ``limit`` settings are named, then 'and N more'.
    """
    before, after = {}, {}
    _flatten(canonical(old), "", before)
    _flatten(canonical(new), "", after)
    keys = [k for k in sorted(set(before) | set(after)) if before.get(k, "∅") != after.get(k, "∅")]
    described = [f"{k or 'inputs'} {_show(before[k]) if k in before else '(absent)'} → "
                 f"{_show(after[k]) if k in after else '(absent)'}" for k in keys[:limit]]
    if len(keys) > limit:
        described.append(f"and {len(keys) - limit} more")
    return ", ".join(described)

"""Shrink the wheels the device run carries so that all of them travel in one call.

A lent GPU machine has no network, so what it lacks travels as cp312 wheels in ``.whl/``, and the whole
working tree that travels (the repository, ``.whl/`` included) must stay under 64 MiB. slangpy 0.43.1
(the rt backend) is a 92 MB wheel and taichi 1.7.4 (the peer) a 56 MB one: together they do not fit.
Most of both is what the run never loads:

- slangpy: ``libslang-rhi.a`` (a 75 MB static library for building against slang-rhi), its own tests,
  benchmarks and C++ headers, and the debug information in its shared libraries (``libsgl.so`` is 79 MB
  with it, 9 MB without);
- taichi: ``_lib/c_api`` (the 55 MB C API library, which the Python module does not load) and its
  examples.

This script rewrites such a wheel without those parts (``strip --strip-unneeded`` on every shared
library, which keeps the dynamic symbols the loader needs), writes a RECORD with the new hashes and
sizes, and compresses with LZMA (which pip reads through Python's ``zipfile``). Nothing is rebuilt or
changed in what is kept.

Usage (repository root; ``benchmarks/device/README.md`` gives the whole set-up):
    python benchmarks/device/pack_wheels.py .whl
It rewrites ``slangpy-*.whl`` and ``taichi-*.whl`` in that folder in place and prints the sizes.
"""

from __future__ import annotations

import argparse
import base64
import csv
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from fnmatch import fnmatch
from pathlib import Path

#: Members each wheel's run never loads (fnmatch patterns on the path inside the wheel).
DROPPED = {
    "slangpy": ("slangpy/libslang-rhi.a", "slangpy/tests/*", "slangpy/benchmarks/*", "slangpy/include/*"),
    "taichi": ("taichi/_lib/c_api/*", "taichi/examples/*"),
}
#: ELF files start with these bytes; they are stripped of debug information.
ELF_MAGIC = b"\x7fELF"


def _record_hash(data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"sha256={digest}"


def _strip(data: bytes) -> bytes:
    """``data`` (an ELF shared library) without debug information and local symbols."""
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "library.so"
        path.write_bytes(data)
        subprocess.run(["strip", "--strip-unneeded", str(path)], check=True)
        return path.read_bytes()


def shrink(wheel: Path, dropped: tuple[str, ...]) -> tuple[int, int]:
    """Rewrite ``wheel`` in place without ``dropped`` members, stripped and LZMA-compressed.

    Returns:
        (bytes before, bytes after).
    """
    before = wheel.stat().st_size
    kept: list[tuple[zipfile.ZipInfo, bytes]] = []
    record_name = None
    with zipfile.ZipFile(wheel) as source:
        for info in source.infolist():
            if info.filename.endswith(".dist-info/RECORD"):
                record_name = info.filename
                continue
            if info.is_dir() or any(fnmatch(info.filename, pattern) for pattern in dropped):
                continue
            data = source.read(info)
            if data.startswith(ELF_MAGIC):
                data = _strip(data)
            kept.append((info, data))
    if record_name is None:
        raise SystemExit(f"{wheel.name} has no RECORD: not a wheel.")
    record = io.StringIO()
    writer = csv.writer(record, lineterminator="\n")
    for info, data in kept:
        writer.writerow([info.filename, _record_hash(data), len(data)])
    writer.writerow([record_name, "", ""])
    partial = wheel.with_suffix(".partial")
    with zipfile.ZipFile(partial, "w", compression=zipfile.ZIP_LZMA) as target:
        for info, data in kept:
            member = zipfile.ZipInfo(info.filename, date_time=info.date_time)
            member.external_attr = info.external_attr  # keeps the executable bits
            target.writestr(member, data, compress_type=zipfile.ZIP_LZMA)
        target.writestr(record_name, record.getvalue(), compress_type=zipfile.ZIP_LZMA)
    partial.replace(wheel)
    return before, wheel.stat().st_size


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path, help="the folder of carried wheels (.whl)")
    args = parser.parse_args(argv)
    found = False
    for name, dropped in DROPPED.items():
        for wheel in sorted(args.folder.glob(f"{name}-*.whl")):
            found = True
            before, after = shrink(wheel, dropped)
            print(f"{wheel.name}: {before / 2**20:.1f} MiB -> {after / 2**20:.1f} MiB")
    total = sum(path.stat().st_size for path in args.folder.glob("*.whl"))
    print(f"all wheels in {args.folder}: {total / 2**20:.1f} MiB")
    if not found:
        print(f"No slangpy or taichi wheel in {args.folder}.", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Finding CuPy and pyoptix, and compiling the kernels in kernels/ (NVRTC): what every GPU backend
starts with.

Nothing here imports CuPy or optix at module import time, so ``import engine.backends`` works without a
GPU. CUDA kernels are compiled through ``cupy.RawModule`` (CuPy caches the binaries on disk, keyed by
the source, which is why local includes are expanded here first); OptiX programs are compiled with
NVRTC to PTX and cached under ``kernel_cache_dir()``.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from ..errors import MochiError
from ..resources import data_dir

#: Folder of the CUDA/OptiX sources.
KERNEL_DIR = data_dir("kernels")
#: Threads per block of every CUDA kernel launched here.
BLOCK = 256

class GpuUnavailable(MochiError):
    """A GPU backend cannot start here; the message says why in one sentence."""


def import_cupy():
    """CuPy with a usable CUDA device, or ``GpuUnavailable`` naming what is missing."""
    try:
        import cupy
    except ImportError as exc:
        raise GpuUnavailable(f"The GPU backends need CuPy (pip install cupy-cuda13x or cupy-cuda12x); "
                             f"importing it failed: {exc}.") from None
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as exc:  # CUDARuntimeError without a driver, or a driver too old for CuPy
        raise GpuUnavailable(f"CuPy found no usable NVIDIA driver or GPU ({exc}).") from None
    if count == 0:
        raise GpuUnavailable("CuPy found no NVIDIA GPU.")
    return cupy


def import_optix():
    """The pyoptix module, or ``GpuUnavailable`` (e.g. a driver older than the OptiX ABI it needs)."""
    try:
        import optix
    except ImportError as exc:
        hint = (" The driver is older than the OptiX version of the installed pyoptix-contrib wheel "
                "(OptiX 9.1 needs an R590 or newer driver)." if "ABI" in str(exc) else "")
        raise GpuUnavailable(f"The OptiX backend needs pyoptix-contrib; importing optix failed: {exc}.{hint}") from None
    return optix


def device_summary(cupy) -> tuple[str, tuple[int, int]]:
    """(name, (major, minor) compute capability) of the current device."""
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    return name, (int(props["major"]), int(props["minor"]))


def kernel_cache_dir() -> Path:
    """Folder of compiled OptiX programs ($MOCHI_KERNEL_CACHE or ~/.cache/mochi/kernels)."""
    path = Path(os.environ.get("MOCHI_KERNEL_CACHE", Path.home() / ".cache" / "mochi" / "kernels"))
    path.mkdir(parents=True, exist_ok=True)
    return path


_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.M)
_PRAGMA_ONCE = re.compile(r"^\s*#\s*pragma\s+once\s*$", re.M)


def kernel_source(name: str, *, _seen: set | None = None) -> str:
    """Text of kernels/``name`` with its local ``#include "..."`` files expanded (each once)."""
    seen = set() if _seen is None else _seen
    if name in seen:
        return ""
    seen.add(name)
    # Each file is inlined once, so its include guard would only make compilers warn in the main file.
    text = _PRAGMA_ONCE.sub("", (KERNEL_DIR / name).read_text(encoding="utf-8"))
    return _INCLUDE.sub(lambda m: kernel_source(m.group(1), _seen=seen), text)


def cuda_include_dirs() -> list[str]:
    """CUDA toolkit include folders that exist here (NVRTC needs them for the OptiX headers)."""
    found = []
    for root in (os.environ.get("CUDA_PATH"), os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").is_file():
            found.append(str(Path(root) / "include"))
    return found[:1]


def compile_ptx(source: str, options: list[str], *, name: str = "program.cu") -> bytes:
    """PTX of ``source`` compiled with NVRTC (through CuPy's binding), cached on disk by content."""
    from cupy_backends.cuda.libs import nvrtc

    key = hashlib.sha256("\0".join([source, *options, str(nvrtc.getVersion())]).encode()).hexdigest()[:32]
    cached = kernel_cache_dir() / f"{key}.ptx"
    if cached.is_file():
        return cached.read_bytes()
    prog = nvrtc.createProgram(source, name, (), ())
    try:
        try:
            nvrtc.compileProgram(prog, list(options))
        except nvrtc.NVRTCError as exc:
            raise RuntimeError(f"NVRTC failed on {name}: {exc}\n{nvrtc.getProgramLog(prog)}") from None
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    ptx = ptx.encode() if isinstance(ptx, str) else bytes(ptx)
    ptx = ptx.rstrip(b"\0")
    tmp = cached.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_bytes(ptx)
    os.replace(tmp, cached)
    return ptx


_MODULES: dict[str, object] = {}


def raw_module(name: str, *, defines: tuple[str, ...] = (), options: tuple[str, ...] = ()):
    """``cupy.RawModule`` of kernels/``name`` with ``-D`` ``defines`` and further NVRTC ``options``
    (compiled once per process, cached on disk by CuPy)."""
    key = "\0".join((name, *defines, *options))
    if key not in _MODULES:
        import cupy

        options = ("-std=c++17", *(f"-D{d}" for d in defines), *options)
        _MODULES[key] = cupy.RawModule(code=kernel_source(name), options=options)
    return _MODULES[key]


def blocks(count: int) -> tuple[int]:
    """Grid of ``BLOCK``-thread blocks covering ``count`` items (at least one block)."""
    return (max((count + BLOCK - 1) // BLOCK, 1),)

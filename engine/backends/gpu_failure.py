"""One sentence for any way a GPU backend can fail to start: driver, NVRTC, OptiX, missing files, memory.

CuPy, NVRTC and pyoptix raise their own exception types (``CUDARuntimeError``, ``CUDADriverError``,
``OutOfMemoryError``, ``NVRTCError``, ``CompileException``, a plain ``RuntimeError`` carrying an
``OPTIX_ERROR_…`` code) and the kernels are read from files that a broken install may lack. They are
recognised here by name, without importing CuPy or optix, so the selection code (engine.backends)
can turn each into the sentence a person reads — in the CLI and in Blender's status line — and fall
back or stop with it.
"""

from __future__ import annotations

from .gpu_toolchain import GpuUnavailable
from ..errors import MochiError


#: Longest detail, in characters, quoted from the library's own message.
DETAIL_CHARS = 200


def _detail(exc: BaseException) -> str:
    """The first line of ``exc``'s message, shortened, without a trailing full stop."""
    lines = str(exc).strip().splitlines()
    text = lines[0].strip() if lines else type(exc).__name__
    if len(text) > DETAIL_CHARS:
        text = text[:DETAIL_CHARS - 1] + "…"
    return text.rstrip(".")


def _kind(exc: BaseException) -> str:
    """What went wrong, from the exception's type names (its class and bases) and its message."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    text = str(exc)
    if "OutOfMemoryError" in names or isinstance(exc, MemoryError) or "out of memory" in text.lower():
        return "memory"
    if isinstance(exc, (FileNotFoundError, NotADirectoryError)):
        return "files"
    if names & {"NVRTCError", "CompileException"} or "NVRTC" in text:
        return "nvrtc"
    if "OPTIX_ERROR" in text or "optix" in text.lower() or type(exc).__module__.startswith("optix"):
        return "optix"
    if names & {"CUDARuntimeError", "CUDADriverError"} or "CUDA_ERROR" in text or "cudaError" in text:
        return "driver"
    return "other"


def gpu_failure_sentence(backend: str, exc: BaseException, *, doing: str = "could not start") -> str:
    """One sentence saying why ``backend`` ('cuda' or 'optix') could not start (or, with ``doing``,
    what else it failed at), from the exception.

    A ``MochiError`` (a GPU or package missing, physics the kernels do not implement) already is
    such a sentence and is returned as it is.
    """
    if isinstance(exc, MochiError):
        return str(exc)
    detail = _detail(exc)
    kind = _kind(exc)
    if kind == "memory":
        reason = f"the GPU ran out of memory ({detail}); fewer particles or a GPU with more memory would fit"
    elif kind == "files":
        missing = getattr(exc, "filename", None) or detail
        reason = f"a kernel source file is missing ({missing}); reinstall Mochi"
    elif kind == "nvrtc":
        reason = f"its CUDA kernels failed to compile with NVRTC ({detail})"
    elif kind == "optix":
        reason = f"OptiX reported an error ({detail}); the driver may be older than this OptiX needs"
    elif kind == "driver":
        reason = f"the CUDA driver reported an error ({detail})"
    else:
        reason = f"{type(exc).__name__}: {detail}"
    return f"The {backend} backend {doing}: {reason}."


def start_gpu_backend(backend: str, factory, model):
    """``factory(model)``, with any failure turned into ``GpuUnavailable`` carrying one sentence.

    ``KeyboardInterrupt`` and ``SystemExit`` pass through unchanged.
    """
    try:
        return factory(model)
    except MochiError:  # GpuUnavailable, or physics the kernels refuse: already one sentence
        raise
    except Exception as exc:
        raise GpuUnavailable(gpu_failure_sentence(backend, exc)) from exc

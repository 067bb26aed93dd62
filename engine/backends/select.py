"""Which backends can start on this machine, and which one 'auto' means.

'auto' picks optix on NVIDIA GPUs with RT cores (the paper's method runs on them in hardware) once its
self-check has passed there (engine.backends.optix_self_check), cuda on
other NVIDIA GPUs (on data-centre GPUs without RT cores such as the A100 and H100, OptiX traverses in
software and the hashed grid is the fast path), and cpu otherwise. A missing driver, CuPy or
pyoptix, or an OptiX too new for the driver, is reported in one sentence and 'auto' falls back.
The CLI, the add-on and the tests share these answers.
"""

from __future__ import annotations

import functools

#: Compute capabilities (major, minor) of NVIDIA GPUs with RT cores: Turing TU10x (7.5), Ampere
#: GA10x (8.6), Ada (8.9), Blackwell GB20x (12.0, 12.1). V100 (7.0), A100 (8.0), H100/H200 (9.0) and
#: B200 (10.0) have none.
RT_CORE_CAPABILITIES = {(7, 5), (8, 6), (8, 9), (12, 0), (12, 1)}


@functools.lru_cache(maxsize=1)
def probe_backends() -> tuple[tuple[str, bool, str], ...]:
    """(backend, available, one-line device description or reason) for cpu, cuda and optix."""
    from .gpu_failure import gpu_failure_sentence
    from .gpu_toolchain import GpuUnavailable, device_summary, import_cupy, import_optix

    results = [("cpu", True, "always available")]
    try:
        cupy = import_cupy()
        name, capability = device_summary(cupy)
    except Exception as exc:  # GpuUnavailable, or a driver error while reading the device
        reason = gpu_failure_sentence("cuda", exc)
        return tuple(results + [("cuda", False, reason), ("optix", False, reason)])
    rt = "with RT cores" if capability in RT_CORE_CAPABILITIES else "without RT cores"
    description = f"{name} (sm_{capability[0]}{capability[1]}, {rt}), CuPy {cupy.__version__}"
    results.append(("cuda", True, description))
    try:
        optix = import_optix()
        cupy.zeros(1)  # OptiX adopts the current CUDA context: make sure there is one
        context = optix.deviceContextCreate(0, optix.DeviceContextOptions())
        del context
        version = ".".join(str(v) for v in optix.version())
        results.append(("optix", True, f"{description}, OptiX {version}"))
    except GpuUnavailable as exc:
        results.append(("optix", False, str(exc)))
    except Exception as exc:  # optix.deviceContextCreate raises a plain RuntimeError on driver errors
        results.append(("optix", False, f"OptiX could not create a device context ({exc})."))
    return tuple(results)


def available_backends() -> dict[str, str]:
    """Backends that can start here, mapped to a one-line device description."""
    return {name: text for name, ok, text in probe_backends() if ok}


def unavailable_backends() -> dict[str, str]:
    """Backends that cannot start here, mapped to the reason in one sentence."""
    return {name: text for name, ok, text in probe_backends() if not ok}


def choose_backend_name(*, log=print, optix_check=None) -> str:
    """Name of the backend 'auto' picks, announced through ``log`` with the reason.

    On a GPU with RT cores, optix is picked only once its self-check has passed on this GPU and
    driver (engine.backends.optix_self_check: the same contacts as the CUDA grid); otherwise cuda,
    with the reason.

    Args:
        log: Where the one-line announcement goes.
        optix_check: Callable returning (passed, reason); default
            ``optix_self_check.optix_passes_self_check``.
    """
    available = available_backends()
    missing = unavailable_backends()
    if "cuda" in available:
        has_rt = "with RT cores" in available["cuda"]
        if has_rt and "optix" in available:
            if optix_check is None:
                from .optix_self_check import optix_passes_self_check

                optix_check = optix_passes_self_check
            try:
                passed, reason = optix_check(log=log)
            except Exception as exc:  # the check itself failed to start: do not trust optix
                from .gpu_failure import gpu_failure_sentence

                passed, reason = False, gpu_failure_sentence("optix", exc).rstrip(".")
            if passed:
                log(f"auto backend: optix on {available['optix']} ({reason})")
                return "optix"
            log(f"auto backend: cuda on {available['cuda']}; optix not used: {reason}")
            return "cuda"
        if has_rt:
            log(f"auto backend: cuda on {available['cuda']}; optix unavailable: {missing.get('optix', '')}")
        else:
            log(f"auto backend: cuda on {available['cuda']} (the hashed grid is the fast path without RT cores)")
        return "cuda"
    log(f"auto backend: cpu; no GPU backend: {missing.get('cuda', '')}")
    return "cpu"

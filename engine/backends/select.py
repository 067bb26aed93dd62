"""Which backends can start on this machine, and which one 'auto' means.

'auto' decides in this order, and says why in one line:

1. An NVIDIA GPU with RT cores, CuPy and pyoptix: optix once its self-check has passed there
   (engine.backends.optix_self_check: the CUDA grid's contacts), else cuda. The CuPy backends are the
   native path on NVIDIA: they compile for the GPU's own architecture and share the law's source with
   the CPU's checks; rt reaches the same RT cores through one more layer (slangpy's Vulkan or CUDA).
2. Any other NVIDIA GPU with CuPy: cuda. On data-centre GPUs without RT cores (A100, H100) ray tracing
   is traversed in software, and the hashed grid is the fast path, for rt as for optix.
3. No CuPy backend, and a ray-tracing device that is hardware (``RtDevice.is_software`` false): rt, once
   its self-check has passed on that device and driver (engine.backends.rt_self_check: the CPU
   backend's contacts). This is the AMD, Intel and Apple case (and an NVIDIA GPU without CuPy). A
   software device such as Mesa's lavapipe is exact but runs on the CPU, slower than the CPU backend:
   never picked.
4. cpu otherwise, saying why rt was not used when a ray-tracing device was found.

A missing driver, CuPy, pyoptix or slangpy, or an OptiX too new for the driver, is reported in one
sentence and 'auto' falls back. The CLI, the add-on and the tests share these answers; the probes are
cached for the process (opening a slangpy device takes about a second), and ``clear_probe_cache``
forgets them after packages were installed.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

#: Compute capabilities (major, minor) of NVIDIA GPUs with RT cores: Turing TU10x (7.5), Ampere
#: GA10x (8.6), Ada (8.9), Blackwell GB20x (12.0, 12.1). V100 (7.0), A100 (8.0), H100/H200 (9.0) and
#: B200 (10.0) have none.
RT_CORE_CAPABILITIES = {(7, 5), (8, 6), (8, 9), (12, 0), (12, 1)}


@dataclass(frozen=True)
class RtProbe:
    """What the rt backend would run on here.

    Attributes:
        available: A device with ray tracing opened.
        text: Its description (adapter, kind, entry shapes; "software, runs on the CPU" for lavapipe and
            the like), or the one sentence saying why none opened.
        hardware: The device is a GPU, not a CPU implementation: 'auto' may pick it.
        kind: The device kind that opened ('vulkan', 'd3d12', 'metal', 'cuda'), or "".
    """

    available: bool
    text: str
    hardware: bool = False
    kind: str = ""


@functools.lru_cache(maxsize=None)
def probe_rt(kind: str | None = None) -> RtProbe:
    """Open the rt backend's device of ``kind`` (None: the first kind with ray tracing) once per process,
    describe it and close it."""
    from ..errors import MochiError
    from .rt_device import open_rt_device

    try:
        rt = open_rt_device(kind)
    except MochiError as exc:  # slangpy missing, unknown kind, no ray tracing: one sentence already
        return RtProbe(False, str(exc))
    except Exception as exc:  # a driver error while opening
        from .gpu_failure import gpu_failure_sentence

        return RtProbe(False, gpu_failure_sentence("rt", exc))
    software = rt.is_software
    text = rt.describe() + (", software: runs on the CPU" if software else "")
    rt.device.close()
    return RtProbe(True, text, not software, rt.kind)


def clear_probe_cache() -> None:
    """Forget every probe, so the next call looks again (after installing CuPy, pyoptix or slangpy)."""
    import importlib

    importlib.invalidate_caches()  # packages installed since this process started become importable
    _probe_nvidia.cache_clear()
    probe_rt.cache_clear()


def probe_backends() -> tuple[tuple[str, bool, str], ...]:
    """(backend, available, one-line device description or reason) for cpu, cuda, optix and rt."""
    probe = probe_rt()
    return (("cpu", True, "always available"), *_probe_nvidia(), ("rt", probe.available, probe.text))


@functools.lru_cache(maxsize=1)
def _probe_nvidia() -> tuple[tuple[str, bool, str], ...]:
    """The cuda and optix rows of ``probe_backends``."""
    from .gpu_failure import gpu_failure_sentence
    from .gpu_toolchain import GpuUnavailable, device_summary, import_cupy, import_optix

    results = []
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


def choose_backend_name(*, log=print, optix_check=None, rt_check=None, rt_device: str | None = None) -> str:
    """Name of the backend 'auto' picks, announced through ``log`` with the reason (module docstring).

    On a GPU with RT cores, optix is picked only once its self-check has passed on this GPU and
    driver (engine.backends.optix_self_check: the same contacts as the CUDA grid); otherwise cuda,
    with the reason. Without CuPy, rt is picked on a hardware ray-tracing device once its self-check
    has passed there (engine.backends.rt_self_check), never on a software one.

    Args:
        log: Where the one-line announcement goes.
        optix_check: Callable(log=) returning (passed, reason); default
            ``optix_self_check.optix_passes_self_check``.
        rt_check: Callable(kind, log=) returning (passed, reason); default
            ``rt_self_check.rt_passes_self_check``.
        rt_device: The ray-tracing device kind rt would run on (None: the first with ray tracing).
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
    return _rt_or_cpu(missing.get("cuda", ""), log=log, rt_check=rt_check, rt_device=rt_device)


def _rt_or_cpu(no_cuda: str, *, log, rt_check, rt_device: str | None) -> str:
    """'rt' on a hardware ray-tracing device whose self-check passes, else 'cpu'; either said in one line."""
    probe = probe_rt(rt_device)
    if not probe.available:
        log(f"auto backend: cpu; no GPU backend: {no_cuda} {probe.text}")
        return "cpu"
    if not probe.hardware:
        log(f"auto backend: cpu; no GPU backend: {no_cuda} rt not used: {probe.text} (a software device is never "
            "picked: it is slower than the CPU backend).")
        return "cpu"
    if rt_check is None:
        from .rt_self_check import rt_passes_self_check

        rt_check = rt_passes_self_check
    try:
        passed, reason = rt_check(probe.kind, log=log)
    except Exception as exc:  # the check itself failed to start: do not trust rt
        from .gpu_failure import gpu_failure_sentence

        passed, reason = False, gpu_failure_sentence("rt", exc).rstrip(".")
    if passed:
        log(f"auto backend: rt on {probe.text} ({reason})")
        return "rt"
    log(f"auto backend: cpu; rt not used on {probe.text}: {reason}.")
    return "cpu"

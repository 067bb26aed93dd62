"""Backend registry: ``make_backend('cpu' | 'cuda' | 'optix' | 'rt' | 'auto', model)``.

GPU backends are imported only when asked for, so this package imports without CuPy, optix or slangpy.
'auto' picks 'rt' only on a device with hardware ray tracing, once its self-check has passed on that
device and driver, and never on a software device such as lavapipe (engine.backends.select says in
which order it weighs rt against optix and cuda). ``rt_device`` forces the kind of device the rt backend
opens ('vulkan', 'd3d12', 'metal', 'cuda'; ``--rt-device`` on the command line).
"""

from __future__ import annotations

from ..errors import MochiError

BACKEND_NAMES = ("auto", "cpu", "cuda", "optix", "rt")
#: What 'auto' tries next when a GPU backend cannot start.
FALLBACK = {"optix": "cuda", "cuda": "cpu", "rt": "cpu"}


def check_rt_device(backend: str | None, rt_device: str | None) -> None:
    """Refuse, in one sentence, a ray-tracing device kind that is unknown or given to a backend other than
    rt or auto (``backend`` None: the caller's default, checked later).

    Raises:
        MochiError: the refusal.
    """
    if rt_device is None:
        return
    from .rt_device import RT_DEVICE_KINDS

    if rt_device not in RT_DEVICE_KINDS:
        raise MochiError(f"Unknown ray-tracing device '{rt_device}'; choose one of {', '.join(RT_DEVICE_KINDS)}.")
    if backend is not None and backend not in ("rt", "auto"):
        raise MochiError(f"A ray-tracing device (--rt-device {rt_device}) applies to the rt and auto backends only, "
                         f"not to {backend}.")


def _start(name: str, model, rt_device: str | None = None):
    """Build backend ``name``; a GPU backend's failure of any kind is a ``MochiError`` of one sentence."""
    if name == "cpu":
        from .cpu import BackendCpu

        return BackendCpu(model)
    from .gpu_failure import start_gpu_backend

    if name == "cuda":
        def factory(m):
            from .cuda_grid import BackendCudaGrid

            return BackendCudaGrid(m)
    elif name == "optix":
        def factory(m):
            from .optix_rt import BackendOptix

            return BackendOptix(m)
    else:
        def factory(m):
            from .rt_backend import BackendRt

            return BackendRt(m, device=rt_device)
    return start_gpu_backend(name, factory, model)


def make_backend(name: str, model, *, log=print, choose=None, rt_device: str | None = None):
    """Build the backend called ``name`` for ``model``.

    'auto' takes the fastest backend that passes its checks here (engine.backends.select); when it
    cannot start on this model (a driver, NVRTC or OptiX error, a missing kernel file, too little GPU
    memory, physics the kernels do not implement) 'auto' falls back — optix to cuda to cpu, rt to cpu — logs the
    reason in one sentence and keeps it in the backend's ``describe()``. An explicit GPU backend that
    cannot start raises ``MochiError`` with that sentence instead.

    Args:
        name: One of ``BACKEND_NAMES``.
        model: The static model.
        log: Where one-line messages go.
        choose: Callable(log=) returning the backend name 'auto' starts from; default
            ``select.choose_backend_name`` (given ``rt_device``).
        rt_device: Kind of device for rt ('vulkan', 'd3d12', 'metal', 'cuda'), or None for the first
            with ray tracing; only with 'rt' or 'auto' (``check_rt_device``).
    """
    if name not in BACKEND_NAMES:
        raise MochiError(f"Unknown backend '{name}'; choose one of {', '.join(BACKEND_NAMES)}.")
    check_rt_device(name, rt_device)
    if name != "auto":
        return _start(name, model, rt_device)
    if choose is None:
        import functools

        from .select import choose_backend_name

        choose = functools.partial(choose_backend_name, rt_device=rt_device)
    chosen = choose(log=log)
    notes = []
    while True:
        try:
            runner = _start(chosen, model, rt_device)
        except MochiError as exc:
            if chosen == "cpu":
                raise
            following = FALLBACK[chosen]
            notes.append(f"{chosen} not used: {exc}")
            log(f"auto backend: {exc} Using {following} instead.")
            chosen = following
            continue
        runner.selection_note = " ".join(notes)
        return runner

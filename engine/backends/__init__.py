"""Backend registry: ``make_backend('cpu' | 'cuda' | 'optix' | 'rt' | 'auto', model)``.

GPU backends are imported only when asked for, so this package imports without CuPy, optix or slangpy.
'auto' never starts 'rt' (engine.backends.select): issue 28 lets it pick rt only on a device with
hardware ray tracing once a self-check has passed there, never on a software device such as lavapipe,
and that check does not exist yet.
"""

from __future__ import annotations

from ..errors import MochiError

BACKEND_NAMES = ("auto", "cpu", "cuda", "optix", "rt")
#: What 'auto' tries next when a GPU backend cannot start.
FALLBACK = {"optix": "cuda", "cuda": "cpu"}


def _start(name: str, model):
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

            return BackendRt(m)
    return start_gpu_backend(name, factory, model)


def make_backend(name: str, model, *, log=print, choose=None):
    """Build the backend called ``name`` for ``model``.

    'auto' takes the fastest backend that passes its checks here (engine.backends.select); when it
    cannot start on this model (a driver, NVRTC or OptiX error, a missing kernel file, too little GPU
    memory, physics the kernels do not implement) 'auto' falls back — optix to cuda to cpu — logs the
    reason in one sentence and keeps it in the backend's ``describe()``. An explicit GPU backend that
    cannot start raises ``MochiError`` with that sentence instead.

    Args:
        name: One of ``BACKEND_NAMES``.
        model: The static model.
        log: Where one-line messages go.
        choose: Callable(log=) returning the backend name 'auto' starts from; default
            ``select.choose_backend_name``.
    """
    if name not in BACKEND_NAMES:
        raise MochiError(f"Unknown backend '{name}'; choose one of {', '.join(BACKEND_NAMES)}.")
    if name != "auto":
        return _start(name, model)
    if choose is None:
        from .select import choose_backend_name as choose
    chosen = choose(log=log)
    notes = []
    while True:
        try:
            runner = _start(chosen, model)
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

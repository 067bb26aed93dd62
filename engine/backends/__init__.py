"""Backend registry: ``make_backend('cpu' | 'cuda' | 'optix' | 'auto', model)``.

GPU backends are imported only when asked for, so this package imports without CuPy or optix.
"""

from __future__ import annotations

from ..errors import MochiError

BACKEND_NAMES = ("auto", "cpu", "cuda", "optix")


def make_backend(name: str, model, *, log=print):
    """Build the backend called ``name`` for ``model``.

    'auto' takes the fastest available (engine.backends.select) and falls back to the CPU when that
    backend cannot run this model; an explicit GPU backend that cannot start raises ``MochiError``
    with the reason.
    """
    if name not in BACKEND_NAMES:
        raise MochiError(f"Unknown backend '{name}'; choose one of {', '.join(BACKEND_NAMES)}.")
    if name == "auto":
        from .select import choose_backend_name

        chosen = choose_backend_name(log=log)
        if chosen != "cpu":
            try:
                return make_backend(chosen, model, log=log)
            except MochiError as exc:  # e.g. physics the GPU kernels do not implement
                log(f"auto backend: {exc} Using cpu instead.")
        name = "cpu"
    if name == "cpu":
        from .cpu import BackendCpu

        return BackendCpu(model)
    if name == "cuda":
        from .cuda_grid import BackendCudaGrid

        return BackendCudaGrid(model)
    from .optix_rt import BackendOptix

    return BackendOptix(model)

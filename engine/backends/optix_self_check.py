"""The check 'auto' runs before it trusts the OptiX backend on a GPU: the same contacts as the CUDA grid.

OptiX programs run through a driver-specific pipeline (the driver compiles the PTX, builds the BVH and
schedules the intersection programs), so a driver or GPU that the backend never ran on may produce
wrong contacts without any error. Before 'auto' picks optix, ``optix_passes_self_check`` builds both
GPU backends on a small polydisperse random state (a few thousand grains, radii 1:4, some touching,
some coincident) and compares their contact pairs, which must be equal: both are exact. The answer is
remembered in ``kernel_cache_dir()/optix_self_check.json`` per GPU, driver, CuPy, OptiX and kernel
sources, so the check runs once per such combination (about a second) and again after any of them
changes (the state, the comparison and the memory are engine.backends.self_check's, shared with the rt
backend's check).
"""

from __future__ import annotations

from .self_check import (SelfCheckMemory, compare_contacts, memory_file, remembered_check, self_check_state,
                         sources_digest)

#: Kernel sources whose change invalidates a remembered answer.
SELF_CHECK_SOURCES = ("optix_dem.cu", "grid.cu", "dem_math.cuh", "contact_law.h", "field_law.h", "bond_law.h",
                      "dem_common.cu", "dem_integrate.cuh", "clump_law.h", "clump_layout.h", "dem_params.h")
MEMORY_FILE = "optix_self_check.json"


def gpu_identity(cupy, optix) -> str:
    """GPU name, driver, CuPy, OptiX and kernel-source digest: what an answer is remembered under."""
    from .gpu_toolchain import device_summary

    name, (major, minor) = device_summary(cupy)
    optix_version = ".".join(str(v) for v in optix.version())
    return (f"{name} sm_{major}{minor} | driver {cupy.cuda.runtime.driverGetVersion()} | CuPy {cupy.__version__}"
            f" | OptiX {optix_version} | kernels {sources_digest(SELF_CHECK_SOURCES)}")


def run_self_check() -> tuple[bool, str]:
    """Build both GPU backends on ``self_check_state`` and compare their contacts (needs a GPU)."""
    from .cuda_grid import BackendCudaGrid
    from .gpu_failure import gpu_failure_sentence
    from .optix_rt import BackendOptix
    from ..model import contact_model
    from ..state import make_state

    positions, radius = self_check_state()
    model = contact_model(positions, radius)
    pairs = {}
    for name, factory in (("cuda", BackendCudaGrid), ("optix", BackendOptix)):
        try:
            runner = factory(model)
            runner.set_state(make_state(positions))
            pairs[name] = runner.contact_pairs()
        except Exception as exc:  # any failure means: do not pick optix; say why
            return False, gpu_failure_sentence(name, exc).rstrip(".")
    return compare_contacts(pairs["cuda"], pairs["optix"], reference="the CUDA grid", checked="OptiX")


def optix_passes_self_check(*, memory: SelfCheckMemory | None = None, log=print) -> tuple[bool, str]:
    """(passed, reason): OptiX's contacts equal the CUDA grid's on this GPU, remembered per identity."""
    from .gpu_toolchain import import_cupy, import_optix

    cupy, optix = import_cupy(), import_optix()
    return remembered_check(gpu_identity(cupy, optix), run_self_check, memory=memory or memory_file(MEMORY_FILE),
                            announce="auto backend: checking the OptiX backend against the CUDA grid on this GPU "
                                     "(once per GPU and driver)", log=log)

"""The check 'auto' runs before it trusts the OptiX backend on a GPU: the same contacts as the CUDA grid.

OptiX programs run through a driver-specific pipeline (the driver compiles the PTX, builds the BVH and
schedules the intersection programs), so a driver or GPU that the backend never ran on may produce
wrong contacts without any error. Before 'auto' picks optix, ``optix_passes_self_check`` builds both
GPU backends on a small polydisperse random state (a few thousand grains, radii 1:4, some touching,
some coincident) and compares their contact pairs, which must be equal: both are exact. The answer is
remembered in ``kernel_cache_dir()/optix_self_check.json`` per GPU, driver, CuPy, OptiX and kernel
sources, so the check runs once per such combination (about a second) and again after any of them
changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

#: Grains of the self-check state.
SELF_CHECK_PARTICLES = 3000
#: Kernel sources whose change invalidates a remembered answer.
SELF_CHECK_SOURCES = ("optix_dem.cu", "grid.cu", "dem_math.cuh", "contact_law.h", "field_law.h", "bond_law.h", "dem_common.cu",
                      "dem_params.h")
MEMORY_FILE = "optix_self_check.json"


class SelfCheckMemory:
    """Remembered self-check answers: {identity: {"passed": bool, "reason": str}} in a JSON file.

    A missing, unreadable or malformed file is an empty memory (the check simply runs again).

    Args:
        path: The JSON file.
    """

    def __init__(self, path: Path):
        self.path = Path(path)

    def _read(self) -> dict:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, identity: str) -> tuple[bool, str] | None:
        """(passed, reason) remembered for ``identity``, or None."""
        entry = self._read().get(identity)
        if not isinstance(entry, dict) or not isinstance(entry.get("passed"), bool):
            return None
        return entry["passed"], str(entry.get("reason", ""))

    def put(self, identity: str, passed: bool, reason: str) -> None:
        """Remember an answer (written atomically; other identities are kept)."""
        data = self._read()
        data[identity] = {"passed": bool(passed), "reason": reason}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.path)


def self_check_state(count: int = SELF_CHECK_PARTICLES, *, seed: int = 17) -> tuple[np.ndarray, np.ndarray]:
    """Centres [m] float32 (count, 3) and radii [m] float32 (count,) of the self-check: radii 1–4 mm in
    a box where each grain touches a few others, two coincident grains and two exactly touching."""
    rng = np.random.default_rng(seed)
    radius = rng.uniform(0.001, 0.004, count).astype(np.float32)
    side = float(np.cbrt(count * (4.0 / 3.0) * np.pi * float(np.mean(radius ** 3)) / 0.45))
    positions = rng.uniform(0.0, side, (count, 3)).astype(np.float32)
    positions[1] = positions[0]
    radius[2] = radius[3] = np.float32(0.0025)
    positions[3] = positions[2] + np.array([0.005, 0.0, 0.0], np.float32)
    return positions, radius


def gpu_identity(cupy, optix) -> str:
    """GPU name, driver, CuPy, OptiX and kernel-source digest: what an answer is remembered under."""
    from .gpu_toolchain import KERNEL_DIR, device_summary

    name, (major, minor) = device_summary(cupy)
    digest = hashlib.sha256()
    for source in SELF_CHECK_SOURCES:
        digest.update((KERNEL_DIR / source).read_bytes())
    optix_version = ".".join(str(v) for v in optix.version())
    return (f"{name} sm_{major}{minor} | driver {cupy.cuda.runtime.driverGetVersion()} | CuPy {cupy.__version__}"
            f" | OptiX {optix_version} | kernels {digest.hexdigest()[:16]}")


def compare_contacts(cuda_pairs: np.ndarray, optix_pairs: np.ndarray) -> tuple[bool, str]:
    """(equal, one-sentence reason) for two backends' sorted contact pairs, int32 (P, 2)."""
    if cuda_pairs.shape == optix_pairs.shape and np.array_equal(cuda_pairs, optix_pairs):
        return True, f"OptiX found the CUDA grid's {len(cuda_pairs)} contacts on the self-check state"
    a = {tuple(p) for p in cuda_pairs.tolist()}
    b = {tuple(p) for p in optix_pairs.tolist()}
    duplicates = len(optix_pairs) - len(b)
    return False, (f"OptiX's contacts differ from the CUDA grid's on the self-check state ({len(a - b)} missing, "
                   f"{len(b - a)} extra, {duplicates} listed twice, of {len(a)})")


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
    return compare_contacts(pairs["cuda"], pairs["optix"])


def optix_passes_self_check(*, memory: SelfCheckMemory | None = None, log=print) -> tuple[bool, str]:
    """(passed, reason): OptiX's contacts equal the CUDA grid's on this GPU, remembered per identity."""
    from .gpu_toolchain import import_cupy, import_optix, kernel_cache_dir

    cupy, optix = import_cupy(), import_optix()
    memory = memory or SelfCheckMemory(kernel_cache_dir() / MEMORY_FILE)
    identity = gpu_identity(cupy, optix)
    known = memory.get(identity)
    if known is not None:
        return known
    log("auto backend: checking the OptiX backend against the CUDA grid on this GPU (once per GPU and driver)")
    passed, reason = run_self_check()
    memory.put(identity, passed, reason)
    return passed, reason

"""What every self-check of 'auto' shares: the small state both backends search, the comparison of
their contacts, and the file that remembers each answer per device and driver.

'auto' trusts a backend whose detection runs through a driver-specific path (OptiX programs, a
slangpy ray-tracing device) only after that backend found the same contacts as a reference backend on
``self_check_state`` on this very device and driver (engine.backends.optix_self_check,
engine.backends.rt_self_check). A check takes about a second, so its answer is kept in a JSON file
under ``kernel_cache_dir()`` keyed by everything that could change it, and runs again only when one of
those changes.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

#: Grains of the self-check state.
SELF_CHECK_PARTICLES = 3000


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


def memory_file(name: str) -> SelfCheckMemory:
    """The memory ``kernel_cache_dir()/name`` ($MOCHI_KERNEL_CACHE or ~/.cache/mochi/kernels)."""
    from .gpu_toolchain import kernel_cache_dir

    return SelfCheckMemory(kernel_cache_dir() / name)


def sources_digest(names) -> str:
    """First 16 hex digits of the SHA-256 of the kernel sources ``names`` (kernels/…): a remembered answer
    is void once any of them changes."""
    from .gpu_toolchain import KERNEL_DIR

    digest = hashlib.sha256()
    for name in names:
        digest.update((KERNEL_DIR / name).read_bytes())
    return digest.hexdigest()[:16]


def remembered_check(identity: str, run, *, memory: SelfCheckMemory, announce: str, log=print) -> tuple[bool, str]:
    """(passed, reason) remembered for ``identity``, or ``run()``'s answer, announced and remembered.

    Args:
        identity: What the answer depends on (device, driver, library and kernel versions).
        run: Callable returning (passed, reason): the check itself.
        memory: Where answers are kept.
        announce: The line ``log`` gets before the check runs.
    """
    known = memory.get(identity)
    if known is not None:
        return known
    log(announce)
    passed, reason = run()
    memory.put(identity, passed, reason)
    return passed, reason


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


def compare_contacts(reference_pairs: np.ndarray, checked_pairs: np.ndarray, *, reference: str,
                     checked: str) -> tuple[bool, str]:
    """(equal, one-sentence reason) for two backends' sorted contact pairs, int32 (P, 2).

    Args:
        reference_pairs: The trusted backend's pairs.
        checked_pairs: The pairs of the backend under check.
        reference, checked: Their names in the reason ('the CUDA grid', 'OptiX').
    """
    if reference_pairs.shape == checked_pairs.shape and np.array_equal(reference_pairs, checked_pairs):
        return True, f"{checked} found {reference}'s {len(reference_pairs)} contacts on the self-check state"
    a = {tuple(p) for p in reference_pairs.tolist()}
    b = {tuple(p) for p in checked_pairs.tolist()}
    repeated = len(checked_pairs) - len(b)
    return False, (f"{checked}'s contacts differ from {reference}'s on the self-check state ({len(a - b)} missing, "
                   f"{len(b - a)} extra, {repeated} listed twice, of {len(a)})")

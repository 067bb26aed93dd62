"""The check 'auto' runs before it trusts the rt backend on a device: the same contacts as the CPU.

The rt detection runs through the device's driver (it builds the acceleration structures, compiles the
Slang kernels and schedules the traversal), so a GPU or driver it never ran on may find wrong contacts
without any error: no GPU has run it yet (docs/rt.md). Before 'auto' picks rt,
``rt_passes_self_check`` builds the rt backend and the CPU backend on the shared self-check state (a
few thousand grains, radii 1:4, some touching, two coincident, two exactly touching:
engine.backends.self_check) and compares their contact pairs, which must be equal: both decide in
float64 from the same float32 centres. The answer is remembered in
``kernel_cache_dir()/rt_self_check.json`` per device kind, adapter, driver (engine.backends.rt_driver),
slangpy version and rt kernel sources, so the check runs once per such combination and again after any
of them changes. The check itself runs on any ray-tracing device, lavapipe included (the tests run it
there); 'auto' asks for it only on hardware (engine.backends.select).
"""

from __future__ import annotations

from .rt_device import RtDevice, open_rt_device
from .self_check import (SelfCheckMemory, compare_contacts, memory_file, remembered_check, self_check_state,
                         sources_digest)

#: Kernel sources whose change invalidates a remembered answer.
SELF_CHECK_SOURCES = ("rt_contact_pairs.slang", "rt_dem_step.slang", "contact_law.h", "field_law.h", "bond_law.h")
MEMORY_FILE = "rt_self_check.json"


def rt_identity(rt: RtDevice) -> str:
    """Device kind, adapter, driver, slangpy and kernel-source digest: what an answer is remembered under."""
    import slangpy

    from .rt_driver import driver_of

    return (f"{rt.kind} | {rt.adapter} | {driver_of(rt.kind, rt.adapter)} | slangpy {slangpy.__version__}"
            f" | kernels {sources_digest(SELF_CHECK_SOURCES)}")


def run_rt_self_check(rt: RtDevice) -> tuple[bool, str]:
    """Build the rt and CPU backends on ``self_check_state`` and compare their contacts.

    Returns:
        (passed, one-sentence reason without its full stop); any failure of the rt backend is a fail.
    """
    from .cpu import BackendCpu
    from .gpu_failure import gpu_failure_sentence
    from .rt_backend import BackendRt
    from ..model import contact_model
    from ..neighbors.base import sorted_pairs
    from ..state import make_state

    positions, radius = self_check_state()
    model = contact_model(positions, radius)
    reference = BackendCpu(model)
    reference.set_state(make_state(positions))
    try:
        runner = BackendRt(model, device=rt)
        runner.set_state(make_state(positions))
        pairs = runner.contact_pairs()
    except Exception as exc:  # any failure means: do not pick rt; say why
        return False, gpu_failure_sentence("rt", exc).rstrip(".")
    expected = reference.contact_pairs()  # i < j in each row, rows in the list's order: sorted here
    return compare_contacts(sorted_pairs(expected[:, 0], expected[:, 1]), pairs, reference="the CPU backend",
                            checked="the rt backend")


def rt_passes_self_check(kind: str | None = None, *, memory: SelfCheckMemory | None = None,
                         log=print) -> tuple[bool, str]:
    """(passed, reason): the rt backend's contacts equal the CPU's on the device ``open_rt_device(kind)``
    opens, remembered per device and driver (``rt_identity``).

    Raises:
        MochiError: no such device can be opened (slangpy missing, no ray tracing).
    """
    rt = open_rt_device(kind)
    return remembered_check(rt_identity(rt), lambda: run_rt_self_check(rt),
                            memory=memory or memory_file(MEMORY_FILE),
                            announce=f"auto backend: checking the rt backend against the CPU on {rt.adapter} "
                                     "(once per device and driver)", log=log)

"""The searches of whole-solver backends (cuda grid, OptiX, and 'auto'), behind the neighbour-search interface.

The GPU backends find contacts inside their step and keep no host-side list, so this adapter builds one
over a contact-only model (engine.model.contact_model) and asks it for the touching pairs; it therefore
supports skin 0 only. CuPy and optix are imported when a search is made, not when this module is.
"""

from __future__ import annotations

import numpy as np

from ..errors import MochiError
from .base import NeighborSearch, sorted_pairs


class NeighborSearchSolver(NeighborSearch):
    """The touching pairs a backend of ``engine.backends`` finds.

    Args:
        backend: A name of ``engine.backends.BACKEND_NAMES`` ('auto' falls back as the bake does).
        log: Where one-line messages go ('auto' reports its choice).
        rt_device: Device kind for the rt backend 'auto' may choose, or None.
    """

    def __init__(self, backend: str, *, log=lambda message: None, rt_device: str | None = None):
        self.name = backend
        self.log = log
        self.rt_device = rt_device
        self.chosen = ""

    def _search(self, centres, radius, active, skin):
        from ..backends import make_backend
        from ..model import contact_model
        from ..state import make_state

        if skin != 0.0:
            raise MochiError(f"The {self.name} search finds touching pairs only; use skin 0 with it.")
        runner = make_backend(self.name, contact_model(centres, radius), log=self.log, rt_device=self.rt_device)
        self.chosen = runner.describe()
        runner.set_state(make_state(centres, active=active.astype(np.uint8)))
        pairs = runner.contact_pairs()
        return sorted_pairs(pairs[:, 0], pairs[:, 1])

    def describe(self) -> str:
        return self.chosen or self.name

"""Neighbour search: which spheres are within reach of each other, behind one interface.

``make_neighbor_search(name)`` returns a ``NeighborSearch`` (engine.neighbors.base): ``allocate`` a
``NeighborList`` with a capacity margin, ``update`` it as grains move (a new search only once some grain
has moved half the skin; ``overflow`` set when the pairs outgrow the capacity), ``update_or_allocate``
to act on that flag. Names:

- 'brute': the exact oracle (engine.neighbors.brute), which the tests compare every other search with;
- 'cpu': the CPU backend's cell list (engine.neighbors.cpu);
- 'rt': the paper's ray-traced search on any device with ray tracing, through slangpy (engine.neighbors.rt);
- 'cuda', 'optix', 'auto': the GPU backends' own searches, through a contact-only model
  (engine.neighbors.solver; skin 0 only).
"""

from __future__ import annotations

from ..errors import MochiError
from .base import CAPACITY_MARGIN, NeighborList, NeighborSearch

__all__ = ["CAPACITY_MARGIN", "NEIGHBOR_SEARCH_NAMES", "NeighborList", "NeighborSearch", "make_neighbor_search"]

#: Every name ``make_neighbor_search`` accepts.
NEIGHBOR_SEARCH_NAMES = ("brute", "auto", "cpu", "cuda", "optix", "rt")


def make_neighbor_search(name: str, *, log=lambda message: None, rt_device: str | None = None) -> NeighborSearch:
    """The search called ``name`` (one of ``NEIGHBOR_SEARCH_NAMES``); ``log`` takes one-line messages;
    ``rt_device`` forces the device kind of 'rt' (and of the rt backend 'auto' may choose).

    Raises:
        MochiError: an unknown name, or a device kind for a search other than 'rt' or 'auto'.
    """
    from ..backends import check_rt_device

    if name in NEIGHBOR_SEARCH_NAMES:
        check_rt_device(name, rt_device)
    if name == "brute":
        from .brute import NeighborSearchBrute

        return NeighborSearchBrute()
    if name == "cpu":
        from .cpu import NeighborSearchCpu

        return NeighborSearchCpu()
    if name == "rt":
        from .rt import NeighborSearchRt

        return NeighborSearchRt(rt_device)
    if name in NEIGHBOR_SEARCH_NAMES:
        from .solver import NeighborSearchSolver

        return NeighborSearchSolver(name, log=log, rt_device=rt_device)
    raise MochiError(f"Unknown neighbour search '{name}'; choose one of {', '.join(NEIGHBOR_SEARCH_NAMES)}.")

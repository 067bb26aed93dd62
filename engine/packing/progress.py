"""Progress and cancellation of one packing, for a window that must answer while millions of spheres pack.

A packing's time goes into a few loops over millions of points: distances to the surface, winding
numbers, lattice slabs, the grouping of lattice sites, the small spheres' clearance from the large ones.
Given a ``PackProgress``, each of those loops runs in chunks sized by time (``run_chunked``: about
``CHUNK_SECONDS`` each) and, between two chunks, records how far it got and looks at the cancel flag:
a cancel raises ``PackCancelled`` within one chunk, and nothing the packing built survives it (it only
ever returns a finished ``PackResult``). Every point of those loops is computed independently of the
others, so the chunking changes no bit of the result. Without a progress object (the CLI, the tests,
scripts) each loop is one call, as before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from ..cancel import CancelFlag

#: Wall-clock time one uninterrupted chunk aims at [s]: a cancel is seen within about this (twice it
#: on a machine whose cores are shared), far below the 1 s a person waits for Esc to act.
CHUNK_SECONDS = 0.1
#: Items in the first chunk of a loop, before its speed is known (small: a costly kernel, such as
#: winding numbers on a large mesh, takes ~10 µs a point).
FIRST_CHUNK = 2048
#: A chunk is at most this many times larger or smaller than the one before (one noisy timing must
#: not make the next chunk huge).
CHUNK_GROWTH = 4.0


class PackCancelled(Exception):
    """Raised inside a packing when its ``PackProgress`` was asked to stop; not an error."""


@dataclass(eq=False)
class PackProgress(CancelFlag):
    """What a running packing tells the thread that waits for it; written by the packing, read by anyone.

    Attributes:
        stage: What the packing does now, in an artist's words ('testing which sites are inside').
        fraction: How far that stage is, 0..1.
        attempt: The packing of the current radius (1, 2, ...): a target count packs a few radii.
        attempts_most: Most packings it may take (1 for a given radius).
        chunks: Chunks finished so far, over all stages (each one a look at the cancel flag).
    """

    stage: str = ""
    fraction: float = 0.0
    attempt: int = 1
    attempts_most: int = 1
    chunks: int = 0

    def check(self) -> None:
        """Raise ``PackCancelled`` when a cancel was requested."""
        if self.cancel_requested:
            raise PackCancelled()

    def begin(self, stage: str) -> None:
        """Start a stage (after looking at the cancel flag)."""
        self.check()
        self.stage, self.fraction = stage, 0.0

    def advance(self, fraction: float) -> None:
        """Record a finished chunk, ``fraction`` of the stage done, then look at the cancel flag."""
        self.fraction = min(max(float(fraction), 0.0), 1.0)
        self.chunks += 1
        self.check()

    def line(self) -> str:
        """The stage and how far it is, e.g. 'testing which sites are inside, 40% (radius 2 of at most 8)'."""
        text = f"{self.stage or 'starting'}, {self.fraction:.0%}"
        if self.attempts_most > 1:
            text += f" (radius {self.attempt} of at most {self.attempts_most})"
        return text


def begin_stage(progress: PackProgress | None, stage: str) -> None:
    """``progress.begin(stage)``, or nothing without a progress object."""
    if progress is not None:
        progress.begin(stage)


def run_chunked(count: int, run: Callable[[int, int], None], progress: PackProgress | None, *,
                clock=time.perf_counter) -> None:
    """Call ``run(begin, end)`` over the items 0..count, in chunks of about ``seconds`` each.

    Without ``progress``: one call over everything. With it: the first chunk has ``FIRST_CHUNK`` items,
    each next one is scaled so it takes about ``CHUNK_SECONDS`` (by the time the last one took, within
    ``CHUNK_GROWTH``), and after each ``progress.advance`` records the share done and raises
    ``PackCancelled`` if a cancel was asked. ``run`` must treat each item on its own (the split points
    depend on timing). ``clock`` reads seconds (a parameter for tests).
    """
    if count <= 0:
        return
    if progress is None:
        run(0, count)
        return
    begin, size = 0, max(int(FIRST_CHUNK), 1)
    while begin < count:
        end = min(count, begin + size)
        began = clock()
        run(begin, end)
        elapsed = clock() - began
        done = end - begin
        begin = end
        progress.advance(begin / count)
        scale = CHUNK_SECONDS / elapsed if elapsed > 0 else CHUNK_GROWTH
        size = max(1, int(done * min(max(scale, 1.0 / CHUNK_GROWTH), CHUNK_GROWTH)))

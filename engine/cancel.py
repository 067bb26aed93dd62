"""A cancel flag that one thread raises and another looks at between chunks of work: the base of the
progress objects of a bake (``engine.bake.BakeProgress``) and of a packing
(``engine.packing.progress.PackProgress``)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field


@dataclass(eq=False)
class CancelFlag:
    """Cancellation shared between the thread that works and any thread that asks it to stop."""

    _cancel: threading.Event = field(default_factory=threading.Event, repr=False)

    def request_cancel(self) -> None:
        """Ask the work to stop at its next look at the flag, after its current chunk (from any thread)."""
        self._cancel.set()

    @property
    def cancel_requested(self) -> bool:
        return self._cancel.is_set()

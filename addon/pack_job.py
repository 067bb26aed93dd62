"""Pack in a worker thread, so that Blender's window keeps drawing while the sources are packed (the
first Pack after an install also compiles the packing kernels, ~20 s). No bpy in this module.

The main thread captures the sources (``addon.snapshot.source_blender_to_settings``: plain arrays),
starts a ``PackJob`` and polls it from a timer; the worker packs them one after the other
(``addon.settings.pack_source``; numba's kernels release the GIL, and its compiler mostly runs in
llvmlite's C++, which ctypes calls without the GIL). The main thread alone touches the scene, once
everything is packed, so a failure or a cancel changes nothing.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .settings import SourceSettings


@dataclass(eq=False)
class PackJob:
    """Packing of ``sources`` (object name -> captured source), one worker thread.

    Attributes:
        sources: What to pack, by object name, in the order the report names them.
        seed: Packing seed (the scene's).
        results: Object name -> ``engine.packing.PackResult``, filled as each source is done.
        current: Name of the source being packed ("" before and after).
        error: The failure's sentence (the first source that cannot be packed), or None.
        cancel_requested: Set by ``request_cancel``: the worker stops before the next source (a source
            being packed is finished, then dropped).
        finished: True once the worker has stopped, for whatever reason.
    """

    sources: dict[str, SourceSettings]
    seed: int
    results: dict = field(default_factory=dict)
    current: str = ""
    error: str | None = None
    cancel_requested: bool = False
    finished: bool = False
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> "PackJob":
        self.thread = threading.Thread(target=self._run, name="mochi-pack", daemon=True)
        self.thread.start()
        return self

    def request_cancel(self) -> None:
        self.cancel_requested = True

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested and self.finished

    def progress_line(self) -> str:
        """One line for the status bar: which source, how many are done."""
        done, total = len(self.results), len(self.sources)
        return (f"Mochi: packing '{self.current}' ({done + 1} of {total}; the first Pack after an install "
                "compiles, ~20 s). Esc cancels.")

    def join(self, timeout: float | None = None) -> bool:
        if self.thread is not None:
            self.thread.join(timeout)
        return self.finished

    def _run(self) -> None:
        import sys
        import traceback

        from ..engine.errors import MochiError
        from .settings import pack_source

        try:
            for name, source in self.sources.items():
                if self.cancel_requested:
                    return
                self.current = name
                self.results[name] = pack_source(source, seed=self.seed)
        except MochiError as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug: the traceback on the console, one line for the user
            traceback.print_exc(file=sys.stderr)
            self.error = f"Pack failed with an internal error ({type(exc).__name__}: {exc})."
        finally:
            self.current = ""
            self.finished = True

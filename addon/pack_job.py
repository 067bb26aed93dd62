"""Pack in a worker thread, so that Blender's window keeps drawing while the sources are packed (the
first Pack after an install also compiles the packing kernels, ~20 s). No bpy in this module.

The main thread captures the sources (``addon.snapshot.source_blender_to_settings``: plain arrays),
starts a ``PackJob`` and polls it from a timer; the worker packs them one after the other
(``addon.settings.pack_source``; numba's kernels release the GIL, and its compiler mostly runs in
llvmlite's C++, which ctypes calls without the GIL). The main thread alone touches the scene, once
everything is packed, so a failure or a cancel changes nothing.

Each source packs with an ``engine.packing.PackProgress``: the packer records its stage and share
done between chunks of about 0.1 s and stops at the next chunk once Esc asked it to (a 4-million-grain
source used to run to its end, minutes, before the cancel was seen). The status bar shows that stage.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from .settings import SourceSettings


def _new_progress():
    # Imported when a Pack starts: engine.packing brings numba and scipy, which registering must not.
    from ..engine.packing.progress import PackProgress

    return PackProgress()


@dataclass(eq=False)
class PackJob:
    """Packing of ``sources`` (object name -> captured source), one worker thread.

    Attributes:
        sources: What to pack, by object name, in the order the report names them.
        seed: Packing seed (the scene's).
        results: Object name -> ``engine.packing.PackResult``, filled as each source is done.
        current: Name of the source being packed ("" before and after).
        error: The failure's sentence (the first source that cannot be packed), or None.
        progress: The packing of the current source: its stage, share done and cancel flag.
        cancel_requested: Set by ``request_cancel``: the source being packed stops at its next chunk
            (``engine.packing.progress``), and no other starts.
        finished: True once the worker has stopped, for whatever reason.
    """

    sources: dict[str, SourceSettings]
    seed: int
    results: dict = field(default_factory=dict)
    current: str = ""
    error: str | None = None
    progress: object = field(default_factory=_new_progress)
    cancel_requested: bool = False
    finished: bool = False
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> "PackJob":
        self.thread = threading.Thread(target=self._run, name="mochi-pack", daemon=True)
        self.thread.start()
        return self

    def request_cancel(self) -> None:
        """Stop the worker at the packing's next chunk (any thread)."""
        self.cancel_requested = True
        self.progress.request_cancel()

    @property
    def cancelled(self) -> bool:
        return self.cancel_requested and self.finished

    def progress_line(self) -> str:
        """One line for the status bar: which source, how many are done, what its packing does now."""
        done, total = len(self.results), len(self.sources)
        if self.progress.chunks == 0 and self.progress.stage.startswith("waiting"):
            doing = self.progress.stage
        elif self.progress.chunks == 0 and not self.progress.stage:
            doing = "starting (the first Pack after an install may compile its kernels first)"
        else:
            doing = self.progress.line()
        return f"Mochi: packing '{self.current}' ({done + 1} of {total}): {doing}. Esc cancels."

    def join(self, timeout: float | None = None) -> bool:
        if self.thread is not None:
            self.thread.join(timeout)
        return self.finished

    def _run(self) -> None:
        import sys
        import traceback

        from ..engine.errors import MochiError
        from ..engine.packing.progress import PackCancelled
        from .preload import wait_for_preload
        from .settings import pack_source
        from .worker_priority import lower_worker_priority

        lower_worker_priority()  # the window first, as for a bake (addon/worker_priority.py)
        try:
            self.progress.stage = "waiting for the kernels the first start after an install compiles"
            if not wait_for_preload(lambda: self.cancel_requested):
                return
            for name, source in self.sources.items():
                if self.cancel_requested:
                    return
                self.current = name
                self.progress.stage, self.progress.fraction, self.progress.chunks = "", 0.0, 0
                self.results[name] = pack_source(source, seed=self.seed, progress=self.progress)
        except PackCancelled:
            pass  # cancel_requested says so; nothing packed is kept
        except MochiError as exc:
            self.error = str(exc)
        except Exception as exc:  # a bug: the traceback on the console, one line for the user
            traceback.print_exc(file=sys.stderr)
            self.error = f"Pack failed with an internal error ({type(exc).__name__}: {exc})."
        finally:
            self.current = ""
            self.finished = True

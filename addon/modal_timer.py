"""The window timer a modal operator follows its background work on (Pack, Bake, a package install).

Each of those operators starts a worker, then polls it on a window timer event while the window keeps
drawing; ``PollingModal`` starts and stops that timer in one place.
"""

from __future__ import annotations


class PollingModal:
    """Mixin for a ``bpy.types.Operator`` that polls background work on a window timer."""

    _timer = None

    def _start_timer(self, context, step: float) -> None:
        """Add a timer event every ``step`` seconds to the operator's window and make the operator modal."""
        wm = context.window_manager
        self._timer = wm.event_timer_add(step, window=context.window)
        wm.modal_handler_add(self)

    def _stop_timer(self, context, *, clear_status: bool = True) -> None:
        """Remove the timer (if any), and with ``clear_status`` the status-bar text the operator set."""
        if self._timer is not None:
            context.window_manager.event_timer_remove(self._timer)
            self._timer = None
        if clear_status and context.workspace is not None:
            context.workspace.status_text_set(None)

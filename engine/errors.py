"""The errors Mochi shows to people.

Every problem a user can cause (bad file, bad value, unstable time step) raises ``MochiError`` with
one sentence that names the file, key or value at fault. The CLI prints that sentence and exits
non-zero; the Blender operators hand it to ``self.report``. Anything else is a bug and keeps its
traceback.
"""


class MochiError(Exception):
    """A user-facing error whose message is one complete sentence."""


class SimulationDiverged(MochiError):
    """The simulation produced NaN or runaway speeds at a given step.

    Attributes:
        step: Global step index (0-based) at which the problem was detected.
    """

    def __init__(self, message: str, step: int):
        super().__init__(message)
        self.step = step


class BakeCancelled(Exception):
    """Raised inside a bake when its progress object asks it to stop; not an error."""

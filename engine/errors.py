"""The errors Mochi shows to people.

Every problem a user can cause (bad file, bad value, unstable time step) raises ``MochiError`` with
one sentence that names the file, key or value at fault. The CLI prints that sentence and exits
non-zero; the Blender operators hand it to ``self.report``. Anything else is a bug and keeps its
traceback.
"""


import re

#: Control characters (C0, DEL, C1) and the Unicode bidirectional overrides: a name holding them could
#: move the cursor, recolour or rewrite a terminal line, or reorder the text around it.
_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """``text`` with every control character written as an escape (ESC → '\\x1b', newline → '\\n'), so
    that printing a file, preset or object name can never drive the terminal."""
    def escaped(match: re.Match) -> str:
        char = match.group()
        return {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(char) or (
            f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
    return _CONTROLS.sub(escaped, str(text))


class MochiError(Exception):
    """A user-facing error whose message is one complete sentence (control characters escaped)."""

    def __init__(self, message: str = "", *args):
        super().__init__(escape_controls(message), *args)


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

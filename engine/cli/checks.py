"""Range checks of command-line numbers: argparse parses them, these refuse the absurd ones.

A number that parses can still break a command later (a frame count of 0 meaning 'the preset's', an
idle time of NaN that never ends, a 200000 × 200000 image): each command checks its numbers here first
and refuses one with a sentence naming the option, its value and its range.
"""

from __future__ import annotations

import math

from ..errors import MochiError

#: Largest particle count a bake can hold (ids and indices are int32).
MAX_PARTICLES = 2**31 - 1
#: Blender's last frame.
MAX_FRAMES = 1_048_574


def integer_in(value: int | None, flag: str, low: int, high: int) -> int | None:
    """``value`` (None passes) if ``low ≤ value ≤ high``.

    Raises:
        MochiError: naming ``flag`` and the range.
    """
    if value is not None and not low <= value <= high:
        raise MochiError(f"{flag} must be an integer from {low:,} to {high:,}, not {value:,}.")
    return value


def number_in(value: float | None, flag: str, low: float, high: float) -> float | None:
    """``value`` (None passes) if it is finite and ``low ≤ value ≤ high``.

    Raises:
        MochiError: naming ``flag`` and the range (NaN and infinities included).
    """
    if value is not None and not (math.isfinite(value) and low <= value <= high):
        raise MochiError(f"{flag} must be a number from {low:g} to {high:g}, not {value!r}.")
    return value

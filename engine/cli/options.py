"""Command-line options shared by several commands: ``--rt-device``, ``--overwrite``.

argparse's own ``choices`` would answer a bad value with the usage and a message of its own; the value is
checked by a ``type`` function instead, whose ``MochiError`` reaches the one guard of every command
(engine.cli.main): one sentence, exit status 2, no traceback.
"""

from __future__ import annotations

from ..backends.rt_device import RT_DEVICE_KINDS
from ..errors import MochiError


def rt_device_kind(text: str) -> str:
    """``text`` if it is a ray-tracing device kind, else a ``MochiError`` listing them."""
    if text not in RT_DEVICE_KINDS:
        raise MochiError(f"Unknown ray-tracing device '{text}' for --rt-device; choose one of "
                         f"{', '.join(RT_DEVICE_KINDS)}.")
    return text


def add_rt_device_argument(parser) -> None:
    """Add ``--rt-device KIND`` (default None: the first kind with ray tracing)."""
    parser.add_argument("--rt-device", type=rt_device_kind, default=None, metavar="{" + ",".join(RT_DEVICE_KINDS) + "}",
                        help="device kind the rt backend opens (with --backend rt or auto; default: the first of "
                             f"{', '.join(RT_DEVICE_KINDS)} that has ray tracing)")


def add_overwrite_argument(parser, what: str) -> None:
    """Add ``--overwrite``: replace ``what`` (the outputs' rule: engine.output_files)."""
    parser.add_argument("--overwrite", action="store_true", help=f"replace {what}")

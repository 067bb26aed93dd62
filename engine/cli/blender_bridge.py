"""Running the bpy-side commands (addon/headless.py) from the engine's CLI.

The engine never imports bpy: commands that need Blender (baking a .blend, rendering a preview) run
``addon/headless.py`` in a child Python, which loads the extension and the bpy module.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

from ..errors import MochiError

HEADLESS_SCRIPT = Path(__file__).resolve().parents[2] / "addon" / "headless.py"


def run_headless(arguments: list[str], *, script: str = HEADLESS_SCRIPT.name) -> int:
    """Run ``addon/SCRIPT ARGUMENTS`` (default addon/headless.py) with this Python; returns its exit status.

    Raises:
        MochiError: bpy is not installed or the add-on is missing from this installation.
    """
    if importlib.util.find_spec("bpy") is None:
        raise MochiError("This needs Blender's Python module (bpy), which is not installed; install it "
                         "with: pip install 'mochi-dem[blender]'.")
    path = HEADLESS_SCRIPT.with_name(script)
    if not path.is_file():
        raise MochiError(f"The Blender add-on is missing from this installation ({path}).")
    return subprocess.call([sys.executable, str(path), *arguments])

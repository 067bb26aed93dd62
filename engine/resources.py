"""Where the files that are not Python live: the CUDA/OptiX sources (kernels/) and the presets.

An installed wheel carries them inside the package (``engine/kernels``, ``engine/presets``; setup.py
maps the top-level folders there); a source checkout, an editable install and the Blender extension
keep them beside ``engine/``, at the repository root.
"""

from __future__ import annotations

from pathlib import Path

#: Folders shipped with the engine.
DATA_FOLDERS = ("kernels", "presets")


def data_dir(name: str) -> Path:
    """The folder ``name`` (one of ``DATA_FOLDERS``): inside the installed package, else beside it."""
    package = Path(__file__).resolve().parent
    installed = package / name
    return installed if installed.is_dir() else package.parent / name

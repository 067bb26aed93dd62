#!/usr/bin/env bash
# The test suite: set up, then pytest (pytest-blender disabled: it needs a Blender executable; the
# Blender tests run on the bpy module instead). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/python -m pytest -p no:pytest-blender "$@"

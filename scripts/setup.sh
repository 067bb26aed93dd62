#!/usr/bin/env bash
# Creates .venv (Python 3.11: Blender 5.0's bpy module needs it) and installs Mochi with its extras.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -x .venv/bin/python ]; then
    PY=$(command -v python3.11 || true)
    if [ -z "$PY" ]; then
        echo "setup: Python 3.11 is required (bpy 5.0.1 is built for it); install python3.11 first." >&2
        exit 1
    fi
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e ".[blender,test,bench]"

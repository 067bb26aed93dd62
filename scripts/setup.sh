#!/usr/bin/env bash
# Creates the virtual environments, one per supported Blender line, and installs Mochi into each:
#   .venv     Python 3.11, bpy 5.0.1   mochi-dem[blender,test,bench,rt]  (the main one: CLI, demo, engine tests)
#   .venv45   Python 3.11, bpy 4.5.15  mochi-dem[blender-4-5,test]     (the add-on tests on Blender 4.5 LTS)
#   .venv313  Python 3.13, bpy 5.2.3   mochi-dem[blender-5-2,test]     (the add-on tests on Blender 5.2 LTS)
# `setup.sh` makes only .venv (what scripts/demo.sh needs); `setup.sh all` makes all three (scripts/test.sh).
#
# An environment whose stamp file matches is left alone without running pip, so that once installed the
# two README commands run without the network. The stamp is a hash of pyproject.toml, this script and
# the environment's line; editing either re-installs.
set -euo pipefail
cd "$(dirname "$0")/.."

# Python 3.13 for the 5.2 line: on the PATH, else from pyenv (this image has it, not enabled globally).
find_python313() {
    local candidate
    for candidate in "$(command -v python3.13 || true)" "$(pyenv root 2>/dev/null || echo "$HOME/.pyenv")"/versions/3.13*/bin/python3.13; do
        if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" -c "" >/dev/null 2>&1; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

# setup_line VENV PYTHON EXTRAS
setup_line() {
    local venv=$1 python=$2 extras=$3 stamp
    stamp=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -d' ' -f1)" $venv $extras"
    if [ -x "$venv/bin/python" ] && [ -f "$venv/.mochi-setup" ] && [ "$(cat "$venv/.mochi-setup")" = "$stamp" ]; then
        return 0  # installed and up to date: no pip, no network
    fi
    echo "setup: installing mochi-dem[$extras] into $venv" >&2
    [ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
    rm -f "$venv/.mochi-setup"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade pip
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[$extras]"
    echo "$stamp" >"$venv/.mochi-setup"
}

PY311=$(command -v python3.11 || true)
if [ -z "$PY311" ]; then
    echo "setup: Python 3.11 is required (bpy 4.5 and 5.0 are built for it); install python3.11 first." >&2
    exit 1
fi
setup_line .venv "$PY311" "blender,test,bench,rt"
if [ "${1:-main}" != all ]; then
    exit 0
fi
# Vulkan ray tracing on the CPU (Mesa's lavapipe) for the rt backend's tests; at once when installed.
bash scripts/install_lavapipe.sh
# Debian's LAMMPS (with OpenMPI) and LIGGGHTS for the export-lammps/import-lammps and peer tests (apt, as root).
bash benchmarks/peers/setup.sh || echo "setup: LAMMPS/LIGGGHTS not installed (needs root and Debian's archive); their tests will skip." >&2
setup_line .venv45 "$PY311" "blender-4-5,test"
if PY313=$(find_python313); then
    setup_line .venv313 "$PY313" "blender-5-2,test"
else
    echo "setup: no Python 3.13 found (python3.13 or pyenv); the Blender 5.2 line will not be tested." >&2
fi

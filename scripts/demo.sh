#!/usr/bin/env bash
# The main job: the bundled bunny, packed into two-radius grains of the default look (sand), dropped onto a
# heap of the same sand, baked on the CPU and rendered through the add-on's geometry-nodes playback.
# Writes out/demo/demo.png (the result), out/demo/demo.gif (the fall) and out/demo/demo_sheet.png.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
began=$SECONDS
.venv/bin/python scripts/demo_scene.py --out out/demo                 # the heap (measured) and the preset
.venv/bin/mochi bake out/demo/demo.toml --out out/demo/cache --backend cpu --overwrite
.venv/bin/python scripts/demo_render.py out/demo/cache --out out/demo  # Cycles, CPU: still, animation, sheet
echo "Demo: out/demo/demo.png, out/demo/demo.gif, out/demo/demo_sheet.png ($((SECONDS - began)) s)"

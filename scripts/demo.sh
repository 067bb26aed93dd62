#!/usr/bin/env bash
# The main job: set up, bake the sand-pile preset on the CPU, render a preview of its last frame.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/mochi bake presets/sand_pile.toml --out out/sand_pile --frames 48 --backend cpu --overwrite
.venv/bin/mochi render-preview out/sand_pile --frame 48 --out out/sand_pile_frame48.png
echo "Preview: out/sand_pile_frame48.png"

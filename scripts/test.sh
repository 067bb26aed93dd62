#!/usr/bin/env bash
# The test suite, in tiers (durations on the 2-core CI machine in docs/blender.md):
#   1. bpy 5.0 (.venv)       the whole suite: engine, CLI, GPU tests (skipped without a GPU), add-on
#   2. bpy 4.5 LTS (.venv45) the add-on tests
#   3. bpy 5.2 LTS (.venv313) the add-on tests
#   4. a real Blender executable through pytest-blender: the add-on tests inside it, and
#      tests/addon/test_blender_executable.py (zip installed from the command line, `-c mochi bake`,
#      Cycles and EEVEE renders, the farm case, no numpy, the Bake button under Xvfb). The executable is
#      $BLENDER, or Debian's Blender 5.2 LTS in a chroot made on first use (scripts/provision_blender.sh).
# Extra arguments go to every pytest run (e.g. -q). Set MOCHI_TIERS to run some tiers only, e.g.
# MOCHI_TIERS="5.0 executable"; MOCHI_SCREENSHOT_DIR=docs/ refreshes the Bake button screenshots.
# Every tier runs even when one fails; the exit status is non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh all || exit 1

TIERS=${MOCHI_TIERS:-"5.0 4.5 5.2 executable"}
LOGS=$(mktemp -d)
trap 'rm -rf "$LOGS"' EXIT
failed=()

run_tier() {  # run_tier NAME COMMAND...: runs, times and records one tier
    local name=$1 start status
    shift
    echo "=== tier $name: $*" >&2
    start=$(date +%s)
    "$@" 2>&1 | tee "$LOGS/$name.log"
    status=${PIPESTATUS[0]}
    echo "=== tier $name: exit $status in $(( $(date +%s) - start )) s" >&2
    # pytest exits 5 when a tier collected nothing (e.g. everything deselected by -k): not a failure.
    if [ "$status" != 0 ] && [ "$status" != 5 ]; then
        failed+=("$name")
    fi
}

wants() { [[ " $TIERS " == *" $1 "* ]]; }

wants 5.0 && run_tier 5.0 .venv/bin/python -m pytest -p no:pytest-blender "$@"
wants 4.5 && run_tier 4.5 .venv45/bin/python -m pytest -p no:pytest-blender tests/addon "$@"
if wants 5.2; then
    if [ -x .venv313/bin/python ]; then
        run_tier 5.2 .venv313/bin/python -m pytest -p no:pytest-blender tests/addon "$@"
    else
        echo "=== tier 5.2: no .venv313 (setup found no Python 3.13); not run" >&2
        failed+=("5.2")
    fi
fi

executable_tier() {
    local blender python zip
    blender=$(bash scripts/provision_blender.sh) || return 1
    # The zip must carry the wheels of the executable's own Python (Debian's Blender runs the system one).
    python=$("$blender" -b --factory-startup --python-expr \
        'import sys; print("MOCHI_PYTHON %d.%d" % sys.version_info[:2])' 2>/dev/null | sed -n 's/^MOCHI_PYTHON //p')
    if [ -z "$python" ]; then
        echo "test: $blender did not start." >&2
        return 1
    fi
    mkdir -p dist
    zip=$(.venv/bin/python scripts/build_extension.py --python "$python" --platform linux-x64 \
        --output-dir dist | sed -n 's/  .*(validated)$//p') || return 1
    echo "=== tier executable: $("$blender" --version 2>/dev/null | head -1), Python $python, $zip" >&2
    # pytest-blender runs pytest inside Blender; Blender's user folder is a fresh one for the run.
    MOCHI_EXTENSION_ZIP=$zip BLENDER_USER_RESOURCES=$(mktemp -d) \
        .venv/bin/python -m pytest --blender-executable "$blender" -W ignore::pytest.PytestRemovedIn10Warning \
        tests/addon "$@"
}
wants executable && run_tier executable executable_tier "$@"

# One closing line over all tiers (each tier's pytest printed its own above); errors count as failed.
.venv/bin/python - "$LOGS" <<'EOF'
import re, sys
from pathlib import Path
totals = {"passed": 0, "failed": 0, "skipped": 0}
for log in sorted(Path(sys.argv[1]).glob("*.log")):
    summaries = [l for l in log.read_text(errors="replace").splitlines() if re.search(r"\d+ (passed|failed)", l)]
    for count, word in re.findall(r"(\d+) (passed|failed|skipped|errors?)", summaries[-1] if summaries else ""):
        totals["failed" if word.startswith("error") else word] += int(count)
print(f"tiers: {totals['passed']} passed, {totals['failed']} failed, {totals['skipped']} skipped")
EOF
if [ ${#failed[@]} -gt 0 ]; then
    echo "test: tiers failed: ${failed[*]}" >&2
    exit 1
fi

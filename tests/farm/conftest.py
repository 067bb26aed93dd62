"""The Flamenco job types run under Node in tests/farm/flamenco_harness.js (a stand-in for the
Manager's job compiler, not Flamenco itself)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HARNESS = Path(__file__).with_name("flamenco_harness.js")
JOB_TYPES = REPO / "addon" / "flamenco"
NODE = shutil.which("node")


def run_harness(*args: str, stdin: str = "") -> tuple[int, dict]:
    if NODE is None:
        pytest.skip("Node.js is not installed (apt-get install nodejs)")
    result = subprocess.run([NODE, str(HARNESS), *args], input=stdin, capture_output=True, text=True, timeout=60)
    assert result.stderr == "", result.stderr
    return result.returncode, json.loads(result.stdout)


def compile_job(script: str, job: dict, created: str = "2026-03-04T05:06:07") -> dict:
    """Compile ``job`` with the job type ``addon/flamenco/<script>``; fails the test on an error."""
    status, out = run_harness("compile", str(JOB_TYPES / script), stdin=json.dumps({"job": job, "created": created}))
    assert status == 0, out
    return out


def compile_error(script: str, job: dict) -> str:
    status, out = run_harness("compile", str(JOB_TYPES / script), stdin=json.dumps({"job": job}))
    assert status == 1
    return out["error"]

"""A bake killed at each of its writes leaves only files its manifest on disk proves, and resumes exactly.

A real ``mochi bake`` process ends itself with ``os._exit`` (no cleanup, as SIGKILL) at the k-th file
write of its cache, either half-way through the temporary or just after the rename: every point where
a file exists that the manifest may not have recorded yet. Then the folder must hold nothing foreign
(``engine.cache_files.survey_folder``) and ``--resume`` must end with the bytes of an uninterrupted bake.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from engine.cache import read_manifest
from engine.cache_files import survey_folder
from engine.cli.main import main

from .conftest import ROOT, refused

#: The child: ``engine.cache``'s writes die at write number KILL_AT, half-way ('half') or after ('after').
CHILD = """
import io, os, sys
import engine.cache as cache
original, count = cache.write_atomic, [0]
def dying(path, write, **options):
    count[0] += 1
    if count[0] != int(os.environ["KILL_AT"]):
        return original(path, write, **options)
    if os.environ["KILL_MODE"] == "half":
        def half(handle):
            buffer = io.BytesIO()
            write(buffer)
            handle.write(buffer.getvalue()[: len(buffer.getvalue()) // 2])
            handle.flush()
            os._exit(9)
        original(path, half, **options)
    original(path, write, **options)
    os._exit(9)
cache.write_atomic = dying
from engine.cli.main import main
sys.exit(main(sys.argv[1:]))
"""

#: Writes of frames 1 and 2: (pending manifest, frame, history, manifest) each.
WRITES = range(1, 9)


def _frames(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


@pytest.mark.parametrize("mode", ["half", "after"])
@pytest.mark.parametrize("kill_at", WRITES)
def test_killed_at_every_write_the_folder_is_proven_and_resumes_exactly(kill_at, mode, tiny_preset, tiny_bake,
                                                                         tmp_path, capsys):
    out = tmp_path / "c"
    child = subprocess.run([sys.executable, "-c", CHILD, "bake", str(tiny_preset), "--out", str(out),
                            "--no-estimate"], cwd=ROOT, capture_output=True, text=True, timeout=300,
                           env={**os.environ, "PYTHONPATH": str(ROOT), "KILL_AT": str(kill_at), "KILL_MODE": mode})
    assert child.returncode == 9, child.stderr[-2000:]
    if not (out / "manifest.json").exists():
        # Killed inside the very first manifest write: the one temporary no manifest announced.
        assert (kill_at, mode) == (1, "half")
        [left] = [p for p in out.iterdir() if p.name != ".mochi.lock.owner"]  # the lock's record is no file of it
        assert left.name.startswith(".manifest.json.tmp-")
        assert left.name in refused(capsys, "bake", tiny_preset, "--out", out, "--no-estimate")
        return
    survey = survey_folder(out, read_manifest(out))
    assert survey.foreign == [], survey.foreign
    if read_manifest(out)["frames_completed"] == 0:  # killed before frame 1 was recorded: bake again
        assert main(["bake", str(tiny_preset), "--out", str(out), "--no-estimate"]) == 0
    else:
        assert main(["bake", str(tiny_preset), "--out", str(out), "--resume", "--frames", "3"]) == 0
    assert _frames(out) == _frames(tiny_bake)
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*")) == \
        sorted(p.relative_to(tiny_bake).as_posix() for p in tiny_bake.rglob("*"))

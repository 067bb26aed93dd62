"""A tiny scene, its bake and a way to run the CLI, shared by the hostile-input tests.

Every case here is an input an attacker, a careless script or a confused user could give. Each must
end in one sentence (CLI: 'mochi: error: …' on stderr, exit status 2, no traceback) and leave nothing
behind that it was not asked to write.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main

ROOT = Path(__file__).resolve().parents[3]

TINY_PRESET = """
[scene]
name = "Tiny"
frames = 3
fps = 25

[time]
substeps = 40
stiffness = 2000.0

[domain]
lo = [0.0, 0.0, 0.0]
hi = [0.2, 0.2, 0.2]

[[materials]]
name = "grain"

[[emitters]]
type = "box"
count = 12
lo = [0.05, 0.05, 0.05]
hi = [0.15, 0.15, 0.15]
radius = 0.01
"""


@pytest.fixture(scope="session")
def tiny_preset(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("preset") / "tiny.toml"
    path.write_text(TINY_PRESET)
    return path


@pytest.fixture(scope="session")
def tiny_bake(tiny_preset, tmp_path_factory) -> Path:
    """A finished 3-frame bake of the tiny preset (copy it before changing anything)."""
    out = tmp_path_factory.mktemp("bake") / "c"
    assert main(["bake", str(tiny_preset), "--out", str(out), "--no-estimate"]) == 0
    return out


@pytest.fixture
def cache(tiny_bake, tmp_path) -> Path:
    """A private copy of the tiny bake."""
    folder = tmp_path / "c"
    shutil.copytree(tiny_bake, folder, symlinks=True)
    return folder


def snapshot(folder: Path) -> dict[str, bytes | str]:
    """Every entry under ``folder``: file bytes, link targets, 'dir' for folders."""
    out = {}
    for path in sorted(folder.rglob("*")):
        key = path.relative_to(folder).as_posix()
        if path.is_symlink():
            out[key] = "link " + os.readlink(path)
        elif path.is_dir():
            out[key] = "dir"
        elif path.is_file():
            out[key] = path.read_bytes()
        else:
            out[key] = "special"
    return out


def refused(capsys, *argv: str) -> str:
    """Run the CLI in this process; assert it refused with one sentence; return the sentence."""
    status = main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert status == 2, err
    lines = [line for line in err.splitlines() if line.startswith("mochi: error: ")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0][len("mochi: error: "):]


def run_cli(*argv: str, cwd: Path | None = None, memory_gib: float = 6.0, timeout: float = 120.0,
            env: dict | None = None) -> subprocess.CompletedProcess:
    """The CLI in a child process with bounded address space (``memory_gib``) and a hang guard."""
    limit = int(memory_gib * 2**30)

    def bound() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    return subprocess.run([sys.executable, "-m", "engine.cli.main", *map(str, argv)], cwd=cwd or ROOT,
                          capture_output=True, text=True, timeout=timeout, preexec_fn=bound,
                          env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def one_sentence(result: subprocess.CompletedProcess) -> str:
    """The refusal of a CLI child: exit 2, no traceback, one 'mochi: error:' line."""
    assert result.returncode == 2, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("mochi: error: ")]
    assert len(lines) == 1, result.stderr[-2000:]
    return lines[0][len("mochi: error: "):]

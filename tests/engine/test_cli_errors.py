"""Every bad input ends in one clear sentence and a non-zero exit, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.cli.main import main
from engine.ply import write_points

PRESETS = Path(__file__).resolve().parents[2] / "presets"


def _ply(path, positions, radius):
    positions = np.asarray(positions, np.float32).reshape(-1, 3)
    write_points(path, {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                        "radius": np.asarray(radius, np.float32)})
    return str(path)


def _error_of(argv, capsys) -> str:
    code = main(argv)
    captured = capsys.readouterr()
    assert code == 2
    lines = [line for line in captured.err.strip().splitlines() if line.startswith("mochi:")]
    assert len(lines) == 1, captured.err  # notes may precede it, but there is one error sentence
    assert lines[0].startswith("mochi: error: ") and lines[0].endswith(".")
    assert "Traceback" not in captured.err
    return lines[0]


def _preset(tmp_path, text):
    path = tmp_path / "p.toml"
    path.write_text(text)
    return str(path)


BOX = '[[emitters]]\ntype = "box"\ncount = 10\nradius = 0.01\n'


@pytest.mark.parametrize("case,expected", [
    ("missing state", "does not exist"),
    ("not a ply", "not a readable PLY"),
    ("missing radius", "lacks the vertex properties radius"),
    ("zero radius", "every radius must be positive"),
    ("negative radius", "every radius must be positive"),
    ("nan position", "NaN or infinite position"),
    ("no particles", "holds no particles"),
    ("unwritable output", "Cannot write"),
])
def test_contacts_bad_inputs(case, expected, tmp_path, capsys):
    out = str(tmp_path / "counts.npy")
    good = [[0, 0, 0], [0.01, 0, 0]]
    if case == "missing state":
        state = str(tmp_path / "nope.ply")
    elif case == "not a ply":
        state = str(tmp_path / "bad.ply")
        Path(state).write_bytes(b"this is not a ply file\n\x00\x01")
    elif case == "missing radius":
        state = str(tmp_path / "r.ply")
        write_points(state, {"x": np.zeros(2, np.float32), "y": np.zeros(2, np.float32), "z": np.zeros(2, np.float32)})
    elif case == "zero radius":
        state = _ply(tmp_path / "z.ply", good, [0.01, 0.0])
    elif case == "negative radius":
        state = _ply(tmp_path / "n.ply", good, [-0.01, 0.01])
    elif case == "nan position":
        state = _ply(tmp_path / "nan.ply", [[0, 0, 0], [np.nan, 0, 0]], [0.01, 0.01])
    elif case == "no particles":
        state = _ply(tmp_path / "e.ply", np.zeros((0, 3)), np.zeros(0))
    else:
        state = _ply(tmp_path / "ok.ply", good, [0.01, 0.01])
        blocker = tmp_path / "file"
        blocker.write_text("a file, not a folder")
        out = str(blocker / "counts.npy")
    assert expected in _error_of(["contacts", state, "--out", out], capsys)


@pytest.mark.parametrize("text,expected", [
    ("[scene]\nnmae = 'x'\n" + BOX, "[scene] has unknown key 'nmae'"),
    ("[time]\ndt = 'fast'\n" + BOX, "[time] dt must be a number or 'auto', not 'fast'"),
    ("[time]\ndt = -1e-4\n" + BOX, "[time] dt must be ≥ 1e-09, not -0.0001"),
    ("[[materials]]\nrestitution = 1.5\n" + BOX, "restitution must be ≤ 1, not 1.5"),
    ("[domain]\nopen = ['+w']\n" + BOX, "[domain] open must be a list of sides"),
    ("[scene]\nname = 'x'\n", "has no [[emitters]]"),
    ("[scene\nname = 'x'\n", "not valid TOML"),
    ('[[emitters]]\ntype = "box"\ncount = 10\nradius = 0.0\n', "radius must be > 0, not 0.0"),
    ('[[emitters]]\ntype = "box"\ncount = 10\nradius = [0.02, 0.01]\n', "0 < min ≤ max"),
    ('[[emitters]]\ntype = "box"\ncount = 10000000\nradius = 0.01\n', "holds at most"),
    ('[time]\ndt = 0.1\nstiffness = 1e6\n' + BOX, "would blow up"),
])
def test_preset_errors_name_file_and_key(text, expected, tmp_path, capsys):
    path = _preset(tmp_path, text)
    message = _error_of(["bake", path, "--out", str(tmp_path / "out")], capsys)
    assert expected in message
    if "TOML" not in expected and "blow up" not in expected and "holds at most" not in expected:
        assert path in message
    assert not (tmp_path / "out" / "frame_0001.ply").exists()


def test_unstable_dt_names_the_values(tmp_path, capsys):
    message = _error_of(["bake", _preset(tmp_path, "[time]\ndt = 0.1\nstiffness = 1e6\n" + BOX),
                         "--out", str(tmp_path / "o")], capsys)
    assert "dt = 0.1 s" in message and "1e+06 N/m" in message and "must be below" in message


def test_missing_preset_and_unwritable_cache(tmp_path, capsys):
    assert "does not exist" in _error_of(["bake", str(tmp_path / "none.toml"), "--out", str(tmp_path)], capsys)
    blocker = tmp_path / "file"
    blocker.write_text("x")
    message = _error_of(["bake", str(PRESETS / "sand_pile.toml"), "--particles", "50", "--out",
                         str(blocker / "cache")], capsys)
    assert "Cannot create the cache folder" in message


def test_bench_state_replaces_particles(tmp_path, capsys):
    state = _ply(tmp_path / "s.ply", [[0.1, 0.1, 0.1], [0.2, 0.1, 0.1], [0.3, 0.1, 0.1]], [0.01, 0.01, 0.01])
    assert main(["bench", str(PRESETS / "sand_pile.toml"), "--state", state, "--steps", "5", "--json"]) == 0
    import json

    result = json.loads(capsys.readouterr().out)
    assert result["particles"] == 3 and result["steps"] == 5
    for key in ("ms_per_step", "particle_steps_per_s", "build_ms_per_step", "detect_ms_per_step",
                "update_ms_per_step"):
        assert result[key] >= 0
    from engine.preset import load_preset

    preset = load_preset(PRESETS / "sand_pile.toml")
    assert result["physics"]["stiffness"] == preset.stiffness
    assert result["physics"]["friction"] == [m["friction"] for m in preset.materials]


def test_console_script_prints_no_traceback(tmp_path):
    result = subprocess.run([sys.executable, "-m", "engine.cli.main", "contacts", str(tmp_path / "x.ply"),
                             "--out", str(tmp_path / "c.npy")], capture_output=True, text=True)
    assert result.returncode == 2
    assert result.stderr.strip() == f"mochi: error: The file '{tmp_path / 'x.ply'}' does not exist."

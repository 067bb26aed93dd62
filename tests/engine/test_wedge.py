"""Wedges: the combinations, their presets, parallel bakes into their own folders, the contact sheet,
and the same wedge run as a Flamenco job's tasks."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.cache import read_frame, read_manifest
from engine.cli.main import main
from engine.errors import MochiError
from engine.preset import read_preset_document
from engine.wedge import expand, parse_vary, variant_preset

PRESET = Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml"
SMALL = ["--frames", "2", "--particles", "150"]


def test_vary_values_ranges_and_combinations(tmp_path):
    assert parse_vary("friction=0.3,0.5,0.7").values == (0.3, 0.5, 0.7)
    assert parse_vary("seed=1..4").values == (1, 2, 3, 4)
    variants = expand([parse_vary("friction=0.3,0.5,0.7"), parse_vary("seed=1..4")], tmp_path)
    assert len(variants) == 12
    assert variants[0].values == {"friction": 0.3, "seed": 1} and variants[1].values == {"friction": 0.3, "seed": 2}
    assert variants[0].folder == tmp_path / "friction-0.3_seed-1"
    assert variants[11].label == "friction=0.7 seed=4" and variants[11].index == 12
    assert len({v.folder for v in variants}) == 12


@pytest.mark.parametrize("text,expected", [
    ("gravity=1,2", "unknown setting 'gravity'"),
    ("friction", "must look like NAME=1,2,3"),
    ("seed=4..1", "is empty"),
    ("seed=1.5", "'1.5' is not an integer"),
    ("friction=0.1,abc", "'abc' is not a number"),
    ("friction=0.1,0.1", "lists a value twice"),
    ("friction=0.1..0.3", "must be two integers"),
])
def test_vary_errors(text, expected):
    with pytest.raises(MochiError, match=expected):
        parse_vary(text)


def test_variant_presets_are_the_preset_with_the_values(tmp_path):
    document = read_preset_document(PRESET)
    preset = variant_preset(document, str(PRESET), {"friction": 0.7, "seed": 3, "substeps": 50})
    assert [m["friction"] for m in preset.materials] == [0.7] and preset.seed == 3
    assert preset.substeps == 50 and preset.dt is None  # substeps replaces the preset's dt
    assert document["materials"][0]["friction"] == 0.4  # the document itself is unchanged
    with pytest.raises(MochiError, match=r"sand_pile.toml \[wedge friction=-1\]: \[\[materials\]\] #1 friction must be ≥ 0"):
        variant_preset(document, str(PRESET), {"friction": -1.0})


def _sheet_pixels(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    return imread(path)


def test_wedge_bakes_every_combination_in_parallel(tmp_path, capsys):
    out = tmp_path / "wedge"
    argv = ["wedge", str(PRESET), "--vary", "friction=0.2,0.6", "--vary", "seed=1..2", "--out", str(out),
            "--jobs", "2", *SMALL]
    assert main(argv) == 0
    record = json.loads((out / "wedge.json").read_text())
    assert [row["folder"] for row in record["variants"]] == ["friction-0.2_seed-1", "friction-0.2_seed-2",
                                                              "friction-0.6_seed-1", "friction-0.6_seed-2"]
    assert all(row["frames_done"] == 2 and row["error"] is None for row in record["variants"])
    firsts = {}
    for row in record["variants"]:
        manifest = read_manifest(out / row["folder"])
        assert manifest["wedge"] == row["values"] and manifest["frames_completed"] == 2
        assert manifest["physics"]["materials"][0]["friction"] == row["values"]["friction"]
        firsts[row["folder"]] = read_frame(out / row["folder"], 1)["x"]
    # The seed places the grains; friction does not.
    assert np.array_equal(firsts["friction-0.2_seed-1"], firsts["friction-0.6_seed-1"])
    assert not np.array_equal(firsts["friction-0.2_seed-1"], firsts["friction-0.2_seed-2"])
    pixels = _sheet_pixels(out / "contact_sheet.png")
    assert pixels.shape[:2] == (600, 600)  # 2 × 2 tiles of 300 px
    for tile in (pixels[:300, :300], pixels[:300, 300:], pixels[300:, :300], pixels[300:, 300:]):
        assert (tile[..., :3].sum(axis=2) < 2.0).sum() > 50  # grains drawn in every tile

    # Again without --resume: refused before anything is touched.
    frame = (out / "friction-0.2_seed-1" / "frame_0002.ply").read_bytes()
    capsys.readouterr()
    assert main(argv) == 2
    assert "already holds a bake of 2 frames; use --resume" in capsys.readouterr().err
    assert (out / "friction-0.2_seed-1" / "frame_0002.ply").read_bytes() == frame
    # --resume with more frames continues each folder.
    assert main([*argv[:-4], "--frames", "3", "--particles", "150", "--resume", "--jobs", "1", "--no-sheet"]) == 0
    assert all(read_manifest(out / row["folder"])["frames_completed"] == 3 for row in record["variants"])


def test_wedge_cli_errors(tmp_path, capsys):
    cases = [
        (["--vary", "friction=-1,0.5"], "[[materials]] #1 friction must be ≥ 0"),
        (["--vary", "friction=0.1", "--vary", "friction=0.2"], "--vary friction is given twice"),
        (["--vary", "seed=1..2", "--only", "3"], "--only 3: this wedge has combinations 1–2"),
    ]
    for extra, expected in cases:
        assert main(["wedge", str(PRESET), "--out", str(tmp_path / "w"), *extra]) == 2
        err = capsys.readouterr().err
        assert expected in err and "Traceback" not in err
    assert not (tmp_path / "w").exists()


def test_wedge_as_a_flamenco_job_runs_task_by_task(tmp_path):
    """--flamenco writes the job; its tasks, compiled by the Node stand-in of the Manager and run here
    in dependency order, bake every combination and draw the sheet."""
    from tests.farm.conftest import compile_job

    mochi = shutil.which("mochi", path=str(Path(sys.executable).parent))
    out, job_path = tmp_path / "wedge", tmp_path / "job.json"
    assert main(["wedge", str(PRESET), "--vary", "seed=1..2", "--out", str(out), *SMALL, "--flamenco", str(job_path),
                 "--flamenco-mochi", mochi, "--flamenco-worker-tag", "a1b2"]) == 0
    assert not out.exists()  # nothing baked here
    job = json.loads(job_path.read_text())
    assert (job["type"], job["worker_tag"], job["settings"]["variant_count"]) == ("mochi-wedge", "a1b2", 2)
    tasks = compile_job("mochi_wedge.js", job)["tasks"]
    done = set()
    while len(done) < len(tasks):
        ready = [t for t in tasks if t["uuid"] not in done and set(t["dependencies"]) <= done]
        assert ready, "a dependency cycle"
        for task in ready:
            (command,) = task["commands"]
            result = subprocess.run([command["parameters"]["exe"], *command["parameters"]["args"]],
                                    capture_output=True, text=True, timeout=300)
            assert result.returncode == 0, result.stderr
            done.add(task["uuid"])
    assert [read_manifest(out / f"seed-{s}")["frames_completed"] for s in (1, 2)] == [2, 2]
    assert _sheet_pixels(out / "contact_sheet.png").shape[:2] == (300, 600)

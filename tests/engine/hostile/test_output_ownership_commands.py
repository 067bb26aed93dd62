"""Issue 39 point 2, command by command: USD layers, Alembic, wedge summaries and sheets, Flamenco jobs,
packed PLYs and render previews replace only files Mochi can prove it wrote (engine.output_files).

Each refusal comes before any work: no layer exported, no bake started, no packing, no Blender.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli.main import main
from engine.output_files import RECORD_NAME

from .conftest import ROOT, refused, snapshot

USER = b"the user's own file, kept byte for byte"


def _usd():
    return pytest.importorskip("pxr")  # usd-core: installed in .venv; skipped only where it is absent


# --- mochi export --usd ----------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a_frames/frame.0002.usdc", "a_frames/frame.0001.usdc", "a_frames/manifest.usda",
                                  "a.usda"])
def test_export_refuses_a_users_file_under_a_name_it_writes_before_writing_anything(cache, tmp_path, capsys, name):
    _usd()
    out = tmp_path / "out"
    (out / "a_frames").mkdir(parents=True)
    (out / name).write_bytes(USER)
    sentence = refused(capsys, "export", cache, "--usd", out / "a.usda")
    assert f"'{out / name}' exists and Mochi cannot prove it wrote it" in sentence
    assert snapshot(out) == {"a_frames": "dir", name: USER}  # no stage, no layer, no record


def test_export_again_replaces_only_its_own_files_and_keeps_a_users_extra_layer(cache, tmp_path, capsys):
    _usd()
    stage = tmp_path / "a.usda"
    assert main(["export", str(cache), "--usd", str(stage)]) == 0
    stray = tmp_path / "a_frames" / "frame.0099.usdc"  # beyond the bake: an export would remove its own
    stray.write_bytes(USER)
    capsys.readouterr()
    assert main(["export", str(cache), "--usd", str(stage)]) == 0
    assert "(0 frame layers written, 3 already current)" in capsys.readouterr().out
    assert stray.read_bytes() == USER


def test_export_refuses_its_own_layer_edited_since(cache, tmp_path, capsys):
    _usd()
    stage = tmp_path / "a.usda"
    assert main(["export", str(cache), "--usd", str(stage)]) == 0
    layer = tmp_path / "a_frames" / "frame.0002.usdc"
    layer.write_bytes(layer.read_bytes() + b"\0")
    edited = layer.read_bytes()
    assert f"'{layer}' exists and Mochi cannot prove it wrote it" in refused(capsys, "export", cache, "--usd", stage)
    assert layer.read_bytes() == edited
    assert main(["export", str(cache), "--usd", str(stage), "--overwrite"]) == 0


def test_a_stage_of_an_earlier_mochi_without_a_record_needs_overwrite_once(cache, tmp_path, capsys):
    _usd()
    stage = tmp_path / "a.usda"
    assert main(["export", str(cache), "--usd", str(stage)]) == 0
    (tmp_path / RECORD_NAME).unlink()
    assert "cannot prove it wrote it" in refused(capsys, "export", cache, "--usd", stage)
    assert main(["export", str(cache), "--usd", str(stage), "--overwrite"]) == 0
    assert main(["export", str(cache), "--usd", str(stage)]) == 0


def test_export_through_a_stage_link_never_writes_its_target(cache, tmp_path, capsys):
    _usd()
    precious = tmp_path / "precious.usda"
    precious.write_bytes(USER)
    stage = tmp_path / "out" / "a.usda"
    stage.parent.mkdir()
    stage.symlink_to(precious)
    assert "symbolic link" in refused(capsys, "export", cache, "--usd", stage)
    assert main(["export", str(cache), "--usd", str(stage), "--overwrite"]) == 0
    assert precious.read_bytes() == USER and not stage.is_symlink()


def test_export_whose_frames_folder_name_is_a_users_file_is_refused(cache, tmp_path, capsys):
    _usd()
    (tmp_path / "a_frames").write_bytes(USER)
    assert "is a file, not a folder" in refused(capsys, "export", cache, "--usd", tmp_path / "a.usda", "--overwrite")
    assert (tmp_path / "a_frames").read_bytes() == USER and not (tmp_path / "a.usda").exists()


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_export_into_its_own_cache_folder_is_refused(cache, capsys, overwrite):
    _usd()
    before = snapshot(cache)
    assert "inside the bake folder" in refused(capsys, "export", cache, "--usd", cache / "a.usda", *overwrite)
    assert snapshot(cache) == before


def test_export_whose_frames_folder_is_the_cache_itself_is_refused(tiny_bake, tmp_path, capsys):
    """A cache named a_frames exported to a.usda beside it: the layers would land among its frames."""
    _usd()
    cache = tmp_path / "a_frames"
    shutil.copytree(tiny_bake, cache)
    before = snapshot(cache)
    sentence = refused(capsys, "export", cache, "--usd", tmp_path / "a.usda", "--overwrite")
    assert f"inside the bake folder '{cache}'" in sentence
    assert snapshot(cache) == before and not (tmp_path / "a.usda").exists()


def test_export_with_a_users_abc_is_refused_before_the_usd_export(cache, tmp_path, capsys):
    _usd()
    (tmp_path / "a.abc").write_bytes(USER)
    sentence = refused(capsys, "export", cache, "--usd", tmp_path / "a.usda", "--abc", tmp_path / "a.abc")
    assert f"'{tmp_path / 'a.abc'}' exists and Mochi cannot prove it wrote it" in sentence
    assert sorted(os.listdir(tmp_path)) == ["a.abc", "c"]


def test_two_exports_racing_to_one_stage_leave_it_whole_and_proven(cache, tmp_path):
    _usd()
    stage = tmp_path / "a.usda"
    children = [subprocess.Popen([sys.executable, "-m", "engine.cli.main", "export", str(cache), "--usd", str(stage)],
                                 cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                 env={**os.environ, "PYTHONPATH": str(ROOT)}) for _ in range(2)]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode in (0, 2) and "Traceback" not in err, err
    assert any(child.returncode == 0 for child in children)
    from pxr import Usd

    assert Usd.Stage.Open(str(stage)).GetEndTimeCode() == 3
    assert main(["export", str(cache), "--usd", str(stage)]) == 0  # every file the two wrote is proven
    assert not [p for p in tmp_path.rglob("*") if ".tmp-" in p.name]


# --- mochi wedge -----------------------------------------------------------------------------------------

def _wedge(preset: Path, out: Path, *extra: str) -> list[str]:
    return ["wedge", str(preset), "--vary", "seed=1..2", "--out", str(out), "--jobs", "1", *extra]


@pytest.mark.parametrize("name,extra", [("wedge.json", []), ("contact_sheet.png", []), ("wedge.json", ["--no-sheet"]),
                                        ("contact_sheet.png", ["--sheet-only"])])
def test_wedge_refuses_a_users_summary_or_sheet_before_any_bake(tiny_preset, tmp_path, capsys, name, extra):
    out = tmp_path / "w"
    out.mkdir()
    (out / name).write_bytes(USER)
    sentence = refused(capsys, *_wedge(tiny_preset, out, *extra))
    assert f"'{out / name}' exists and Mochi cannot prove it wrote it" in sentence
    assert snapshot(out) == {name: USER}  # no variant folder: nothing was baked


def test_wedge_leaves_a_users_sheet_alone_when_it_does_not_draw_one(tiny_preset, tmp_path, capsys):
    out = tmp_path / "w"
    out.mkdir()
    (out / "contact_sheet.png").write_bytes(USER)
    assert main(_wedge(tiny_preset, out, "--no-sheet", "--frames", "2")) == 0
    assert (out / "contact_sheet.png").read_bytes() == USER and (out / "wedge.json").is_file()


def test_wedge_redraws_its_own_sheet_and_replaces_a_users_only_with_overwrite(tiny_preset, tmp_path):
    out = tmp_path / "w"
    assert main(_wedge(tiny_preset, out, "--sheet-only")) == 0
    assert main(_wedge(tiny_preset, out, "--sheet-only")) == 0  # its own sheet: no --overwrite needed
    (out / "contact_sheet.png").write_bytes(USER)
    assert main(_wedge(tiny_preset, out, "--sheet-only")) == 2
    assert (out / "contact_sheet.png").read_bytes() == USER
    assert main(_wedge(tiny_preset, out, "--sheet-only", "--overwrite")) == 0
    assert (out / "contact_sheet.png").read_bytes()[:4] == b"\x89PNG"


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_wedge_into_a_bake_folder_is_refused(tiny_preset, cache, capsys, overwrite):
    before = snapshot(cache)
    assert "inside the bake folder" in refused(capsys, *_wedge(tiny_preset, cache, *overwrite))
    assert snapshot(cache) == before


def test_flamenco_job_file_follows_the_rule(tiny_preset, tmp_path, capsys):
    job = tmp_path / "job.json"
    job.write_bytes(USER)
    assert "cannot prove it wrote it" in refused(capsys, *_wedge(tiny_preset, tmp_path / "w", "--flamenco", job))
    assert job.read_bytes() == USER
    job.unlink()
    for _ in range(2):  # written, then replaced as its own
        assert main(_wedge(tiny_preset, tmp_path / "w", "--flamenco", str(job))) == 0
    assert b'"mochi-wedge"' in job.read_bytes()


# --- mochi pack, render-preview, export --abc: refused before packing or Blender ------------------------

@pytest.fixture
def mesh(tmp_path) -> Path:
    import trimesh

    path = tmp_path / "box.ply"
    trimesh.creation.box(extents=(0.1, 0.1, 0.1)).export(path)
    return path


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_pack_over_its_own_mesh_is_refused(mesh, capsys, overwrite):
    before = mesh.read_bytes()
    sentence = refused(capsys, "pack", mesh, "--count", "50", "--out", mesh, *overwrite)
    assert "is the input" in sentence and mesh.read_bytes() == before


def test_pack_refuses_a_users_ply_before_packing(mesh, tmp_path, capsys):
    out = tmp_path / "points.ply"
    out.write_bytes(USER)
    assert "cannot prove it wrote it" in refused(capsys, "pack", mesh, "--count", "50", "--out", out)
    assert out.read_bytes() == USER


def test_render_preview_refuses_a_users_png_before_blender_starts(cache, tmp_path, capsys):
    png = tmp_path / "preview.png"
    png.write_bytes(USER)
    assert "cannot prove it wrote it" in refused(capsys, "render-preview", cache, "--frame", "1", "--out", png)
    assert png.read_bytes() == USER


def test_render_preview_into_the_bake_folder_is_refused(cache, capsys):
    before = snapshot(cache)
    assert "inside the bake folder" in refused(capsys, "render-preview", cache, "--frame", "1", "--out",
                                               cache / "preview.png", "--overwrite")
    assert snapshot(cache) == before


def test_alembic_export_refuses_a_users_abc_before_blender_starts(cache, tmp_path, capsys):
    abc = tmp_path / "a.abc"
    abc.symlink_to(tmp_path / "elsewhere.abc")
    assert "symbolic link" in refused(capsys, "export", cache, "--abc", abc)
    assert not (tmp_path / "elsewhere.abc").exists()


def test_render_preview_replaces_its_own_png_through_blender(cache, tmp_path):
    """Blender renders to a temporary PNG that is renamed over OUT: its own preview again, a user's never."""
    import importlib.util

    from .conftest import one_sentence, run_cli

    if importlib.util.find_spec("bpy") is None:
        pytest.skip("Blender's Python module (bpy) is not installed")
    png = tmp_path / "shots" / "preview.png"
    argv = ["render-preview", cache, "--frame", "2", "--out", png, "--samples", "1", "--resolution", "16", "16"]
    for _ in range(2):
        result = run_cli(*argv, timeout=600)
        assert result.returncode == 0, result.stderr[-2000:]
    assert png.read_bytes()[:4] == b"\x89PNG"
    assert sorted(os.listdir(png.parent)) == [RECORD_NAME, "preview.png"]  # no temporary left
    png.write_bytes(USER)
    assert "cannot prove it wrote it" in one_sentence(run_cli(*argv, timeout=600))
    assert png.read_bytes() == USER

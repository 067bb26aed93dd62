"""The Flamenco job type's `eval` settings, evaluated in Blender on a scene with Mochi settings, as
Flamenco's add-on evaluates them at submission (its names: bpy, C, jobname, Path, abspath,
last_n_dir_parts, settings)."""

from __future__ import annotations

import os
from pathlib import Path
from types import SimpleNamespace

import pytest

from ..farm.conftest import compile_job
from ..farm.test_flamenco_job_types import bake_render_job
from .conftest import bpy


def flamenco_eval_names(settings) -> dict:
    """Stand-ins for the names Flamenco's add-on gives an eval (job_types_propgroup.py, locals())."""

    def abspath(path) -> Path:
        return Path(os.path.normpath(bpy.path.abspath(str(path))))

    def last_n_dir_parts(n: int, filepath=None) -> Path:
        parts = Path(bpy.path.abspath(filepath or bpy.data.filepath)).parent.parts
        return Path(*parts[-n:]) if n else Path()

    return {"bpy": bpy, "C": bpy.context, "jobname": "shot", "Path": Path, "abspath": abspath,
            "last_n_dir_parts": last_n_dir_parts, "settings": settings}


def test_bake_render_settings_evaluate_on_a_mochi_scene(mochi, small_scene, tmp_path):
    small_scene.mochi.cache_directory = "//cache"
    small_scene.mochi.backend = "cuda"
    small_scene.frame_start, small_scene.frame_end = 3, 40
    job_type = compile_job("mochi_bake_render.js", bake_render_job())["job_type"]
    names = flamenco_eval_names(SimpleNamespace(render_output_root=str(tmp_path / "renders"), add_path_components=1))
    evaluated = {s["key"]: eval(s["eval"], {}, names) for s in job_type["settings"] if "eval" in s}
    assert evaluated["frames"] == "3-40"
    assert evaluated["cache_folder"] == str(tmp_path / "cache")  # '//' resolved against the saved .blend
    assert evaluated["backend"] == "cuda"
    assert evaluated["scene"] == small_scene.name and evaluated["format"] == "PNG"
    assert evaluated["render_output_path"] == str(tmp_path / "renders" / tmp_path.name / "shot" / "{timestamp}" / "######")
    # What Blender evaluated compiles into a bake on a GPU worker and the renders after it.
    tasks = compile_job("mochi_bake_render.js", bake_render_job(**evaluated, chunk_size=20))["tasks"]
    assert [(t["name"], t["type"]) for t in tasks] == [("mochi-bake", "mochi-gpu"), ("render-3-22", "blender"),
                                                       ("render-23-40", "blender")]
    assert tasks[0]["commands"][0]["parameters"]["args"][3:5] == ["--out", str(tmp_path / "cache")]


def test_save_flamenco_job_types_operator(mochi, empty_scene, tmp_path):
    shipped = sorted((Path(mochi.__file__).parent / "addon" / "flamenco").glob("*.js"))
    assert [p.name for p in shipped] == ["mochi_bake_render.js", "mochi_wedge.js"]  # in the installed extension
    assert bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path)) == {"FINISHED"}
    for script in shipped:
        assert (tmp_path / script.name).read_bytes() == script.read_bytes()
    with pytest.raises(RuntimeError, match="Choose an existing folder"):
        bpy.ops.mochi.save_flamenco_job_types(directory=str(tmp_path / "missing"))

"""Flamenco job types: compiled under Node against the job-author API as Flamenco documents it."""

from __future__ import annotations

import pytest

from .conftest import compile_error, compile_job, run_harness

#: Flamenco's own expectations for frameChunker (internal/manager/job_compilers/js_globals_test.go).
FLAMENCO_CHUNKER_CASES = [
    ("1..10,20..25,40,3..8", 4, ["1-4", "5-8", "9,10,20,21", "22-25", "40"]),
    ("1-10,20-25,40", 4, ["1-4", "5-8", "9,10,20,21", "22-25", "40"]),
    (" 1  .. 10,\t20..25\n,40   ", 4, ["1-4", "5-8", "9,10,20,21", "22-25", "40"]),
    ("47", 4, ["47"]),
    ("1-3", 3, ["1-3"]),
]


@pytest.mark.parametrize("frames,size,expected", FLAMENCO_CHUNKER_CASES)
def test_harness_frame_chunker_matches_flamenco(frames, size, expected):
    assert run_harness("chunk", frames, str(size)) == (0, {"chunks": expected})


@pytest.mark.parametrize("frames", ["   ", " 1 10"])
def test_harness_frame_chunker_refuses_what_flamenco_refuses(frames):
    status, out = run_harness("chunk", frames, "4")
    assert status == 1 and "invalid range" in out["error"]


def bake_render_job(**settings) -> dict:
    """A job as Flamenco's Blender add-on submits it (evaluated settings filled in)."""
    values = {"frames": "1-10", "chunk_size": 4, "render_output_root": "/farm/renders", "add_path_components": 0,
              "render_output_path": "/farm/renders/shot/{timestamp}/######", "blendfile": "/farm/jobs/shot.blend",
              "cache_folder": "/farm/caches/shot", "backend": "cpu", "format": "PNG", "scene": "Scene"}
    values.update(settings)
    return {"name": "shot", "type": "mochi-bake-render", "priority": 50, "submitter_platform": "linux",
            "settings": values}


def test_bake_render_one_bake_then_chunks_that_wait_for_it():
    out = compile_job("mochi_bake_render.js", bake_render_job())
    bake, *renders = out["tasks"]
    assert (bake["name"], bake["type"]) == ("mochi-bake", "blender")
    (command,) = bake["commands"]
    assert command["name"] == "blender-render"
    assert command["parameters"]["blendfile"] == "/farm/jobs/shot.blend"
    assert command["parameters"]["args"] == ["--command", "mochi", "bake", "--out", "/farm/caches/shot",
                                             "--backend", "cpu"]
    assert [task["name"] for task in renders] == ["render-1-4", "render-5-8", "render-9,10"]
    for task, frames, count in zip(renders, ["1..4", "5..8", "9,10"], [4, 4, 2]):
        assert task["type"] == "blender" and task["dependencies"] == [bake["uuid"]]
        (render,) = task["commands"]
        args = render["parameters"]["args"]
        assert args[args.index("--render-frame") + 1] == frames
        assert args[args.index("--render-output") + 1] == "/farm/renders/shot/2026-03-04_050607/######"
        assert render["totalStepCount"] == count
    assert out["settings"]["render_output_path"] == "/farm/renders/shot/2026-03-04_050607/######"


@pytest.mark.parametrize("backend,task_type", [("cuda", "mochi-gpu"), ("optix", "mochi-gpu"), ("auto", "blender")])
def test_gpu_bakes_go_to_gpu_workers(backend, task_type):
    bake = compile_job("mochi_bake_render.js", bake_render_job(backend=backend))["tasks"][0]
    assert bake["type"] == task_type and "--backend" in bake["commands"][0]["parameters"]["args"]


def test_bake_modes():
    resume = compile_job("mochi_bake_render.js", bake_render_job(bake_mode="resume"))["tasks"][0]
    assert resume["commands"][0]["parameters"]["args"][-1] == "--resume"
    tasks = compile_job("mochi_bake_render.js", bake_render_job(bake_mode="none", chunk_size=10))["tasks"]
    assert [(t["name"], t["dependencies"]) for t in tasks] == [("render-1-10", [])]
    assert "bake_mode must be one of" in compile_error("mochi_bake_render.js", bake_render_job(bake_mode="twice"))


def test_bake_render_refuses_a_scene_without_cache_folder():
    job = bake_render_job()
    assert "no Mochi cache folder" in compile_error("mochi_bake_render.js", bake_render_job(cache_folder=""))
    del job["settings"]["cache_folder"]
    assert 'required setting "cache_folder"' in compile_error("mochi_bake_render.js", job)


def test_wedge_job_type_tasks():
    job = {"name": "w", "type": "mochi-wedge", "priority": 50, "submitter_platform": "linux",
           "settings": {"wedge_arguments": "/p/sand.toml --vary 'friction=0.3,0.5' --out '/farm/my wedge' "
                                           "--backend cuda",
                        "variant_count": 2, "backend": "cuda"}}
    tasks = compile_job("mochi_wedge.js", job)["tasks"]
    assert [(t["name"], t["type"]) for t in tasks] == [("bake-1", "mochi-gpu"), ("bake-2", "mochi-gpu"),
                                                       ("contact-sheet", "mochi")]
    first = tasks[0]["commands"][0]
    assert first["name"] == "exec" and first["parameters"]["exe"] == "mochi"  # the setting's default
    assert first["parameters"]["args"] == ["wedge", "/p/sand.toml", "--vary", "friction=0.3,0.5", "--out",
                                           "/farm/my wedge", "--backend", "cuda", "--only", "1", "--resume"]
    assert tasks[2]["dependencies"] == [tasks[0]["uuid"], tasks[1]["uuid"]]
    assert tasks[2]["commands"][0]["parameters"]["args"][-1] == "--sheet-only"
    job["settings"]["variant_count"] = 0
    assert "variant_count must be a positive integer" in compile_error("mochi_wedge.js", job)

"""Fault injection: bakes killed, run twice at once, cut short by a full disk, or resumed from damaged
files either end exactly as an uninterrupted bake or stop with one sentence and exit status 2, and
never lose or mix what is already baked. docs/reliability.md lists the cases."""

from __future__ import annotations

import json
import os
import re
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from engine.bake import bake
from engine.cache_integrity import with_manifest_digest
from engine.cache_lock import CacheLock
from engine.cli.main import main
from engine.errors import MochiError
from engine.preset import load_preset
from engine.scene import setup_from_preset

PRESETS = Path(__file__).resolve().parents[2] / "presets"
SAND = PRESETS / "sand_pile.toml"
BOWL = PRESETS / "bowl_pour.toml"
PARTICLES = "300"
FRAMES = 8


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], env=env, capture_output=True,
                          text=True, timeout=timeout)


def _popen(*args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", *args], env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def _one_sentence(stderr: str) -> str:
    """The single 'mochi: error:' line of a refused command; no traceback, no ignored exception."""
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "mochi: error:" in line]
    assert len(errors) == 1, stderr
    return errors[0].split("mochi: error: ", 1)[1]


def _frames(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}


def _all_files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _sand(friction: float, tmp: Path) -> Path:
    """The sand-pile preset with another friction, in ``tmp``."""
    text = SAND.read_text()
    assert "\nfriction = 0.4" in text
    path = tmp / f"sand_{friction}.toml"
    path.write_text(text.replace("\nfriction = 0.4", f"\nfriction = {friction}"))
    return path


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> tuple[dict[str, bytes], float]:
    """Frames of an uninterrupted CLI bake, and how long the command took [s]."""
    out = tmp_path_factory.mktemp("reference") / "c"
    began = time.perf_counter()
    result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", str(FRAMES), "--out", str(out))
    assert result.returncode == 0, result.stderr
    return _frames(out), time.perf_counter() - began


# --- kill -9 ------------------------------------------------------------------------------------------

@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_kill_at_a_random_point_then_resume_is_byte_identical(seed, reference, tmp_path):
    frames, seconds = reference
    out = tmp_path / "c"
    proc = _popen("bake", str(SAND), "--particles", PARTICLES, "--frames", str(FRAMES), "--out", str(out))
    time.sleep(random.Random(seed).uniform(0.1, 0.95 * seconds))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if (out / "manifest.json").is_file():
        result = _cli("bake", str(SAND), "--frames", str(FRAMES), "--out", str(out), "--resume")
    else:  # killed before frame 1: no bake to resume, a new one starts in the same folder
        result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", str(FRAMES), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert _frames(out) == frames
    assert not list(out.rglob(".*.tmp-*"))


def test_a_bake_killed_before_recording_frame_1_starts_again(reference, tmp_path):
    """Killed between writing frame 1 and recording it: the manifest on disk (0 frames) names frame 1 and
    its history as pending with their digests, so they are provably the killed bake's and a new bake
    replaces them; the same files named by no manifest (or a manifest without them) are someone else's
    and are refused."""
    frames, _ = reference
    out = tmp_path / "c"
    assert main(["bake", str(SAND), "--particles", PARTICLES, "--frames", "1", "--out", str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    # The state a kill leaves in that window: frame 1 in place, pending in the manifest of 0 frames.
    manifest.pop("manifest_digest")
    manifest.update(frames_completed=0, pending=manifest["file_digests"], file_digests={}, resume_history=False)
    (out / "manifest.json").write_text(json.dumps(with_manifest_digest(manifest)))
    result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", str(FRAMES), "--out", str(out))
    assert result.returncode == 0, result.stderr
    assert _frames(out) == frames
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "frame_0001.ply").write_bytes(b"someone else's file")
    result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", "2", "--out", str(foreign))
    assert result.returncode == 2
    assert "holds 'frame_0001.ply', which is not from a Mochi bake" in _one_sentence(result.stderr)
    assert (foreign / "frame_0001.ply").read_bytes() == b"someone else's file"
    # A manifest of 0 frames that does not name the frame: not provably Mochi's either.
    manifest.update(pending={})
    (foreign / "manifest.json").write_text(json.dumps(with_manifest_digest(manifest)))
    result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", "2", "--out", str(foreign))
    assert "holds 'frame_0001.ply', which is not from a Mochi bake" in _one_sentence(result.stderr)
    assert (foreign / "frame_0001.ply").read_bytes() == b"someone else's file"


# --- two bakes, one folder -----------------------------------------------------------------------------

def test_a_locked_folder_refuses_bake_resume_and_free(tmp_path, capsys):
    out = tmp_path / "c"
    assert main(["bake", str(SAND), "--particles", PARTICLES, "--frames", "2", "--out", str(out)]) == 0
    before = _all_files(out)
    with CacheLock(out):  # another bake holds it (this process, seen from a second one)
        for args in (["bake", str(SAND), "--particles", PARTICLES, "--frames", "3", "--out", str(out),
                      "--overwrite"],
                     ["bake", str(SAND), "--frames", "3", "--out", str(out), "--resume"],
                     ["free", str(out)]):
            result = _cli(*args)
            assert result.returncode == 2
            assert f"in use by process {os.getpid()} on" in _one_sentence(result.stderr)
        with pytest.raises(MochiError, match="in use by process"):  # a second bake thread (Blender) too
            bake(setup_from_preset(load_preset(SAND), particles=300), out, frames=3, overwrite=True)
    assert {k: v for k, v in _all_files(out).items() if ".mochi.lock" not in k} == \
        {k: v for k, v in before.items() if ".mochi.lock" not in k}
    assert main(["free", str(out)]) == 0  # free once the lock is released
    assert not list(out.glob("frame_*")) and not (out / "manifest.json").exists()


@pytest.mark.slow
def test_two_bakes_started_together_never_mix(tmp_path):
    """Two bakes of different physics into one folder: whatever the timing, the folder ends with one
    complete bake whose frames all come from the physics its manifest names."""
    presets = {0.4: _sand(0.4, tmp_path), 0.9: _sand(0.9, tmp_path)}
    references = {}
    for friction, preset in presets.items():
        out = tmp_path / f"ref_{friction}"
        assert main(["bake", str(preset), "--particles", PARTICLES, "--frames", "12", "--out", str(out)]) == 0
        references[friction] = _frames(out)
    shared = tmp_path / "shared"
    procs = [_popen("bake", str(preset), "--particles", PARTICLES, "--frames", "12", "--out", str(shared),
                    "--overwrite") for preset in presets.values()]
    outcomes = [(p.wait(timeout=300), p.stderr.read()) for p in procs]
    refused = [err for code, err in outcomes if code != 0]
    assert all(code in (0, 2) for code, _ in outcomes) and len(refused) <= 1
    for err in refused:
        assert "is in use by process" in _one_sentence(err)
    manifest = json.loads((shared / "manifest.json").read_text())
    friction = manifest["physics"]["materials"][0]["friction"]
    assert manifest["frames_completed"] == 12
    assert _frames(shared) == references[friction]


# --- a full disk -----------------------------------------------------------------------------------------

@pytest.fixture
def tiny_disk(small_tmpfs):
    """A 160 KiB tmpfs (a bake of 300 grains fills it within three frames); needs root."""
    return small_tmpfs("160k")


def test_full_disk_stops_with_one_sentence_and_resumes_elsewhere(tiny_disk, reference, tmp_path):
    frames, _ = reference
    out = tiny_disk / "c"
    result = _cli("bake", str(SAND), "--particles", PARTICLES, "--frames", str(FRAMES), "--out", str(out))
    assert result.returncode == 2
    assert "No space left on device" in _one_sentence(result.stderr)
    done = json.loads((out / "manifest.json").read_text())["frames_completed"]
    assert 1 <= done < FRAMES
    for name in [f"frame_{f:04d}.ply" for f in range(1, done + 1)]:
        assert (out / name).read_bytes() == frames[name]  # what the manifest lists is complete and right
    moved = tmp_path / "moved"
    shutil.copytree(out, moved)
    result = _cli("bake", str(SAND), "--frames", str(FRAMES), "--out", str(moved), "--resume")
    assert result.returncode == 0, result.stderr
    assert _frames(moved) == frames


# --- damaged cache files -----------------------------------------------------------------------------------

def _damage(path: Path, how: str) -> None:
    data = path.read_bytes()
    if how == "deleted":
        path.unlink()
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif how == "one byte flipped":
        flipped = bytearray(data)
        flipped[len(data) * 3 // 4] ^= 0x5A
        path.write_bytes(bytes(flipped))
    elif how == "garbage":
        path.write_bytes(np.random.default_rng(1).integers(0, 256, len(data), dtype=np.uint8).tobytes())


@pytest.fixture(scope="module")
def baked(tmp_path_factory) -> dict[str, Path]:
    """Two finished 5-frame bakes to damage: the sand pile (contact history) and the bowl (colliders)."""
    folders = {}
    for name, preset in (("sand", SAND), ("bowl", BOWL)):
        out = tmp_path_factory.mktemp(name) / "c"
        assert main(["bake", str(preset), "--particles", PARTICLES, "--frames", "5", "--out", str(out)]) == 0
        folders[name] = out
    return folders


FILES = [("sand", "manifest.json"), ("sand", "frame_0001.ply"), ("sand", "frame_0003.ply"),
         ("sand", "frame_0005.ply"), ("sand", ".resume/frame_0005.npz"), ("bowl", "colliders/colliders.json"),
         ("bowl", "colliders/colliders.npz")]
DAMAGE = ["deleted", "empty", "truncated", "one byte flipped", "garbage"]


def _refused_resume(folder: Path, preset: Path, capsys) -> str:
    before = _all_files(folder)
    code = main(["bake", str(preset), "--frames", "7", "--out", str(folder), "--resume"])
    captured = capsys.readouterr()
    assert code == 2, captured.err
    assert _all_files(folder) == before  # nothing written, nothing removed
    return _one_sentence(captured.err)


@pytest.mark.parametrize("bake_name,name", FILES)
@pytest.mark.parametrize("how", DAMAGE)
def test_every_damaged_file_refuses_the_resume_in_one_sentence(bake_name, name, how, baked, tmp_path, capsys):
    folder = tmp_path / "c"
    shutil.copytree(baked[bake_name], folder)
    _damage(folder / name, how)
    sentence = _refused_resume(folder, SAND if bake_name == "sand" else BOWL, capsys)
    if name != "manifest.json":  # the sentence names the file, or the frame or colliders it holds
        assert any(word in sentence.lower() for word in (Path(name).name, "frame", "collider")), sentence


MANIFEST_EDITS = {
    "frames_completed text": (lambda m: m.update(frames_completed="six"), "frames_completed = 'six'"),
    "frames_completed negative": (lambda m: m.update(frames_completed=-1), "frames_completed = -1"),
    "frames_completed too many": (lambda m: m.update(frames_completed=99), "Frame 6 of the 99"),
    # Fewer frames than the folder holds: the frames after them are listed by nobody, so not Mochi's.
    "frames_completed fewer": (lambda m: m.update(frames_completed=3), "holds 'frame_0005.ply', which is not from"),
    "frames_completed zero": (lambda m: m.update(frames_completed=0), "holds 'frame_0002.ply', which is not from"),
    "particle_count": (lambda m: m.update(particle_count=0), "particle_count = 0"),
    "dt": (lambda m: m.update(dt="fast"), "dt = 'fast'"),
    "physics edited": (lambda m: m["physics"]["materials"][0].update(friction=0.9), "were edited"),
    "physics removed": (lambda m: m.pop("physics"), "no readable physics"),
    "physics broken": (lambda m: (m.pop("physics_digest"), m["physics"].pop("materials")), "cannot be read"),
    "format version": (lambda m: m.update(format_version=3), "format version 1 or 2"),
    "frame digest": (lambda m: m["file_digests"].update({"frame_0002.ply": "0" * 64}), "frame_0002.ply' changed"),
    "inputs": (lambda m: m.update(inputs_digest="0" * 64), "The scene changed"),
    "engine": (lambda m: m.update(engine_digest="0" * 12), "another version of the engine"),
    "backend": (lambda m: m.update(backend="cuda", backend_requested="cpu"), "made with the cuda backend"),
}


@pytest.mark.parametrize("case", sorted(MANIFEST_EDITS))
@pytest.mark.parametrize("keep_digest", [True, False], ids=["signed", "unsigned"])
def test_every_damaged_manifest_value_refuses_the_resume(case, keep_digest, baked, tmp_path, capsys):
    """Any edit of a manifest is refused by its own digest; without one (a manifest written by hand, or
    by an older engine), each value is still checked on its own."""
    folder = tmp_path / "c"
    shutil.copytree(baked["sand"], folder)
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    edit, expected = MANIFEST_EDITS[case]
    edit(manifest)
    if not keep_digest:
        manifest.pop("manifest_digest")
    path.write_text(json.dumps(manifest))
    sentence = _refused_resume(folder, SAND, capsys)
    # Unsigned: the values checked on their own come first; anything else is refused for the missing digest.
    assert expected in sentence or ("was edited after the bake" if keep_digest else "no digest of its own") in sentence, \
        sentence


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"mochi"'])
def test_a_manifest_that_is_not_a_manifest_refuses(text, baked, tmp_path, capsys):
    folder = tmp_path / "c"
    shutil.copytree(baked["sand"], folder)
    (folder / "manifest.json").write_text(text)
    assert "manifest" in _refused_resume(folder, SAND, capsys)


# --- a resume that would not continue the same bake ---------------------------------------------------------

def test_resume_refuses_what_would_change_the_bake(baked, tmp_path, capsys):
    folder = tmp_path / "c"
    shutil.copytree(baked["sand"], folder)
    edited = _sand(0.9, tmp_path)
    assert "materials[0].friction 0.4 → 0.9" in _refused_resume(folder, edited, capsys)
    for extra, expected in ((["--particles", "500"], "cannot change it to 500"),
                            (["--overwrite"], "exclude each other"),
                            (["--backend", "cuda"], "")):
        code = main(["bake", str(SAND), "--frames", "7", "--out", str(folder), "--resume", *extra])
        message = _one_sentence(capsys.readouterr().err)
        assert code == 2 and expected in message
    moved = tmp_path / "elsewhere.toml"
    shutil.copy(SAND, moved)  # the same preset under another name resumes
    assert main(["bake", str(moved), "--frames", "6", "--out", str(folder), "--resume"]) == 0


@pytest.mark.parametrize("kind", ["missing folder", "not a bake", "frames without manifest"])
def test_resume_of_no_bake_refuses_and_creates_nothing(kind, tmp_path, capsys):
    folder = tmp_path / "c"
    if kind != "missing folder":
        folder.mkdir()
        for i in range(30):
            (folder / (f"frame_{i + 1:04d}.ply" if kind == "frames without manifest" else f"note_{i}.txt")).write_text("x")
    before = _all_files(folder) if folder.exists() else None
    code = main(["bake", str(SAND), "--frames", "4", "--out", str(folder), "--resume"])
    assert code == 2 and "There is no bake to resume" in _one_sentence(capsys.readouterr().err)
    assert (_all_files(folder) if folder.exists() else None) == before


# --- refusals before work -------------------------------------------------------------------------------------

@pytest.mark.parametrize("case,expected", [
    ("stiff", "steps per frame"),
    ("huge", "GiB of memory"),
    ("outside", "outside the domain"),
])
def test_refusals_before_work_leave_no_folder(case, expected, tmp_path, capsys):
    text = SAND.read_text()
    args = []
    if case == "stiff":
        text = re.sub(r"(?m)^stiffness = .*$", "stiffness = 1e12", text)
        assert "stiffness = 1e12" in text
    elif case == "huge":
        args = ["--particles", "200000000"]
    else:
        text = text.replace("lo = [0.13, 0.25, 0.13]", "lo = [0.5, 0.25, 0.5]").replace(
            "hi = [0.27, 1.0, 0.27]", "hi = [0.7, 1.0, 0.7]")
        assert "lo = [0.5, 0.25, 0.5]" in text
    preset = tmp_path / "p.toml"
    preset.write_text(text)
    out = tmp_path / "never" / "c"
    code = main(["bake", str(preset), "--frames", "3", "--out", str(out), *args])
    assert code == 2 and expected in _one_sentence(capsys.readouterr().err)
    assert not (tmp_path / "never").exists() or not any((tmp_path / "never").iterdir())


def test_budget_can_be_raised_on_purpose(tmp_path, capsys):
    setup = setup_from_preset(load_preset(SAND), particles=300)
    steps = setup.model.physics.steps_per_frame
    with pytest.raises(MochiError, match="over the budget"):
        bake(setup, tmp_path / "a", frames=2, max_steps_per_frame=steps - 1)
    assert not (tmp_path / "a").exists()
    assert bake(setup, tmp_path / "b", frames=2, max_steps_per_frame=steps).frames_done == 2


def test_failed_start_removes_the_folder_it_created(tmp_path):
    """A bake that fails after creating its folder (here: a backend that is not there) leaves nothing."""
    setup = setup_from_preset(load_preset(SAND), particles=300)
    with pytest.raises(MochiError):
        bake(setup, tmp_path / "new" / "c", frames=2, backend="no-such-backend")
    assert not (tmp_path / "new" / "c").exists()


@pytest.mark.parametrize("out,expected", [("r.jpg", "must be a .png file"), ("ro/r.png", "not writable"),
                                          ("dir.png", "is a folder")])
def test_render_preview_checks_its_output_before_rendering(out, expected, baked, tmp_path, capsys):
    (tmp_path / "ro").mkdir(mode=0o500)
    (tmp_path / "dir.png").mkdir()
    if out.startswith("ro/") and os.access(tmp_path / "ro", os.W_OK):
        pytest.skip("root writes into read-only folders")
    code = main(["render-preview", str(baked["sand"]), "--frame", "2", "--out", str(tmp_path / out)])
    assert code == 2 and expected in _one_sentence(capsys.readouterr().err)
    assert not (tmp_path / "r.png").exists()  # Blender never started (it used to render r.jpg into r.png)


# --- the process always exits ----------------------------------------------------------------------------------

HANG_PROBE = """
import sys
import bpy  # loads Blender's libtbb, so numba would pick TBB without the engine's priority
from engine.cli.main import main
import numba
code = main(sys.argv[1:])
print("threading layer:", numba.threading_layer())
sys.exit(code)
"""


@pytest.mark.slow
@pytest.mark.blender
def test_thirty_bakes_in_a_row_all_exit(tmp_path):
    pytest.importorskip("bpy")
    for index in range(30):
        out = tmp_path / f"c{index}"
        result = subprocess.run([sys.executable, "-c", HANG_PROBE, "bake", str(SAND), "--particles", "500",
                                 "--frames", "2", "--out", str(out)], capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "threading layer: tbb" not in result.stdout, result.stdout

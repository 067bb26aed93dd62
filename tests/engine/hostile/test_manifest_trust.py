"""Point 3 of issue 25: nothing read from a cache is trusted.

A manifest can be edited and re-signed (its digest has no key), so every case here re-signs it: the
refusal must come from confinement and range checks, not from the digest. Special files (FIFO,
/dev/zero, folders, links) are refused before they are opened; resume keeps the budgets of a new bake;
exports prove each frame against its digest.
"""

from __future__ import annotations

import io
import json
import os
import zipfile
from pathlib import Path

import numpy as np
import pytest

from engine.cache import read_manifest
from engine.cache_integrity import with_manifest_digest
from engine.cli.main import main

from .conftest import one_sentence, refused, run_cli, snapshot


def _edit(folder: Path, change) -> None:
    """Edit the manifest and re-sign it, as an attacker can."""
    path = folder / "manifest.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    manifest.pop("manifest_digest", None)
    path.write_text(json.dumps(with_manifest_digest(manifest)))


#: file_digests names that point outside the bake's own files.
ESCAPING_NAMES = ["../outside.ply", "/etc/shadow", "/dev/zero", ".resume/../../outside", "colliders/../../x",
                  "notes.txt", "frame_1.ply", "sub/frame_0001.ply", ".resume/fifo", "./frame_0001.ply",
                  "frame_0001.ply/../../x", "C:\\\\Windows\\\\win.ini", "frame_0001.ply\u0000"]


@pytest.mark.parametrize("name", ESCAPING_NAMES)
def test_a_manifest_naming_a_file_outside_the_bake_is_refused_before_it_is_opened(name, cache, tiny_preset, capsys):
    _edit(cache, lambda m: m["file_digests"].__setitem__(name, "0" * 64))
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert "which is not a file of a Mochi bake" in sentence


#: (manifest key, absurd value, words of the refusal).
ABSURD_VALUES = [
    ("frames_completed", 10**9, "frames_completed"), ("frames_completed", -1, "frames_completed"),
    ("frames_completed", 2.5, "frames_completed"), ("frames_completed", "3", "frames_completed"),
    ("particle_count", 2**40, "particle_count"), ("particle_count", 0, "particle_count"),
    ("steps_per_frame", 10**15, "steps_per_frame"), ("steps_per_frame", 0, "steps_per_frame"),
    ("fps", 1e300, "fps"), ("fps", 0, "fps"), ("fps", float("nan"), "fps"), ("dt", 1e5, "dt"),
    ("dt", -1e-4, "dt"), ("dt", True, "dt"), ("frame_start", -5, "frame_start"),
    ("frame_start_scene", 10**30, "frame_start_scene"), ("frame_start_scene", 1e30, "frame_start_scene"),
    ("frame_start_scene", "1", "frame_start_scene"), ("blend_file", 12, "blend_file"),
    ("blend_file", "x" * 5000, "blend_file"), ("blend_file", ["a"], "blend_file"),
    ("resume_history", "yes", "resume_history"), ("file_digests", [], "file digests"),
    ("file_digests", {"frame_0001.ply": "zz"}, "damaged digest"), ("physics", [], "physics"),
    ("scene", {"a": 1}, "scene"), ("backend", 3, "backend"),
]


@pytest.mark.parametrize("key, value, words", ABSURD_VALUES, ids=[f"{k}={str(v)[:12]}" for k, v, _ in ABSURD_VALUES])
def test_an_absurd_manifest_value_is_refused_by_every_reader(key, value, words, cache, tiny_preset, tmp_path, capsys):
    _edit(cache, lambda m: m.__setitem__(key, value))
    before = snapshot(cache)
    for argv in (["bake", tiny_preset, "--out", cache, "--resume", "--frames", "5"],
                 ["export", cache, "--usd", tmp_path / "o.usda"],
                 ["render-preview", cache, "--frame", "1", "--out", tmp_path / "r.png"]):
        sentence = refused(capsys, *argv)
        assert words in sentence, sentence
    assert snapshot(cache) == before


def test_a_resume_keeps_the_step_budget_of_a_new_bake(cache, tiny_preset, capsys):
    """10^6 steps per frame, re-signed: refused by the budget, not stepped (the bar said '14 s left')."""
    _edit(cache, lambda m: m.__setitem__("steps_per_frame", 10**6))
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert "1,000,000 steps per frame" in sentence and "over the budget" in sentence


def test_a_resume_keeps_the_memory_budget_of_a_new_bake(cache, tiny_preset, capsys):
    _edit(cache, lambda m: m.__setitem__("particle_count", 2**31 - 1))
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert "GiB of memory" in sentence


SPECIALS = {
    "fifo": lambda path: os.mkfifo(path),
    "link to /dev/zero": lambda path: os.symlink("/dev/zero", path),
    "link to a frame elsewhere": lambda path: os.symlink("/etc/hostname", path),
    "folder": lambda path: path.mkdir(),
}


@pytest.mark.parametrize("special", sorted(SPECIALS))
@pytest.mark.parametrize("victim", ["frame_0002.ply", "frame_0003.ply", ".resume/frame_0003.npz", "manifest.json"])
def test_a_special_file_in_the_cache_is_refused_within_seconds(special, victim, cache, tiny_preset, tmp_path):
    """A FIFO blocks a reader for ever and /dev/zero never ends: both are refused before opening (run in
    a child with a hang guard, so a regression fails instead of hanging the suite)."""
    (cache / victim).unlink()
    SPECIALS[special](cache / victim)
    commands = [["bake", tiny_preset, "--out", cache, "--resume", "--frames", "5"]]
    if not victim.startswith(".resume"):  # an export reads frames and the manifest, never the history
        commands.append(["export", cache, "--usd", tmp_path / "o.usda"])
    for argv in commands:
        sentence = one_sentence(run_cli(*argv, timeout=90))
        assert any(words in sentence for words in ("symbolic link", "not a regular file", "which is a folder")), \
            sentence


def _npz_claiming(path: Path, shape: tuple[int, ...]) -> None:
    """A contact-history file whose 'pair_spring' .npy header claims ``shape`` float64 but holds 80 bytes."""
    header = {"descr": "<f8", "fortran_order": False, "shape": shape}
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, header)
    with zipfile.ZipFile(path, "w") as archive:
        for name in ("pair_i", "pair_j", "wall_spring"):
            member = io.BytesIO()
            np.save(member, np.zeros(3, np.int32))
            archive.writestr(f"{name}.npy", member.getvalue())
        archive.writestr("pair_spring.npy", b"\x93NUMPY\x01\x00" + buffer.getvalue()[8:] + b"\0" * 80)


@pytest.mark.parametrize("shape", [(2_000_000_000, 3), (10**12,), (2**62, 2)])
def test_a_history_header_claiming_gigabytes_is_refused_in_bounded_memory(shape, cache, tiny_preset):
    path = cache / ".resume" / "frame_0003.npz"
    _npz_claiming(path, shape)
    import hashlib

    _edit(cache, lambda m: m["file_digests"].__setitem__(".resume/frame_0003.npz",
                                                         hashlib.sha256(path.read_bytes()).hexdigest()))
    sentence = one_sentence(run_cli("bake", tiny_preset, "--out", cache, "--resume", "--frames", "5", memory_gib=3))
    assert "claims" in sentence and "contact history" in sentence


def test_deeply_nested_manifest_json_is_one_sentence(cache, tiny_preset, capsys):
    (cache / "manifest.json").write_text("[" * 100_000 + "]" * 100_000)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume")
    assert "nested too deeply" in sentence


def test_a_huge_manifest_is_not_read(cache, tiny_preset, capsys):
    with open(cache / "manifest.json", "ab") as handle:
        handle.truncate(70 * 2**20)  # sparse: no disk used
    sentence = refused(capsys, "free", cache)
    assert "far more than a Mochi manifest" in sentence


def test_the_blend_file_the_add_on_passes_is_kept_and_exposed(tiny_preset, tmp_path):
    """Issue 25 point 2 (a): info={'blend_file': …} survives the bake, resume, and read_manifest."""
    from engine.bake import bake
    from engine.preset import load_preset
    from engine.scene import setup_from_preset

    out = tmp_path / "c"
    blend = str(tmp_path / "shot.blend")
    setup = setup_from_preset(load_preset(tiny_preset))
    bake(setup, out, frames=2, info={"blend_file": blend})
    assert read_manifest(out)["blend_file"] == blend
    bake(None, out, frames=3, resume=True)
    assert read_manifest(out)["blend_file"] == blend and read_manifest(out)["frames_completed"] == 3


# --- exports check every frame they read ---------------------------------------------------------------

def _flip_byte(path: Path, offset: int = -5) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 0xFF
    path.write_bytes(bytes(data))


DAMAGE = {
    "flipped byte": lambda p: _flip_byte(p),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:-40]),
    "emptied": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(os.urandom(500)),
}


@pytest.mark.parametrize("damage", sorted(DAMAGE))
@pytest.mark.parametrize("frame", [1, 2, 3])
def test_usd_export_refuses_a_damaged_frame(damage, frame, cache, tmp_path, capsys):
    pytest.importorskip("pxr")
    DAMAGE[damage](cache / f"frame_{frame:04d}.ply")
    sentence = refused(capsys, "export", cache, "--usd", tmp_path / "o.usda")
    assert f"Frame {frame}" in sentence and "not exported" in sentence


@pytest.mark.parametrize("frame", [1, 3])
def test_alembic_export_refuses_a_damaged_frame_before_blender_starts(frame, cache, tmp_path, capsys):
    _flip_byte(cache / f"frame_{frame:04d}.ply")
    sentence = refused(capsys, "export", cache, "--abc", tmp_path / "o.abc")
    assert f"Frame {frame}" in sentence and not (tmp_path / "o.abc").exists()


@pytest.mark.parametrize("column", ["x", "vy", "radius"])
def test_usd_export_refuses_a_nan_frame_even_with_a_matching_digest(column, cache, tmp_path, capsys):
    """A frame rewritten with NaN and its digest re-signed: the values themselves are checked."""
    pytest.importorskip("pxr")
    import hashlib

    from engine.cache import read_frame
    from engine.ply import write_points

    columns = read_frame(cache, 2)
    columns[column] = np.full_like(columns[column], np.nan)
    write_points(cache / "frame_0002.ply", columns)
    sha = hashlib.sha256((cache / "frame_0002.ply").read_bytes()).hexdigest()
    _edit(cache, lambda m: m["file_digests"].__setitem__("frame_0002.ply", sha))
    sentence = refused(capsys, "export", cache, "--usd", tmp_path / "o.usda")
    assert "non-finite" in sentence


def test_usd_export_refuses_a_frame_without_a_digest(cache, tmp_path, capsys):
    pytest.importorskip("pxr")
    _edit(cache, lambda m: m["file_digests"].pop("frame_0002.ply"))
    sentence = refused(capsys, "export", cache, "--usd", tmp_path / "o.usda")
    assert "no digest for frame 2" in sentence


def test_an_intact_cache_still_exports(cache, tmp_path):
    pytest.importorskip("pxr")
    assert main(["export", str(cache), "--usd", str(tmp_path / "o.usda")]) == 0

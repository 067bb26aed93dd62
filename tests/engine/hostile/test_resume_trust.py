"""Issue 39 points 1, 3 and 4: a resume trusts nothing it did not check, a killed bake's leftovers are
proven by the manifest that announced them, and a bake folder given through a symbolic link is used as
the folder it names, wholly.

Physics edited in a manifest are re-signed here (``physics_digest`` and ``manifest_digest`` recomputed,
as anyone can): the refusal must come from the settings schema's ranges, or from the physics the preset
resolves to now, never from a digest.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from engine.cache import read_manifest
from engine.cli.main import main
from engine.digest import digest

from .conftest import one_sentence, refused, run_cli, snapshot
from .test_manifest_trust import _edit


def _edit_physics(folder: Path, change) -> None:
    """Edit the manifest's physics, re-signing both its digest and the manifest's."""
    def edit(manifest):
        change(manifest["physics"])
        manifest["physics_digest"] = digest(manifest["physics"])
    _edit(folder, edit)


def _material(key, value):
    return lambda physics: physics["materials"][0].__setitem__(key, value)


def _domain(key, value):
    return lambda physics: physics["domain"].__setitem__(key, value)


def _top(key, value):
    return lambda physics: physics.__setitem__(key, value)


#: Physics a re-signed manifest may claim that no preset can give: (edit, words naming the setting).
OUT_OF_RANGE = {
    "youngs_modulus -1 (issue)": (_material("youngs_modulus", -1.0), "youngs_modulus"),
    "youngs_modulus 1e-300": (_material("youngs_modulus", 1e-300), "youngs_modulus"),
    "poisson_ratio NaN (issue)": (_material("poisson_ratio", float("nan")), "poisson_ratio"),
    "friction_cap bogus (issue)": (_top("friction_cap", "bogus"), "friction_cap"),
    "friction_model bogus": (_top("friction_model", "glue"), "friction_model"),
    "integrator rk4": (_top("integrator", "rk4"), "integrator"),
    "contact_normal bogus": (_top("contact_normal", "magnetic"), "contact_normal"),
    "rotation as text": (_top("rotation", "yes"), "rotation"),
    "density 1e-300": (_material("density", 1e-300), "density"),
    "density as text": (_material("density", "heavy"), "density"),
    "restitution 0": (_material("restitution", 0.0), "restitution"),
    "restitution 2": (_material("restitution", 2.0), "restitution"),
    "friction -1": (_material("friction", -1.0), "friction"),
    "friction infinite": (_material("friction", float("inf")), "friction"),
    "cohesion -5": (_material("cohesion", -5.0), "cohesion"),
    "rolling_friction NaN": (_material("rolling_friction", float("nan")), "rolling_friction"),
    "wall_friction -1": (_domain("wall_friction", -1.0), "wall_friction"),
    "wall_youngs_modulus 1e-300": (_domain("wall_youngs_modulus", 1e-300), "wall_youngs_modulus"),
    "domain corner 1e300": (_domain("hi", [1e300, 0.2, 0.2]), "lo/hi"),
    "rebuild_interval 0": (_top("rebuild_interval", 0), "rebuild_interval"),
    "seed -1": (_top("seed", -1), "seed"),
}


@pytest.mark.parametrize("case", sorted(OUT_OF_RANGE))
def test_physics_out_of_range_in_a_re_signed_manifest_refuse_the_resume(case, cache, tiny_preset, capsys):
    edit, words = OUT_OF_RANGE[case]
    _edit_physics(cache, edit)
    before = snapshot(cache)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    # The schema's range sentence ('…: materials[0] youngs_modulus must be ≥ 1000, not -1.0.'), before the
    # comparison with the preset is reached.
    assert "The physics in the cache manifest" in sentence and words in sentence and " must " in sentence, sentence
    assert snapshot(cache) == before


@pytest.mark.parametrize("case", ["youngs_modulus -1 (issue)", "poisson_ratio NaN (issue)", "friction_cap bogus (issue)",
                                  "restitution 2", "domain corner 1e300"])
def test_a_resume_without_a_scene_range_checks_the_physics_too(case, cache):
    """The add-on's Resume passes no scene (only its snapshot's fingerprint): the ranges still hold."""
    from engine.bake import bake
    from engine.errors import MochiError

    edit, words = OUT_OF_RANGE[case]
    _edit_physics(cache, edit)
    before = snapshot(cache)
    with pytest.raises(MochiError, match=" must ") as refusal:
        bake(None, cache, frames=5, resume=True)
    assert words in str(refusal.value)
    assert snapshot(cache) == before


#: Physics within range but not what the preset resolves to: (edit, the setting the refusal names).
NOT_THE_PRESETS = {
    "contact_normal hertz on a Hooke bake (issue)": (_top("contact_normal", "hertz"), "contact_normal"),
    "friction 0.5 → 0.9": (_material("friction", 0.9), "materials[0].friction"),
    "seed 0 → 7": (_top("seed", 7), "seed"),
    "gravity turned": (lambda p: p["gravity"].__setitem__("vector", [0.0, 0.0, -9.81]), "gravity.vector"),
    "friction_cap absolute": (_top("friction_cap", "absolute"), "friction_cap"),
    "stiffness doubled": (_top("stiffness", 4000.0), "stiffness"),
}


@pytest.mark.parametrize("case", sorted(NOT_THE_PRESETS))
def test_physics_that_are_not_the_presets_refuse_the_resume_naming_the_setting(case, cache, tiny_preset, capsys):
    edit, words = NOT_THE_PRESETS[case]
    _edit_physics(cache, edit)
    before = snapshot(cache)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert "not what the scene resolves to now" in sentence and words in sentence, sentence
    assert snapshot(cache) == before


@pytest.mark.parametrize("case", ["contact_normal hertz on a Hooke bake (issue)", "friction_cap bogus (issue)",
                                  "poisson_ratio NaN (issue)"])
def test_a_mochi_process_refuses_re_signed_physics_in_one_sentence(case, cache, tiny_preset):
    edit, words = {**OUT_OF_RANGE, **NOT_THE_PRESETS}[case]
    _edit_physics(cache, edit)
    sentence = one_sentence(run_cli("bake", tiny_preset, "--out", cache, "--resume", "--frames", "5"))
    assert words in sentence


def test_an_honest_resume_still_resumes(cache, tiny_preset, capsys):
    assert main(["bake", str(tiny_preset), "--out", str(cache), "--resume", "--frames", "4"]) == 0
    assert read_manifest(cache)["frames_completed"] == 4


# --- what a killed bake leaves, proven by its manifest -------------------------------------------------------

@pytest.fixture(scope="module")
def two_frames(tiny_preset, tmp_path_factory) -> Path:
    """The tiny bake stopped after frame 2: the same bake as ``tiny_bake`` (3 frames) before its frame 3."""
    out = tmp_path_factory.mktemp("two") / "c"
    assert main(["bake", str(tiny_preset), "--out", str(out), "--frames", "2", "--no-estimate"]) == 0
    return out


def _files(folder: Path) -> dict[str, bytes]:
    return {p.relative_to(folder).as_posix(): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _frames(folder: Path) -> dict[str, bytes]:
    return {k: v for k, v in _files(folder).items() if k.startswith("frame_")}


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def killed(two_frames, tmp_path) -> Path:
    folder = tmp_path / "killed"
    shutil.copytree(two_frames, folder)
    return folder


def test_frame_3_in_place_but_unrecorded_is_proven_by_pending_and_resumes_exactly(killed, tiny_bake, tiny_preset):
    """Killed after frame 3 and its history were renamed into place, before the manifest recorded them."""
    frame, history = (tiny_bake / "frame_0003.ply").read_bytes(), (tiny_bake / ".resume/frame_0003.npz").read_bytes()
    (killed / "frame_0003.ply").write_bytes(frame)
    (killed / ".resume/frame_0003.npz").write_bytes(history)
    _edit(killed, lambda m: m.update(pending={"frame_0003.ply": _sha(frame), ".resume/frame_0003.npz": _sha(history)}))
    assert main(["bake", str(tiny_preset), "--out", str(killed), "--resume", "--frames", "3"]) == 0
    assert _frames(killed) == _frames(tiny_bake)
    assert sorted(_files(killed)) == sorted(_files(tiny_bake))


def test_a_pending_file_whose_bytes_differ_is_not_the_bakes(killed, tiny_preset, capsys):
    (killed / "frame_0003.ply").write_bytes(b"the user's frame 3")
    _edit(killed, lambda m: m.update(pending={"frame_0003.ply": _sha(b"what the bake was writing")}))
    sentence = refused(capsys, "bake", tiny_preset, "--out", killed, "--resume", "--frames", "3")
    assert "holds 'frame_0003.ply', which is changed since the bake wrote it" in sentence
    assert main(["free", str(killed)]) == 0
    assert (killed / "frame_0003.ply").read_bytes() == b"the user's frame 3"


@pytest.mark.parametrize("command", ["resume", "free"])
def test_half_written_temporaries_with_the_announced_token_are_the_bakes(command, killed, tiny_bake, tiny_preset,
                                                                        capsys):
    """Killed while writing frame 3, its history and the manifest: the temporaries carry the token the
    manifest on disk announced, so they are the killed bake's; a resume removes them and ends exactly."""
    token = read_manifest(killed)["temporary_token"]
    frame = (tiny_bake / "frame_0003.ply").read_bytes()
    (killed / f".frame_0003.ply.tmp-{token}").write_bytes(frame[: len(frame) // 2])
    (killed / f".resume/.frame_0003.npz.tmp-{token}").write_bytes(b"PK\x03\x04")
    (killed / f".manifest.json.tmp-{token}").write_bytes(b'{"format": "mochi-ca')
    if command == "resume":
        assert main(["bake", str(tiny_preset), "--out", str(killed), "--resume", "--frames", "3"]) == 0
        assert _frames(killed) == _frames(tiny_bake)
        assert not [p for p in killed.rglob("*") if ".tmp-" in p.name]
    else:
        assert main(["free", str(killed)]) == 0
        assert list(killed.iterdir()) == []


@pytest.mark.parametrize("name", [".notes.txt.tmp-{token}", ".frame_0003.ply.tmp-{token}0", "frame_0003.ply.tmp-{token}",
                                  ".resume/.notes.npz.tmp-{token}", ".frame_0003.ply.tmp-{upper}"])
def test_a_temporary_name_is_proven_only_in_the_exact_shape_mochi_writes(name, killed, tiny_preset, capsys):
    token = read_manifest(killed)["temporary_token"]
    name = name.format(token=token, upper=token.upper())
    (killed / name).write_bytes(b"mine")
    assert f"holds '{name}'" in refused(capsys, "bake", tiny_preset, "--out", killed, "--resume", "--frames", "3")
    assert main(["free", str(killed)]) == 0
    assert (killed / name).read_bytes() == b"mine"


def test_a_retired_history_file_left_by_a_kill_is_proven_and_removed(killed, tiny_bake, tiny_preset, tmp_path):
    """Killed after recording frame 3, before deleting frame 2's history: that file is pending, with its
    digest, in the manifest on disk."""
    folder = tmp_path / "after"
    shutil.copytree(tiny_bake, folder)
    retired = (killed / ".resume/frame_0002.npz").read_bytes()
    (folder / ".resume/frame_0002.npz").write_bytes(retired)
    _edit(folder, lambda m: m.update(pending={".resume/frame_0002.npz": _sha(retired)}))
    assert main(["bake", str(tiny_preset), "--out", str(folder), "--resume", "--frames", "3"]) == 0
    assert not (folder / ".resume/frame_0002.npz").exists()


def test_a_bake_keeps_one_contact_history_and_announces_its_token(tiny_bake):
    manifest = read_manifest(tiny_bake)
    assert sorted(p.name for p in (tiny_bake / ".resume").iterdir()) == ["frame_0003.npz"]
    assert len(manifest["temporary_token"]) == 32 and set(manifest["pending"]) <= {".resume/frame_0002.npz"}


# --- symbolic links (point 3) -----------------------------------------------------------------------------

def test_free_through_a_link_frees_the_whole_bake(cache, tmp_path, capsys):
    """Issue: 'Freed the bake of 4 frames' but only .resume/ went."""
    link = tmp_path / "link"
    link.symlink_to(cache)
    assert main(["free", str(link)]) == 0
    assert list(cache.iterdir()) == [] and link.is_symlink()


@pytest.mark.parametrize("given", ["b", "b/.", "a/../c"])
def test_free_through_a_chain_of_links_frees_the_whole_bake(given, cache, tmp_path, capsys):
    (tmp_path / "a").symlink_to(cache)
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert main(["free", str(tmp_path / given)]) == 0
    capsys.readouterr()
    assert list(cache.iterdir()) == []


def test_overwrite_through_a_link_replaces_the_whole_old_bake(cache, tiny_preset, tmp_path):
    """Issue: bake --overwrite through a link left old frames beside the new manifest."""
    link = tmp_path / "link"
    link.symlink_to(cache)
    assert main(["bake", str(tiny_preset), "--out", str(link), "--overwrite", "--frames", "2", "--no-estimate"]) == 0
    assert sorted(p.name for p in cache.iterdir()) == [".resume", "frame_0001.ply", "frame_0002.ply", "manifest.json"]
    assert read_manifest(cache)["frames_completed"] == 2


def test_resume_through_a_link_continues_the_folder_it_names(cache, tiny_preset, tmp_path):
    link = tmp_path / "link"
    link.symlink_to(cache)
    assert main(["bake", str(tiny_preset), "--out", str(link), "--resume", "--frames", "4"]) == 0
    assert read_manifest(cache)["frames_completed"] == 4 and (cache / "frame_0004.ply").is_file()


@pytest.mark.parametrize("kind", ["to nothing", "loop"])
@pytest.mark.parametrize("command", ["free", "bake", "resume"])
def test_a_link_that_names_no_folder_is_refused(kind, command, tiny_preset, tmp_path, capsys):
    link = tmp_path / "link"
    if kind == "loop":
        (tmp_path / "other").symlink_to(link)
        link.symlink_to(tmp_path / "other")
    else:
        link.symlink_to(tmp_path / "missing")
    before = snapshot(tmp_path)
    argv = {"free": ["free", link], "bake": ["bake", tiny_preset, "--out", link, "--no-estimate"],
            "resume": ["bake", tiny_preset, "--out", link, "--resume"]}[command]
    assert "symbolic link to nothing (or a loop of links)" in refused(capsys, *argv)
    assert snapshot(tmp_path) == before


@pytest.mark.parametrize("sub", [".resume", "colliders"])
def test_a_linked_folder_inside_the_bake_is_never_followed(sub, cache, tiny_preset, tmp_path, capsys):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "frame_0003.npz").write_bytes(b"precious")
    if sub == ".resume":
        shutil.rmtree(cache / sub)
    os.symlink(elsewhere, cache / sub)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate")
    assert f"holds '{sub}', which is a symbolic link" in sentence
    assert main(["free", str(cache)]) == 0
    assert (cache / sub).is_symlink() and (elsewhere / "frame_0003.npz").read_bytes() == b"precious"


def test_a_manifest_with_a_bad_temporary_token_is_refused(cache, capsys):
    _edit(cache, lambda m: m.update(temporary_token="../../x"))
    assert "temporary_token" in refused(capsys, "free", cache)


@pytest.mark.parametrize("name", ["../outside.ply", "notes.txt", "/etc/passwd"])
def test_a_pending_name_outside_the_bake_is_refused_before_anything_is_opened(name, cache, capsys):
    _edit(cache, lambda m: m.update(pending={name: "0" * 64}))
    assert "which is not a file of a Mochi bake" in refused(capsys, "free", cache)


def test_free_refuses_a_manifest_edited_without_re_signing(cache, capsys):
    text = json.loads((cache / "manifest.json").read_text())
    text["frames_completed"] = 2
    (cache / "manifest.json").write_text(json.dumps(text))
    before = snapshot(cache)
    assert "was edited after the bake wrote it" in refused(capsys, "free", cache)
    assert snapshot(cache) == before

"""Point 1 of issue 25: Mochi deletes or overwrites only the files its own manifest lists.

A folder holding anything else is refused, naming one foreign entry, before any work; ``--overwrite``
and ``mochi free`` remove only the listed files; a refused command leaves nothing behind (no lock file,
no folder); removal is all or nothing.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from engine.cache_files import is_listed_name, remove_owned_files, survey_folder
from engine.cache import read_manifest
from engine.cli.main import main

from .conftest import refused, snapshot

#: Foreign entries a user (or another program) could have put in a cache folder, as (path, contents).
#: Contents None: a folder; 'link:TARGET': a symbolic link.
FOREIGN = {
    "user frame": ("frame_final.ply", b"mine"),
    "backup frame": ("frame_0002_backup.ply", b"mine"),
    "frame far beyond the bake": ("frame_0099.ply", b"mine"),
    "frame with five digits": ("frame_10000.ply", b"mine"),
    "frame in upper case": ("FRAME_0001.PLY", b"mine"),
    "notes": ("notes.txt", b"mine"),
    "plan in colliders": ("colliders/plan.txt", b"mine"),
    "notes in .resume": (".resume/notes.txt", b"mine"),
    "npz of another name in .resume": (".resume/state.npz", b"mine"),
    "folder": ("renders", None),
    "folder named like a frame": ("frame_0007.ply.d", None),
    "hidden file": (".DS_Store", b"mine"),
    "blend file": ("scene.blend", b"BLENDER"),
    "another manifest": ("manifest.json.bak", b"{}"),
    "temporary-looking user file": (".notes.txt.tmp-12", b"mine"),
    "link to a file": ("frame_0100.ply", "link:/etc/hostname"),
    "link named like a listed frame": ("frame_0004.ply", "link:/etc/hostname"),
    "link to a folder": ("elsewhere", "link:/tmp"),
}


def _put(folder: Path, name: str, contents) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if contents is None:
        path.mkdir()
    elif isinstance(contents, str):
        os.symlink(contents[5:], path)
    else:
        path.write_bytes(contents)


def _fresh_folder(tmp_path: Path, name: str, contents) -> Path:
    folder = tmp_path / "user"
    folder.mkdir()
    _put(folder, name, contents)
    return folder


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_a_new_bake_into_a_folder_with_a_foreign_entry_is_refused_naming_it(case, tiny_preset, tmp_path, capsys):
    name, contents = FOREIGN[case]
    folder = _fresh_folder(tmp_path, name, contents)
    before = snapshot(folder)
    sentence = refused(capsys, "bake", tiny_preset, "--out", folder, "--no-estimate")
    assert f"holds '{name}', which is " in sentence and "cannot prove it wrote" in sentence
    assert snapshot(folder) == before  # nothing written, no lock file


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_overwrite_of_a_bake_beside_a_foreign_entry_is_refused_and_changes_nothing(case, cache, tiny_preset, capsys):
    name, contents = FOREIGN[case]
    _put(cache, name, contents)
    before = snapshot(cache)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate")
    assert f"holds '{name}', which is " in sentence and "cannot prove it wrote" in sentence
    assert snapshot(cache) == before


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_resume_beside_a_foreign_entry_is_refused_and_changes_nothing(case, cache, tiny_preset, capsys):
    name, contents = FOREIGN[case]
    _put(cache, name, contents)
    before = snapshot(cache)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert f"holds '{name}', which is " in sentence and "cannot prove it wrote" in sentence
    assert snapshot(cache) == before


@pytest.mark.parametrize("case", sorted(FOREIGN))
def test_free_removes_the_listed_files_and_leaves_every_foreign_entry(case, cache, capsys):
    name, contents = FOREIGN[case]
    _put(cache, name, contents)
    foreign_before = {k: v for k, v in snapshot(cache).items() if k == name or k.startswith(name + "/")}
    assert main(["free", str(cache)]) == 0
    after = snapshot(cache)
    assert cache.is_dir()  # the folder stays
    assert {k: v for k, v in after.items() if k in foreign_before} == foreign_before
    assert not (cache / "manifest.json").exists()
    assert not {"frame_0001.ply", "frame_0002.ply", "frame_0003.ply", ".resume/frame_0003.npz"} & set(after)


def test_free_of_a_bake_leaves_the_empty_folder(cache):
    assert main(["free", str(cache)]) == 0
    assert cache.is_dir() and list(cache.iterdir()) == []


def test_overwrite_replaces_only_the_old_bake_and_keeps_the_folder(cache, tiny_preset):
    inode = cache.stat().st_ino
    assert main(["bake", str(tiny_preset), "--out", str(cache), "--overwrite", "--frames", "2", "--no-estimate"]) == 0
    assert cache.stat().st_ino == inode
    assert sorted(p.name for p in cache.iterdir()) == [".resume", "frame_0001.ply", "frame_0002.ply", "manifest.json"]
    assert read_manifest(cache)["frames_completed"] == 2


@pytest.mark.parametrize("where", ["missing", "empty", "foreign"])
def test_a_refused_command_leaves_no_lock_file_and_no_folder(where, tiny_preset, tmp_path, capsys):
    folder = tmp_path / "out"
    if where != "missing":
        folder.mkdir()
    if where == "foreign":
        (folder / "frame_final.ply").write_bytes(b"mine")
    before = snapshot(tmp_path)
    for argv in (["bake", tiny_preset, "--out", folder, "--resume"],
                 ["free", folder],
                 ["bake", tiny_preset, "--out", folder, "--frames", "0"],
                 ["bake", tiny_preset, "--out", folder, "--particles", "-3"],
                 ["bake", tiny_preset, "--out", folder, "--max-steps-per-frame", "5", "--no-estimate"]):
        refused(capsys, *argv)
        assert snapshot(tmp_path) == before
        assert not any(".mochi.lock" in k for k in snapshot(tmp_path))


@pytest.mark.parametrize("out", [".", "sub/..", "./"])
def test_a_refused_bake_into_the_working_folder_leaves_no_lock_there(out, tiny_preset, tmp_path, capsys,
                                                                     monkeypatch):
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    before = snapshot(tmp_path)
    sentence = refused(capsys, "bake", tiny_preset, "--out", out, "--no-estimate")
    assert "holds 'notes.txt', which is not from a Mochi bake" in sentence
    assert snapshot(tmp_path) == before


def test_a_lock_file_left_by_an_older_engine_does_not_make_a_user_file_mochis(tiny_preset, tmp_path, capsys):
    folder = tmp_path / "user"
    folder.mkdir()
    (folder / ".mochi.lock").write_bytes(b"")
    (folder / "frame_0001.ply").write_bytes(b"mine")  # no manifest: a user's file, lock or not
    sentence = refused(capsys, "bake", tiny_preset, "--out", folder, "--no-estimate")
    assert "holds 'frame_0001.ply'" in sentence
    assert (folder / "frame_0001.ply").read_bytes() == b"mine"


def test_a_bake_creates_no_lock_file(cache):
    assert not [p for p in cache.rglob("*") if "lock" in p.name]


@pytest.mark.parametrize("command", ["overwrite", "free"])
@pytest.mark.parametrize("listed", ["frame_0002.ply", "manifest.json", ".resume/frame_0003.npz"])
def test_a_listed_file_that_is_a_symbolic_link_is_never_followed(command, listed, cache, tiny_preset, tmp_path, capsys):
    target = tmp_path / "precious.txt"
    target.write_bytes(b"precious")
    (cache / listed).unlink()
    os.symlink(target, cache / listed)
    if command == "overwrite":
        argv = ["bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate"]
        before = snapshot(cache)
        sentence = refused(capsys, *argv)
        assert "symbolic link" in sentence and listed in sentence
        assert snapshot(cache) == before
    else:
        status = main(["free", str(cache)])
        capsys.readouterr()
        if listed == "manifest.json":
            assert status == 2  # a linked manifest is not read
        else:
            assert (cache / listed).is_symlink()  # the link stays: free removes regular files only
    assert target.read_bytes() == b"precious"


def _chattr(path: Path, flag: str) -> bool:
    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("immutable", ["frame_0001.ply", "frame_0003.ply", ".resume/frame_0003.npz", "manifest.json"])
@pytest.mark.parametrize("command", ["overwrite", "free"])
def test_a_file_that_cannot_be_removed_leaves_the_old_bake_whole(immutable, command, cache, tiny_preset, capsys):
    """All or nothing: an immutable file (chattr +i) stops the removal before anything is deleted."""
    if not _chattr(cache / immutable, "+i"):
        pytest.skip("chattr +i is not available here (needs root on a file system that has it)")
    try:
        before = snapshot(cache)
        argv = (["bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate"] if command == "overwrite"
                else ["free", cache])
        sentence = refused(capsys, *argv)
        assert "nothing of the bake" in sentence or "Cannot" in sentence
        assert snapshot(cache) == before
    finally:
        _chattr(cache / immutable, "-i")


@pytest.mark.parametrize("name, listed", [
    ("frame_0001.ply", True), (".resume/frame_0002.npz", True), ("colliders/colliders.json", True),
    ("colliders/colliders.npz", True), ("frame_123456789.ply", True),
    ("../frame_0001.ply", False), ("/etc/shadow", False), ("/tmp/frame_0001.ply", False), ("notes.txt", False),
    ("frame_1.ply", False), ("frame_0001.ply/..", False), (".resume/../../x", False), ("colliders/../x", False),
    ("colliders/plan.txt", False), (".resume/frame_0001.ply", False), ("", False), ("frame_0001.ply\0", False),
    ("sub\\frame_0001.ply", False), ("./frame_0001.ply", False), ("frame_0001.ply/", False),
    (".resume//frame_0001.npz", False), ("frame_0001.PLY", False), ("frame_-001.ply", False),
    ("frame_1234567890.ply", False),
])
def test_only_names_of_the_fixed_patterns_can_be_listed(name, listed):
    assert is_listed_name(name) is listed


def test_a_survey_proves_only_what_the_manifest_lists_with_its_bytes(cache):
    (cache / "notes.txt").write_text("x")
    (cache / "frame_0009.ply").write_text("x")
    survey = survey_folder(cache, read_manifest(cache))
    names = {p.relative_to(cache).as_posix() for p in survey.bake}
    assert names == {"manifest.json", "frame_0001.ply", "frame_0002.ply", "frame_0003.ply", ".resume/frame_0003.npz"}
    assert [name for name, _ in survey.foreign] == ["frame_0009.ply", "notes.txt"] and not survey.leftovers


def test_removal_leaves_a_non_empty_resume_folder(cache):
    (cache / ".resume" / "mine.txt").write_text("x")
    remove_owned_files(cache, read_manifest(cache))
    assert (cache / ".resume" / "mine.txt").read_text() == "x"


def test_a_bake_that_dies_before_frame_1_removes_only_what_it_made(tiny_preset, tmp_path, capsys):
    """A folder the bake created is removed again; a folder that existed (empty) stays."""
    stiff = tmp_path / "stiff.toml"
    stiff.write_text(tiny_preset.read_text().replace("stiffness = 2000.0", "stiffness = 1.0e12").replace(
        "substeps = 40", 'dt = "auto"'))
    made = tmp_path / "new"
    refused(capsys, "bake", stiff, "--out", made, "--no-estimate")
    assert not made.exists()
    existing = tmp_path / "existing"
    existing.mkdir()
    refused(capsys, "bake", stiff, "--out", existing, "--no-estimate")
    assert existing.is_dir() and list(existing.iterdir()) == []


def test_a_foreign_folder_is_refused_before_packing_or_the_timing_probe(tiny_preset, tmp_path):
    """'Before any work': the CLI looks at the folder before it packs the scene or times a few steps."""
    from .conftest import one_sentence, run_cli

    folder = tmp_path / "user"
    folder.mkdir()
    (folder / "frame_final.ply").write_bytes(b"mine")
    result = run_cli("bake", tiny_preset, "--out", folder)
    assert "frame_final.ply" in one_sentence(result)
    assert "Timing a few steps" not in result.stderr and "particles" not in result.stderr

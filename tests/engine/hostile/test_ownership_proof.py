"""Issue 39 point 1: a file is Mochi's only when its manifest lists it by exact name and its bytes match
the digest recorded there; a killed bake's temporaries only by the token its manifest announced.

The cases are the files other programs leave in folders people share (a network drive, Dropbox, a
backup tool, an editor, a farm node, a second Blender), the issue's own cases, and manifests that try to
claim what is not theirs. Each: ``mochi free`` removes the bake and leaves the file byte for byte;
``--overwrite`` and ``--resume`` are refused naming it, before any work, changing nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from engine.cache import read_manifest
from engine.cli.main import main

from .conftest import refused, snapshot
from .test_manifest_trust import _edit

TOKEN_OTHER = "0123456789abcdef" * 2

#: What other programs leave in a shared cache folder: name → bytes (None: a folder with a file in it).
USER_FILES = {
    "dropbox conflict copy of a frame": ("frame_0003 (1).ply", b"ply\nmine"),
    "dropbox conflicted copy": ("frame_0003 (conflicted copy 2026-11-27).ply", b"ply\nmine"),
    "conflict copy of the manifest": ("manifest (1).json", b"{}"),
    "conflict copy of a history file": (".resume/frame_0003 (1).npz", b"PK"),
    "backup tool .bak": ("frame_0002.ply.bak", b"mine"),
    "editor backup ~": ("frame_0002.ply~", b"mine"),
    "manifest backup ~": ("manifest.json~", b"{}"),
    "backup tool .tmp": ("frame_0002.tmp", b"mine"),
    "vim swap of the manifest": (".manifest.json.swp", b"b0VIM"),
    "vim swap of a frame": (".frame_0001.ply.swp", b"b0VIM"),
    "vim write probe": ("4913", b""),
    "LibreOffice lock": (".~lock.manifest.json#", b"user"),
    "Office owner file": ("~$manifest.json", b"user"),
    "Windows thumbnails": ("Thumbs.db", b"\xd0\xcf"),
    "Windows desktop.ini": ("desktop.ini", b"[.ShellClassInfo]"),
    "macOS AppleDouble": ("._frame_0001.ply", b"\x00\x05\x16\x07"),
    "macOS DS_Store in .resume": (".resume/.DS_Store", b"Bud1"),
    "NFS silly rename": (".nfs0000000000a1b2c300000001", b"mine"),
    "Syncthing temporary": (".syncthing.frame_0002.ply.tmp", b"mine"),
    "FUSE hidden file": (".fuse_hidden0000000100000001", b"mine"),
    "browser partial download": ("frame_0004.ply.part", b"mine"),
    "rsync partial": (".frame_0004.ply.Xy12Ab", b"mine"),
    "frame in another case": ("Frame_0002.ply", b"mine"),
    "frame with an upper-case extension": ("frame_0002.PLY", b"mine"),
    "the next frame (issue: frame_0005 of a 4-frame bake)": ("frame_0004.ply", b"mine"),
    "a frame far ahead": ("frame_0500.ply", b"mine"),
    "history of a later frame (issue)": (".resume/frame_0009.npz", b"mine"),
    "history of an earlier frame": (".resume/frame_0001.npz", b"mine"),
    "colliders.json in a bake without colliders (issue)": ("colliders/colliders.json", b"{}"),
    "colliders.npz in a bake without colliders": ("colliders/colliders.npz", b"PK"),
    "backup of colliders.json": ("colliders/colliders.json.bak", b"{}"),
    "old-style temporary of a frame": (".frame_0002.ply.tmp-99", b"mine"),
    "old-style removal temporary (issue)": (".frame_0002.ply.tmp-del-99", b"mine"),
    "old-style manifest temporary (issue)": (".manifest.json.tmp-123", b"mine"),
    "temporary with another bake's token": (f".frame_0004.ply.tmp-{TOKEN_OTHER}", b"mine"),
    "history temporary with another token": (f".resume/.frame_0004.npz.tmp-{TOKEN_OTHER}", b"mine"),
    "removal folder of another process": (f".mochi-removing-{TOKEN_OTHER}", None),
    "trash folder": (".Trash-1000", None),
    "Synology index folder": ("@eaDir", None),
    "NetApp snapshot folder": (".snapshot", None),
    "a user's .mochi.lock.owner": (".mochi.lock.owner", b"my notes"),
    "a .mochi.lock that is not empty": (".mochi.lock", b"mine"),
    "an owner-record temporary holding other bytes": (f"..mochi.lock.owner.tmp-{TOKEN_OTHER}", b"my notes"),
    "a frame-named folder": ("frame_0004.ply", None),
}


def put(folder: Path, name: str, contents: bytes | None) -> None:
    """Create ``name`` in ``folder``: a file of ``contents``, or (None) a folder holding 'mine.txt'."""
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if contents is None:
        path.mkdir()
        (path / "mine.txt").write_bytes(b"mine")
    else:
        path.write_bytes(contents)


def _entry(folder: Path, name: str) -> dict:
    return {k: v for k, v in snapshot(folder).items() if k == name or k.startswith(name + "/")}


@pytest.mark.parametrize("case", sorted(USER_FILES))
def test_free_removes_the_bake_and_keeps_the_user_file(case, cache, capsys):
    name, contents = USER_FILES[case]
    put(cache, name, contents)
    before = _entry(cache, name)
    assert main(["free", str(cache)]) == 0
    out = capsys.readouterr().out
    assert _entry(cache, name) == before
    assert f"'{name.split('/')[0] if contents is None else name}'" in out and "cannot prove it wrote" in out
    left = {k for k in snapshot(cache) if k not in before}
    assert left <= {".resume", "colliders"}, left  # a folder holding the user's file stays


@pytest.mark.parametrize("case", sorted(USER_FILES))
@pytest.mark.parametrize("command", ["overwrite", "resume"])
def test_overwrite_and_resume_beside_a_user_file_are_refused_naming_it(command, case, cache, tiny_preset, capsys):
    name, contents = USER_FILES[case]
    put(cache, name, contents)
    before = snapshot(cache)
    extra = ["--overwrite", "--no-estimate"] if command == "overwrite" else ["--resume", "--frames", "6"]
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, *extra)
    assert f"holds '{name}'" in sentence and "cannot prove it wrote" in sentence, sentence
    assert snapshot(cache) == before


# --- listed names whose bytes are not the bake's ------------------------------------------------------------

@pytest.mark.parametrize("listed", ["frame_0001.ply", "frame_0003.ply", ".resume/frame_0003.npz"])
def test_a_listed_file_replaced_by_the_users_own_stays(listed, cache, tiny_preset, capsys):
    """A user saved their own file under a listed name: its bytes are not the digest's, so it is not
    Mochi's: free keeps it (and says so), overwrite names it as changed."""
    (cache / listed).write_bytes(b"the user's own work")
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate")
    assert f"holds '{listed}', which is changed since the bake wrote it" in sentence
    assert main(["free", str(cache)]) == 0
    assert listed in capsys.readouterr().out
    assert (cache / listed).read_bytes() == b"the user's own work"
    assert not (cache / "manifest.json").exists()


def test_a_hand_written_manifest_of_50_frames_claims_none_of_the_users_frames(tmp_path, capsys):
    """Issue: a manifest without its own digest, in a folder of the user's frame_0001..0050.ply."""
    folder = tmp_path / "d"
    folder.mkdir()
    for frame in range(1, 51):
        (folder / f"frame_{frame:04d}.ply").write_bytes(f"user frame {frame}".encode())
    manifest = {"format": "mochi-cache", "format_version": 2, "frames_completed": 50, "particle_count": 1,
                "steps_per_frame": 1, "frame_start": 1, "fps": 25, "dt": 0.01, "physics": {}, "file_digests": {}}
    (folder / "manifest.json").write_text(json.dumps(manifest))
    before = snapshot(folder)
    sentence = refused(capsys, "free", folder)
    assert "no digest of its own" in sentence
    assert snapshot(folder) == before


def test_a_re_signed_manifest_of_1048574_frames_deletes_no_user_frame(cache, capsys):
    """Issue: re-signed frames_completed = 1048574 beside the user's frame_0500.ply and frame_1048575.ply."""
    put(cache, "frame_0500.ply", b"user 500")
    put(cache, "frame_1048575.ply", b"user 1048575")
    _edit(cache, lambda m: m.update(frames_completed=1_048_574))
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert (cache / "frame_0500.ply").read_bytes() == b"user 500"
    assert (cache / "frame_1048575.ply").read_bytes() == b"user 1048575"


@pytest.mark.parametrize("key", ["file_digests", "pending"])
def test_a_re_signed_manifest_naming_a_user_file_with_a_guessed_digest_deletes_nothing(key, cache, capsys):
    put(cache, "frame_0500.ply", b"user 500")
    _edit(cache, lambda m: m.setdefault(key, {}).update({"frame_0500.ply": "ab" * 32}))
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert (cache / "frame_0500.ply").read_bytes() == b"user 500"


def test_a_forged_manifest_can_only_name_files_whose_bytes_the_forger_knows(cache, capsys):
    """The documented limit: the digest has no key, so a forger who knows a file's exact bytes can list it.
    What is removed then is exactly those bytes, a copy of what the forger holds."""
    put(cache, "frame_0500.ply", b"bytes the forger has")
    sha = hashlib.sha256(b"bytes the forger has").hexdigest()
    _edit(cache, lambda m: m["file_digests"].update({"frame_0500.ply": sha}))
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert not (cache / "frame_0500.ply").exists()


@pytest.mark.parametrize("command", ["free", "resume", "overwrite"])
def test_a_manifest_listing_a_name_twice_is_refused(command, cache, tiny_preset, capsys):
    text = (cache / "manifest.json").read_text()
    sha = read_manifest(cache)["file_digests"]["frame_0002.ply"]
    doubled = text.replace(f'"frame_0002.ply": "{sha}"', f'"frame_0002.ply": "{"0" * 64}", "frame_0002.ply": "{sha}"')
    assert doubled != text
    (cache / "manifest.json").write_text(doubled)
    before = snapshot(cache)
    argv = {"free": ["free", cache], "resume": ["bake", tiny_preset, "--out", cache, "--resume", "--frames", "5"],
            "overwrite": ["bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate"]}[command]
    assert "'frame_0002.ply' is given twice" in refused(capsys, *argv)
    assert snapshot(cache) == before


# --- hard links, folders, immutable files ----------------------------------------------------------------

def test_a_hard_link_to_a_frame_outside_the_folder_keeps_its_bytes(cache, tiny_preset, tmp_path, capsys):
    keep = tmp_path / "kept_frame.ply"
    os.link(cache / "frame_0002.ply", keep)
    original = keep.read_bytes()
    assert main(["bake", str(tiny_preset), "--out", str(cache), "--overwrite", "--frames", "2",
                 "--no-estimate"]) == 0
    assert keep.read_bytes() == original  # frames are replaced by rename, never written in place
    assert main(["free", str(cache)]) == 0
    assert keep.read_bytes() == original


def test_a_hard_link_to_a_frame_inside_the_folder_is_the_users(cache, tiny_preset, capsys):
    os.link(cache / "frame_0002.ply", cache / "mine.ply")
    original = (cache / "mine.ply").read_bytes()
    assert "holds 'mine.ply'" in refused(capsys, "bake", tiny_preset, "--out", cache, "--overwrite", "--no-estimate")
    assert main(["free", str(cache)]) == 0
    assert (cache / "mine.ply").read_bytes() == original and not (cache / "frame_0002.ply").exists()


@pytest.mark.parametrize("victim", ["frame_0002.ply", ".resume/frame_0003.npz"])
def test_a_listed_file_replaced_by_a_folder_is_kept_with_its_contents(victim, cache, tiny_preset, capsys):
    (cache / victim).unlink()
    put(cache, victim, None)
    sentence = refused(capsys, "bake", tiny_preset, "--out", cache, "--resume", "--frames", "5")
    assert f"holds '{victim}', which is a folder" in sentence
    assert main(["free", str(cache)]) == 0
    assert (cache / victim / "mine.txt").read_bytes() == b"mine"


def _chattr(path: Path, flag: str) -> bool:
    import subprocess

    try:
        return subprocess.run(["chattr", flag, str(path)], capture_output=True).returncode == 0
    except FileNotFoundError:
        return False


@pytest.mark.parametrize("command", ["free", "overwrite"])
def test_an_immutable_frame_is_the_file_the_refusal_names(command, cache, tiny_preset, capsys):
    """Issue (decided): the sentence names the frame that could not be removed, not the last file put back."""
    if not _chattr(cache / "frame_0003.ply", "+i"):
        pytest.skip("chattr +i is not available here (needs root on a file system that has it)")
    try:
        before = snapshot(cache)
        argv = ["free", cache] if command == "free" else ["bake", tiny_preset, "--out", cache, "--overwrite",
                                                          "--no-estimate"]
        sentence = refused(capsys, *argv)
        assert f"Cannot remove '{cache / 'frame_0003.ply'}' (Operation not permitted)" in sentence, sentence
        assert snapshot(cache) == before
    finally:
        _chattr(cache / "frame_0003.ply", "-i")


# --- the lock's owner record ----------------------------------------------------------------------------

def test_a_stale_owner_record_of_a_killed_bake_does_not_block_the_folder(cache, capsys):
    record = {"format": "mochi-lock-owner", "pid": 999999, "host": "farm-node-7", "program": "mochi bake",
              "since": 0.0, "action": "bake"}
    (cache / ".mochi.lock.owner").write_text(json.dumps(record))
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert list(cache.iterdir()) == []  # replaced by this free's own record, which went with the lock


def test_a_users_owner_file_is_neither_replaced_nor_removed(cache, capsys):
    (cache / ".mochi.lock.owner").write_bytes(b"my notes")
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert (cache / ".mochi.lock.owner").read_bytes() == b"my notes"


@pytest.mark.parametrize("contents", [b"", b'{"format": "mochi-lock-owner", "pi',
                                      b'{"format": "mochi-lock-owner", "pid": 12, "host": "n"'])
def test_the_temporary_of_an_owner_record_a_killed_holder_left_is_the_locks(contents, cache, capsys):
    """Killed while writing its owner record, a holder leaves '..mochi.lock.owner.tmp-TOKEN' holding the start
    of a record: proven by its contents, it neither blocks the folder nor stays after the next lock."""
    name = f"..mochi.lock.owner.tmp-{TOKEN_OTHER}"
    (cache / name).write_bytes(contents)
    assert main(["free", str(cache)]) == 0
    capsys.readouterr()
    assert list(cache.iterdir()) == []

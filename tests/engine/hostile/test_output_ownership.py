"""Issue 39 point 2: a file Mochi writes outside a bake folder replaces only a file Mochi can prove it wrote.

The generic cases run ``mochi contacts STATE --out OUT`` (the quickest command with an output); each
command's own outputs are in test_output_ownership_commands.py. Every refusal is one sentence, exit
status 2, before any work, and leaves every file as it was.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from engine.cli.main import main
from engine.output_files import RECORD_NAME, plan_outputs

from .conftest import ROOT, refused, snapshot

USER = b"the user's own file, kept byte for byte"


@pytest.fixture
def state(tiny_bake, tmp_path) -> Path:
    """A PLY state outside any bake folder (frame 1 of the tiny bake)."""
    path = tmp_path / "in" / "state.ply"
    path.parent.mkdir()
    shutil.copyfile(tiny_bake / "frame_0001.ply", path)
    return path


@pytest.fixture
def out(tmp_path) -> Path:
    folder = tmp_path / "shared"
    folder.mkdir()
    return folder / "counts.npy"


def _contacts(state: Path, out: Path, *extra: str) -> int:
    return main(["contacts", str(state), "--out", str(out), *map(str, extra)])


def _line(name: str, sha256: str, check: str | None = None) -> str:
    """A record line as Mochi writes it (``check`` forged when given)."""
    real = hashlib.sha256(f"mochi output\0{name}\0{sha256}".encode()).hexdigest()
    return json.dumps({"name": name, "sha256": sha256, "check": check or real}) + "\n"


def _record(folder: Path, *lines: str) -> Path:
    path = folder / RECORD_NAME
    path.write_text('{"mochi_output_record": 1}\n' + "".join(lines))
    return path


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- the rule itself ------------------------------------------------------------------------------------

def test_a_users_file_is_refused_before_any_counting_and_kept(state, out, capsys):
    out.write_bytes(USER)
    sentence = refused(capsys, "contacts", state, "--out", out)
    assert f"'{out}' exists and Mochi cannot prove it wrote it" in sentence and "--overwrite" in sentence
    assert out.read_bytes() == USER and sorted(os.listdir(out.parent)) == ["counts.npy"]


def test_a_rerun_replaces_its_own_output_without_overwrite(state, out):
    assert _contacts(state, out) == 0
    first = out.read_bytes()
    assert _contacts(state, out) == 0
    assert out.read_bytes() == first and np.load(out).dtype == np.int32
    assert sorted(os.listdir(out.parent)) == [RECORD_NAME, "counts.npy"]


def test_its_own_output_edited_since_is_refused(state, out, capsys):
    assert _contacts(state, out) == 0
    out.write_bytes(out.read_bytes() + b"\0")  # the user appended to it
    edited = out.read_bytes()
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)
    assert out.read_bytes() == edited


def test_overwrite_replaces_a_users_file(state, out):
    out.write_bytes(USER)
    assert _contacts(state, out, "--overwrite") == 0
    assert np.load(out).shape == (12,)


def test_a_users_file_of_the_same_bytes_as_another_output_is_still_refused(state, out, capsys):
    """The record proves bytes under a name: another name with those bytes is not proven."""
    other = out.with_name("other.npy")
    assert _contacts(state, other) == 0
    shutil.copyfile(other, out)
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)


@pytest.mark.parametrize("target", ["file", "dangling", "input"])
def test_a_symbolic_link_at_the_output_is_refused_and_never_written_through(state, out, tmp_path, capsys, target):
    precious = tmp_path / "precious.npy"
    precious.write_bytes(USER)
    out.symlink_to({"file": precious, "dangling": tmp_path / "nothing.npy", "input": state}[target])
    sentence = refused(capsys, "contacts", state, "--out", out)
    assert ("symbolic link" in sentence) if target != "input" else ("is the input" in sentence)
    assert precious.read_bytes() == USER and not (tmp_path / "nothing.npy").exists() and out.is_symlink()


def test_overwrite_replaces_the_link_itself_never_its_target(state, out, tmp_path):
    precious = tmp_path / "precious.npy"
    precious.write_bytes(USER)
    out.symlink_to(precious)
    assert _contacts(state, out, "--overwrite") == 0
    assert not out.is_symlink() and np.load(out).shape == (12,)
    assert precious.read_bytes() == USER


def test_a_hard_link_to_a_users_file_is_refused(state, out, tmp_path, capsys):
    precious = tmp_path / "precious.npy"
    precious.write_bytes(USER)
    os.link(precious, out)
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)
    assert precious.read_bytes() == USER


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_folder_where_the_file_should_be_is_refused_even_with_overwrite(state, out, capsys, overwrite):
    out.mkdir()
    (out / "inside.txt").write_bytes(USER)
    assert "is a folder where Mochi would write a file" in refused(capsys, "contacts", state, "--out", out, *overwrite)
    assert (out / "inside.txt").read_bytes() == USER


@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_a_fifo_at_the_output_is_refused_without_blocking(state, out, capsys, overwrite):
    os.mkfifo(out)
    assert "not a regular file" in refused(capsys, "contacts", state, "--out", out, *overwrite)


def test_a_read_only_output_of_its_own_needs_overwrite(state, out, capsys):
    assert _contacts(state, out) == 0
    out.chmod(0o444)
    assert "is read-only" in refused(capsys, "contacts", state, "--out", out)
    assert _contacts(state, out, "--overwrite") == 0


def test_an_output_under_a_file_is_refused(state, tmp_path, capsys):
    (tmp_path / "notes.txt").write_bytes(USER)
    assert "is a file, not a folder" in refused(capsys, "contacts", state, "--out", tmp_path / "notes.txt" / "c.npy")
    assert (tmp_path / "notes.txt").read_bytes() == USER


@pytest.mark.parametrize("where", [".", ".resume", "colliders"])
@pytest.mark.parametrize("overwrite", [[], ["--overwrite"]])
def test_an_output_inside_a_bake_folder_is_refused_and_the_bake_unchanged(state, cache, capsys, where, overwrite):
    (cache / where).mkdir(exist_ok=True)
    before = snapshot(cache)
    sentence = refused(capsys, "contacts", state, "--out", cache / where / "counts.npy", *overwrite)
    assert f"inside the bake folder '{cache}'" in sentence
    assert snapshot(cache) == before


def test_an_output_over_a_frame_of_its_own_bake_is_refused(cache, capsys):
    """Output == input: `contacts` of a frame written over that frame's bake folder."""
    before = snapshot(cache)
    sentence = refused(capsys, "contacts", cache / "frame_0002.ply", "--out", cache / "frame_0002.npy", "--overwrite")
    assert "inside the bake folder" in sentence and snapshot(cache) == before


# --- the record ---------------------------------------------------------------------------------------

def test_the_record_proves_each_file_by_name_and_digest(state, out):
    assert _contacts(state, out) == 0
    lines = (out.parent / RECORD_NAME).read_text().splitlines()
    assert lines[0] == '{"mochi_output_record": 1}'
    entry = json.loads(lines[1])
    assert entry["name"] == "counts.npy" and entry["sha256"] == _sha(out)
    assert plan_outputs([out]).proves(out)


@pytest.mark.parametrize("forgery", ["bad check", "digest of other bytes", "another name", "a path",
                                     "../ path", "not JSON", "a list"])
def test_a_forged_or_damaged_record_line_proves_nothing(state, out, capsys, forgery):
    out.write_bytes(USER)
    sha = _sha(out)
    line = {"bad check": _line("counts.npy", sha, check="0" * 64),
            "digest of other bytes": _line("counts.npy", "1" * 64),
            "another name": _line("COUNTS.npy", sha),
            "a path": _line("shared/counts.npy", sha),
            "../ path": _line("../shared/counts.npy", sha),
            "not JSON": '{"name": "counts.npy", "sha256": "' + sha,
            "a list": json.dumps(["counts.npy", sha]) + "\n"}[forgery]
    record = _record(out.parent, line)
    before = record.read_bytes()
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)
    assert out.read_bytes() == USER and record.read_bytes() == before


def test_a_record_line_naming_a_file_elsewhere_never_reaches_it(state, tmp_path, capsys):
    """sub/'s record names '../x.npy' with x.npy's true digest: x.npy is still not Mochi's."""
    victim = tmp_path / "x.npy"
    victim.write_bytes(USER)
    (tmp_path / "sub").mkdir()
    _record(tmp_path / "sub", _line("../x.npy", _sha(victim)))
    for target in (victim, tmp_path / "sub" / ".." / "x.npy"):
        assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", target)
    assert victim.read_bytes() == USER


def test_a_forged_line_with_the_true_digest_is_trusted_as_documented(state, out):
    """Anyone can write a record; a forger who knows the file's bytes can claim it (docs/reliability.md)."""
    out.write_bytes(USER)
    _record(out.parent, _line("counts.npy", _sha(out)))
    assert _contacts(state, out) == 0 and np.load(out).shape == (12,)


@pytest.mark.parametrize("kind", ["user file", "link to a user file", "folder", "too large"])
def test_a_record_name_taken_by_something_else_is_refused_naming_it(state, out, tmp_path, capsys, kind):
    record = out.parent / RECORD_NAME
    precious = tmp_path / "precious.txt"
    precious.write_bytes(USER)
    if kind == "user file":
        record.write_bytes(USER)
    elif kind == "link to a user file":
        record.symlink_to(precious)
    elif kind == "folder":
        record.mkdir()
    else:
        with open(record, "wb") as handle:  # sparse: 70 MiB that are never read
            handle.write(b'{"mochi_output_record": 1}\n')
            handle.truncate(70 * 2**20)
    before = snapshot(out.parent)
    sentence = refused(capsys, "contacts", state, "--out", out)  # a new file: the record would be appended to
    assert f"'{record}' is not a record of Mochi's outputs" in sentence
    assert snapshot(out.parent) == before and precious.read_bytes() == USER


def test_overwrite_replaces_a_foreign_record_never_its_link_target(state, out, tmp_path):
    precious = tmp_path / "precious.txt"
    precious.write_bytes(USER)
    (out.parent / RECORD_NAME).symlink_to(precious)
    assert _contacts(state, out, "--overwrite") == 0
    assert precious.read_bytes() == USER and not (out.parent / RECORD_NAME).is_symlink()
    assert _contacts(state, out) == 0  # the new record proves the file


def test_a_torn_last_line_leaves_the_earlier_proofs(state, out):
    """A process killed while appending leaves half a line; the lines before it still prove their files."""
    assert _contacts(state, out) == 0
    with open(out.parent / RECORD_NAME, "ab") as handle:
        handle.write(b'{"name": "counts.npy", "sha256": "ab')
    assert _contacts(state, out) == 0


def test_a_record_cut_inside_its_header_proves_nothing(state, out, capsys):
    out.write_bytes(USER)
    (out.parent / RECORD_NAME).write_bytes(b'{"mochi_output')
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)


def test_a_deleted_record_makes_its_files_need_overwrite(state, out, capsys):
    assert _contacts(state, out) == 0
    (out.parent / RECORD_NAME).unlink()
    assert "cannot prove it wrote it" in refused(capsys, "contacts", state, "--out", out)


def test_a_record_copied_with_its_folder_still_proves_the_copies(state, out, tmp_path):
    """A folder copied to a network drive or a farm node keeps its record: a re-run there replaces its files."""
    assert _contacts(state, out) == 0
    copy = tmp_path / "mounted"
    shutil.copytree(out.parent, copy)
    assert _contacts(state, copy / "counts.npy") == 0


# --- temporaries, other programs, races ------------------------------------------------------------------

def test_temporary_looking_files_of_a_backup_tool_are_never_touched(state, out):
    names = [f".counts.npy.tmp-{os.getpid()}", ".counts.tmp-abc123.npy", "counts.npy.tmp", "counts.npy~",
             ".counts.npy.swp", f".{RECORD_NAME}.tmp-{os.getpid()}"]
    for name in names:
        (out.parent / name).write_bytes(USER)
    assert _contacts(state, out) == 0
    assert _contacts(state, out) == 0
    assert all((out.parent / name).read_bytes() == USER for name in names)
    assert sorted(os.listdir(out.parent)) == sorted([*names, "counts.npy", RECORD_NAME])


def test_a_file_that_appears_during_the_work_is_not_replaced(state, out):
    """Checked before the work and again at the rename: another program's file written in between stays."""
    plan = plan_outputs([out])
    out.write_bytes(USER)  # a second Blender instance, or a sync client, wrote it meanwhile
    from engine.errors import MochiError

    with pytest.raises(MochiError, match="cannot prove it wrote it"):
        plan.write(out, lambda handle: handle.write(b"mochi"))
    assert out.read_bytes() == USER and [p.name for p in out.parent.iterdir()] == ["counts.npy"]


def _child(*argv) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", *map(str, argv)], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})


def test_two_commands_racing_to_one_output_leave_it_proven(state, out):
    """Whichever rename lands last wins; both record their bytes first, so the file stays provably Mochi's."""
    children = [_child("contacts", state, "--out", out) for _ in range(2)]
    for child in children:
        _, err = child.communicate(timeout=300)
        assert child.returncode in (0, 2), err
        assert "Traceback" not in err
    assert _contacts(state, out) == 0 and np.load(out).shape == (12,)
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name]


def test_two_commands_writing_different_files_in_one_folder_keep_both_proofs(state, out):
    other = out.with_name("other.npy")
    children = [_child("contacts", state, "--out", out), _child("contacts", state, "--out", other)]
    for child in children:
        assert child.wait(timeout=300) == 0, child.stderr.read()
    assert plan_outputs([out, other]).proves(out) and plan_outputs([out]).proves(other)


@pytest.mark.parametrize("moment", ["before the rename", "after the rename"])
def test_a_command_killed_around_its_rename_leaves_every_placed_file_proven(state, out, monkeypatch, moment):
    """The record line is appended before the rename: a kill at either moment lets a re-run go on alone."""
    import engine.output_files as output_files

    real_replace = os.replace

    def killed(source, target):
        if moment == "after the rename":
            real_replace(source, target)
        raise KeyboardInterrupt

    monkeypatch.setattr(output_files.os, "replace", killed)
    assert _contacts(state, out) == 130  # the guard's Ctrl-C sentence
    monkeypatch.undo()
    assert out.exists() == (moment == "after the rename")
    assert not [p for p in out.parent.iterdir() if ".tmp-" in p.name]
    assert _contacts(state, out) == 0  # no --overwrite needed: whatever was placed is proven

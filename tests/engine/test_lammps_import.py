"""`mochi export-lammps` → Debian's LAMMPS (1 and 2 MPI ranks) → `mochi import-lammps`: the imported cache is
a cache like any bake, agrees with Mochi's own bake of the scene within the agreement docs/physics.md shows
for the linear law against LAMMPS (packing fraction 0.01, coordination 0.07, bed height 1.4 mm), and with
itself across 1 and 2 ranks; damaged dumps and folders the cache rules refuse are one sentence."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from engine.cache import read_frame, read_manifest
from engine.cache_integrity import check_file_digests
from engine.cli.main import main

from .lammps_peer import BED_PRESET, assert_beds_agree, bed_metrics, lmp_or_skip, run_deck

SIDE = 0.06
FRAMES = 11


@pytest.fixture(scope="module")
def work(tmp_path_factory):
    lmp_or_skip()
    folder = tmp_path_factory.mktemp("lammps")
    shutil.copy(BED_PRESET, folder / "bed.toml")
    assert main(["export-lammps", str(folder / "bed.toml"), str(folder / "deck")]) == 0
    return folder


def _run_and_import(work: Path, ranks: int) -> Path:
    deck = work / f"deck_{ranks}"
    if not deck.exists():
        shutil.copytree(work / "deck", deck)
        run_deck(deck, ranks=ranks)
        assert main(["import-lammps", *map(str, sorted((deck / "dumps").glob("*.lammpstrj"))),
                     "--out", str(work / f"cache_{ranks}")]) == 0
    return work / f"cache_{ranks}"


@pytest.fixture(scope="module")
def serial(work):
    return _run_and_import(work, 1)


@pytest.fixture(scope="module")
def two_ranks(work):
    return _run_and_import(work, 2)


@pytest.fixture(scope="module")
def mochi_bake(work):
    from engine.bake import bake
    from engine.preset import load_preset
    from engine.scene import setup_from_preset

    out = work / "mochi"
    bake(setup_from_preset(load_preset(work / "bed.toml")), out, frames=FRAMES, backend="cpu")
    return out


def _settled(cache: Path) -> dict:
    return bed_metrics(read_frame(cache, FRAMES), SIDE)


def test_serial_import_is_a_cache_that_agrees_with_mochis_bake(serial, mochi_bake, work):
    manifest = read_manifest(serial)
    assert manifest["frames_completed"] == FRAMES and manifest["particle_count"] == 1200
    assert manifest["source"] == "lammps" and manifest["lammps_export"] == str((work / "deck_1").absolute())
    assert manifest["steps_per_frame"] == read_manifest(mochi_bake)["steps_per_frame"] == 500
    check_file_digests(serial, manifest)  # every frame is one the manifest proves, as a bake's
    first, ours = read_frame(serial, 1), read_frame(mochi_bake, 1)
    for name in ("x", "y", "z", "radius", "vx", "id", "object_id", "material", "active"):
        assert np.array_equal(first[name], ours[name]), name  # the same packed initial state, bit for bit
    last = read_frame(serial, FRAMES)
    assert np.allclose(np.linalg.norm(np.column_stack([last[k] for k in ("qw", "qx", "qy", "qz")]), axis=1), 1.0,
                       atol=1e-6)
    assert np.abs(last["wx"]).max() > 0  # the grains turned in LAMMPS
    lammps, mochi = _settled(serial), _settled(mochi_bake)
    assert lammps["core_grains"] > 300 and lammps["coordination"] > 4.0  # a bed, not a gas
    assert_beds_agree(lammps, mochi)


def test_two_rank_import_agrees_with_serial_and_mochis_bake(two_ranks, serial, mochi_bake):
    assert read_manifest(two_ranks)["frames_completed"] == FRAMES
    assert np.array_equal(read_frame(two_ranks, 1)["x"], read_frame(serial, 1)["x"])
    assert_beds_agree(_settled(two_ranks), _settled(serial))
    assert_beds_agree(_settled(two_ranks), _settled(mochi_bake))


def _dumps(work: Path) -> list[Path]:
    """The serial run's dumps, in step order."""
    return sorted((work / "deck_1" / "dumps").glob("*.lammpstrj"), key=lambda p: int(p.name.split(".")[1]))


def _refused(capsys, argv: list) -> str:
    """Run ``mochi ARGV``, which must be refused with exit status 2 and one sentence; the sentence."""
    capsys.readouterr()
    assert main([str(a) for a in argv]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mochi: error: ") and "\n" not in err and "Traceback" not in err, err
    return err


def test_import_follows_the_cache_rules(serial, work, capsys):
    dumps = _dumps(work)
    out = work / "partial"
    assert main(["import-lammps", *map(str, dumps[:4]), "--out", str(out)]) == 0
    assert read_manifest(out)["frames_completed"] == 4
    assert "already holds a bake of 4 frames" in _refused(capsys, ["import-lammps", *dumps, "--out", out])
    assert main(["import-lammps", *map(str, dumps), "--out", str(out), "--resume"]) == 0
    assert read_manifest(out)["frames_completed"] == FRAMES
    for frame in range(1, FRAMES + 1):  # resumed = imported at once (orientations included)
        assert (out / f"frame_{frame:04d}.ply").read_bytes() == (serial / f"frame_{frame:04d}.ply").read_bytes()
    # A Mochi bake is not continued by an import, and a folder with a foreign file is refused.
    other = work / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert "notes.txt" in _refused(capsys, ["import-lammps", *dumps, "--out", other])
    assert (other / "notes.txt").read_text() == "mine" and not (other / "manifest.json").exists()
    assert main(["import-lammps", *map(str, dumps), "--out", str(out), "--overwrite"]) == 0
    assert read_manifest(out)["frames_completed"] == FRAMES


def _damage(dump: Path, folder: Path, how: str) -> Path:
    lines = dump.read_text().splitlines(keepends=True)
    target = folder / dump.name
    if how == "truncated":
        target.write_text("".join(lines[:200]) + lines[200][:10])
    elif how == "missing column":
        header = lines.index(next(line for line in lines if line.startswith("ITEM: ATOMS")))
        lines[header] = lines[header].replace(" omegaz", "")
        target.write_text("".join(lines[:header + 1] + [" ".join(line.split()[:-1]) + "\n"
                                                         for line in lines[header + 1:]]))
    elif how == "not a number":
        lines[300] = lines[300].replace(lines[300].split()[4], "x1.5")
        target.write_text("".join(lines))
    elif how == "not a dump":
        target.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    return target


@pytest.mark.parametrize("how,words", [("truncated", "truncated"), ("missing column", "lacks the columns omegaz"),
                                       ("not a dump", "not a LAMMPS custom dump")])
def test_a_damaged_dump_is_one_sentence_and_writes_nothing(serial, work, tmp_path, capsys, how, words):
    dumps = _dumps(work)
    damaged = _damage(dumps[3], tmp_path, how)
    given = [*map(str, dumps[:3]), str(damaged), *map(str, dumps[4:])]
    out = tmp_path / "cache"
    assert words in _refused(capsys, ["import-lammps", *given, "--out", out, "--export", work / "deck_1"])
    assert not out.exists()


def test_a_value_damaged_in_a_later_frame_keeps_the_frames_before_it(serial, work, tmp_path, capsys):
    """Values are read frame by frame (a huge scene is never read twice): the frames before stay, complete
    and proven, and a resume with the step given again finishes the import."""
    dumps = _dumps(work)
    damaged = _damage(dumps[3], tmp_path, "not a number")
    out = tmp_path / "cache"
    sentence = _refused(capsys, ["import-lammps", *dumps[:3], damaged, *dumps[4:], "--out", out, "--export",
                                 work / "deck_1"])
    assert "not a number in step 1500" in sentence and "Frames 1–3 are imported" in sentence
    assert read_manifest(out)["frames_completed"] == 3
    assert main(["import-lammps", *map(str, dumps), "--out", str(out), "--resume"]) == 0
    assert (out / f"frame_{FRAMES:04d}.ply").read_bytes() == (serial / f"frame_{FRAMES:04d}.ply").read_bytes()


def test_a_dump_of_other_grains_leaves_no_folder(serial, work, tmp_path, capsys):
    dumps = _dumps(work)
    lines = dumps[0].read_text().splitlines(keepends=True)
    words = lines[9].split()
    words[2] = "0.004"  # atom 1's radius
    lines[9] = " ".join(words) + "\n"
    other = tmp_path / dumps[0].name
    other.write_text("".join(lines))
    out = tmp_path / "cache"
    sentence = _refused(capsys, ["import-lammps", other, *dumps[1:], "--out", out, "--export", work / "deck_1"])
    assert "are not the export's" in sentence
    assert not out.exists()  # the folder it made for frame 1 went again


def test_missing_frames_and_foreign_dumps_are_refused(serial, work, tmp_path, capsys):
    dumps = _dumps(work)
    assert "lack frame 4 (step 1500)" in _refused(capsys, ["import-lammps", *dumps[:3], *dumps[4:], "--out",
                                                                  tmp_path / "a"])
    assert "dumped twice" in _refused(capsys, ["import-lammps", dumps[0], dumps[0], "--out", tmp_path / "b"])
    lonely = tmp_path / "lonely.lammpstrj"
    shutil.copy(dumps[0], lonely)
    assert "No Mochi LAMMPS export" in _refused(capsys, ["import-lammps", lonely, "--out", tmp_path / "c"])
    edited = tmp_path / "edited"
    shutil.copytree(work / "deck_1", edited)
    record = json.loads((edited / "mochi_export.json").read_text())
    record["steps_per_frame"] = 250
    (edited / "mochi_export.json").write_text(json.dumps(record))
    assert "was changed since mochi export-lammps wrote it" in _refused(
        capsys, ["import-lammps", *sorted((edited / "dumps").glob("*")), "--out", tmp_path / "d"])

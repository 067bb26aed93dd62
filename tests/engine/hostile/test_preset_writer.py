"""`mochi preset export` writes a preset and its meshes beside OUT: never over a file Mochi cannot prove
it wrote (engine.output_files), so exporting a scene again over its own preset works."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import MochiError
from engine.preset_writer import write_preset

DOCUMENT = {"scene": {"name": "t"}, "materials": [{"name": "sand"}],
            "emitters": [{"type": "mesh", "path": "meshes/Cube.ply", "radius": 0.05}]}
CUBE = (np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1]], float), np.array([[0, 1, 2], [0, 1, 3], [0, 2, 3], [1, 2, 3]]))


@pytest.mark.parametrize("existing", ["meshes/Cube.ply", "out.toml"])
def test_an_existing_file_is_refused_before_anything_is_written(tmp_path, existing):
    (tmp_path / "meshes").mkdir()
    (tmp_path / existing).write_bytes(b"the user's own file")
    with pytest.raises(MochiError, match="exists and Mochi cannot prove it wrote it.*--overwrite"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    assert (tmp_path / existing).read_bytes() == b"the user's own file"
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted({"meshes", existing.split("/")[-1]})


def test_a_link_in_the_way_is_refused_too(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "Cube.ply").symlink_to(tmp_path / "elsewhere.ply")  # dangling
    with pytest.raises(MochiError, match="is a symbolic link"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    assert not (tmp_path / "elsewhere.ply").exists()


def test_overwrite_replaces_them(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "Cube.ply").write_bytes(b"old")
    write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE}, overwrite=True)
    assert (tmp_path / "meshes" / "Cube.ply").read_bytes().startswith(b"ply")
    assert (tmp_path / "out.toml").is_file()


def test_exporting_again_replaces_its_own_preset_and_meshes(tmp_path):
    write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    moved = (CUBE[0] + 1.0, CUBE[1])
    write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": moved})  # no overwrite needed
    from engine.packing.mesh import read_trimesh

    assert np.array_equal(read_trimesh(tmp_path / "meshes" / "Cube.ply").vertices, moved[0])


@pytest.mark.parametrize("edited", ["meshes/Cube.ply", "out.toml"])
def test_its_own_file_edited_by_hand_is_refused_before_anything_is_written(tmp_path, edited):
    write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    with open(tmp_path / edited, "ab") as handle:
        handle.write(b"\n# my note\n")
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    with pytest.raises(MochiError, match=f"{edited.split('/')[-1]}' exists and Mochi cannot prove it wrote it"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    assert {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()} == before


def test_a_mesh_folder_that_is_a_users_file_is_refused(tmp_path):
    (tmp_path / "meshes").write_bytes(b"the user's own file")
    with pytest.raises(MochiError, match="is a file, not a folder"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE}, overwrite=True)
    assert not (tmp_path / "out.toml").exists()

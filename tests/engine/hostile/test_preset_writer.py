"""`mochi preset export` writes a preset and its meshes beside OUT: never over a file that is there."""

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
    with pytest.raises(MochiError, match="already exists; .*--overwrite"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    assert (tmp_path / existing).read_bytes() == b"the user's own file"
    assert sorted(p.name for p in tmp_path.rglob("*")) == sorted({"meshes", existing.split("/")[-1]})


def test_a_link_in_the_way_is_refused_too(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "Cube.ply").symlink_to(tmp_path / "elsewhere.ply")  # dangling
    with pytest.raises(MochiError, match="already exists"):
        write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE})
    assert not (tmp_path / "elsewhere.ply").exists()


def test_overwrite_replaces_them(tmp_path):
    (tmp_path / "meshes").mkdir()
    (tmp_path / "meshes" / "Cube.ply").write_bytes(b"old")
    write_preset(tmp_path / "out.toml", DOCUMENT, {"meshes/Cube.ply": CUBE}, overwrite=True)
    assert (tmp_path / "meshes" / "Cube.ply").read_bytes().startswith(b"ply")
    assert (tmp_path / "out.toml").is_file()

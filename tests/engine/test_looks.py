"""Looks (engine.looks): every look file loads, in menu order, and each one does what it says."""

from __future__ import annotations

import pytest

from engine.errors import MochiError
from engine.looks import DEFAULT_LOOK, Look, list_looks, look, looks_dir
from engine.model import Material

KEYS = ["sand", "gravel", "beads", "candy", "wet_sand", "glued_bunny"]


def test_every_look_file_loads_in_menu_order_sand_first():
    looks = list_looks()
    assert [entry.key for entry in looks] == KEYS
    assert sorted(path.stem for path in looks_dir().glob("*.toml")) == sorted(KEYS)
    assert looks[0].key == DEFAULT_LOOK == "sand"


@pytest.mark.parametrize("key", KEYS)
def test_each_look_is_complete_and_physical(key):
    entry = look(key)
    assert isinstance(entry, Look) and entry.key == key and isinstance(entry.material, Material)
    assert entry.label and entry.description and "\n" not in entry.description
    assert entry.material.name == key
    assert 0.001 <= entry.radius <= 0.05 and 0.0 < entry.small_ratio <= 1.0  # artist scale: mm to cm
    m = entry.material
    assert m.density > 0 and 0 < m.restitution <= 1 and m.friction >= 0 and m.rolling_friction >= 0
    assert m.cohesion >= 0 and entry.body in ("loose", "glued", "rigid")
    assert (entry.glue_strength > 0) == (entry.body == "glued")


def test_looks_differ_where_an_artist_sees_it():
    """Sand resists rolling (it piles), beads roll freely and bounce, the glued look is one body."""
    sand, beads, gravel = look("sand"), look("beads"), look("gravel")
    assert sand.material.rolling_friction > 0 and beads.material.rolling_friction == 0
    assert beads.material.restitution > sand.material.restitution
    assert gravel.radius > sand.radius and beads.small_ratio == 1.0
    assert look("glued_bunny").body == "glued"


def test_an_unknown_look_names_the_known_ones():
    with pytest.raises(MochiError, match="no look 'mud'.*sand, gravel, beads"):
        look("mud")
    with pytest.raises(MochiError, match="no look"):
        look("../sand_pile")


def test_a_bad_look_file_names_the_file_and_key(tmp_path, monkeypatch):
    import engine.looks as looks_module

    (tmp_path / "odd.toml").write_text('label = "Odd"\ndescription = "x"\nradius = -1\n[material]\n')
    monkeypatch.setattr(looks_module, "looks_dir", lambda: tmp_path)
    with pytest.raises(MochiError, match=r"odd\.toml.*radius must be > 0"):
        look("odd")
    (tmp_path / "odd.toml").write_text('label = "Odd"\ndescription = "x"\nradius = 0.01\nsize = 2\n[material]\n')
    with pytest.raises(MochiError, match=r"odd\.toml.*unknown key 'size'"):
        look("odd")

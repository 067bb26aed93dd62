"""Looks (engine.looks): every look file loads, in menu order, and each one does what it says."""

from __future__ import annotations

import pytest

from engine.errors import MochiError
from engine.looks import DEFAULT_LOOK, Look, list_looks, look, looks_dir
from engine.model import Material
from engine.settings_schema import setting

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
    assert setting("glue_strength").allows(entry.glue_strength)


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


# --- the heap each look makes (benchmarks/looks_repose.py, docs/looks.md) -------------------------------

@pytest.fixture(scope="module")
def heaps():
    """Sand and beads columns (~2,300 grains each) collapsed on an open floor for 1 s, a few seconds each."""
    from benchmarks.looks_repose import run_heap

    return {key: run_heap(look(key)) for key in ("sand", "beads")}


def test_the_default_look_piles_at_about_thirty_degrees(heaps):
    """Sand (the default) keeps its grains and stands as a heap whose flank is ~30° (measured 28.9°;
    physics_repose's estimator, which reads LAMMPS' half-piles within 1.3° of Mochi's)."""
    sand = heaps["sand"]
    diameter = 2.0 * look("sand").radius
    assert sand["kept"] == sand["grains"]  # nothing ran off the floor
    assert sand["fitted_bins"] >= 4 and 24.0 <= sand["angle_deg"] <= 36.0, sand
    assert sand["height_at_axis_m"] > 6.0 * diameter  # a heap, from a 10-diameter column


def test_beads_spread_instead_of_piling(heaps):
    """Beads (no rolling resistance, little friction) from the same column roll away: no heap stands
    3 diameters high, so the estimator finds no flank, and grains run off the floor."""
    beads = heaps["beads"]
    diameter = 2.0 * look("beads").radius
    assert beads["height_at_axis_m"] < 3.0 * diameter, beads
    assert not beads["angle_deg"] >= 15.0  # NaN (no flank to fit) or shallow
    assert beads["kept"] < 0.95 * beads["grains"]

"""The Hertz–Mindlin contact law from Blender's panel: the Contact Law and the moduli, their way into the
engine, a bake on the CPU, the GPU backends' refusal in the bake's report, and what the panel shows."""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from .conftest import add_domain, add_source, bpy, mochi_module


def test_the_hertz_settings_start_at_the_engines_defaults(empty_scene):
    """A new scene keeps the linear law; a new source and domain carry the engine's default moduli, so a
    scene switched to Hertz bakes what a preset without moduli bakes."""
    model = mochi_module("engine.model")
    s = empty_scene.mochi
    assert s.contact_law == "HOOKE"
    assert {item.identifier for item in s.bl_rna.properties["contact_law"].enum_items} == {"HOOKE", "HERTZ"}
    source = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    domain = add_domain()
    material, walls = model.Material(), model.Domain()
    assert source.mochi.youngs_modulus == pytest.approx(material.youngs_modulus)
    assert source.mochi.poisson_ratio == pytest.approx(material.poisson_ratio)
    assert domain.mochi.wall_youngs_modulus == pytest.approx(walls.wall_youngs_modulus)
    assert domain.mochi.wall_poisson_ratio == pytest.approx(walls.wall_poisson_ratio)
    # The panel holds the moduli and ratios a preset may give (engine.preset: E ≤ 1e13 Pa, ν ≤ 0.4999), to
    # float32, which Blender stores.
    props = source.mochi.bl_rna.properties
    assert props["youngs_modulus"].hard_max == pytest.approx(1.0e13)
    assert props["poisson_ratio"].hard_max == pytest.approx(0.4999)


def _two_materials_scene(tmp_path):
    """Two sources of different moduli in a domain with moduli of its own, and a given linear stiffness."""
    soft = add_source("cube", location=(-0.5, 0.0, 1.0), radius=0.1, size=0.5)
    soft.name = "Soft"
    soft.mochi.youngs_modulus, soft.mochi.poisson_ratio = 2.0e6, 0.45
    stiff = add_source("cube", location=(0.5, 0.0, 1.0), radius=0.1, size=0.5)
    stiff.name = "Stiff"
    stiff.mochi.youngs_modulus, stiff.mochi.poisson_ratio = 8.0e7, 0.2
    domain = add_domain()
    domain.mochi.wall_youngs_modulus, domain.mochi.wall_poisson_ratio = 3.0e8, 0.25
    s = bpy.context.scene.mochi
    s.frame_start, s.frame_end = 1, 3
    s.use_auto_stiffness, s.stiffness = False, 6.0e4
    bpy.ops.wm.save_as_mainfile(filepath=str(tmp_path / "s.blend"))


@pytest.mark.parametrize("law", ["HOOKE", "HERTZ"])
def test_the_contact_law_and_the_moduli_reach_the_engine(empty_scene, tmp_path, law):
    """Hertz–Mindlin passes each source's Young's modulus and Poisson's ratio and the walls', and no
    stiffness (the engine refuses one: the moduli set it); the linear law keeps the stiffness given."""
    _two_materials_scene(tmp_path)
    empty_scene.mochi.contact_law = law
    settings = mochi_module("addon.snapshot").scene_blender_to_settings(bpy.context)
    assert settings.simulation.contact_normal == law.lower()
    assert settings.simulation.stiffness == (None if law == "HERTZ" else pytest.approx(6.0e4))
    physics = mochi_module("addon.settings").setup_from_settings(settings).model.physics
    assert physics.contact_normal == law.lower() and physics.friction_cap == "clipped"
    moduli = {m.name: (m.youngs_modulus, m.poisson_ratio) for m in physics.materials}
    assert moduli["Soft"] == pytest.approx((2.0e6, 0.45)) and moduli["Stiff"] == pytest.approx((8.0e7, 0.2))
    assert (physics.domain.wall_youngs_modulus, physics.domain.wall_poisson_ratio) == pytest.approx((3.0e8, 0.25))
    if law == "HOOKE":
        assert physics.stiffness == pytest.approx(6.0e4)


def test_a_hertz_scene_bakes_on_the_cpu(small_scene):
    """The two-source test scene baked with Hertz–Mindlin: its stiffness setting is left out, the cache
    records the law and the moduli, and the grains fall without blowing up."""
    small_scene.mochi.contact_law = "HERTZ"  # small_scene's given stiffness (6e4 N/m) would be refused
    small_scene.mochi.timestep_mode = "AUTO"  # its 20 substeps are too few for these moduli
    for obj in small_scene.objects:
        if obj.mochi.role == "SOURCE":
            obj.mochi.youngs_modulus = 5.0e7
    assert bpy.ops.mochi.bake() == {"FINISHED"}
    folder = mochi_module("addon.snapshot").cache_folder(small_scene)
    cache = mochi_module("engine.cache")
    physics = cache.read_manifest(folder)["physics"]
    assert physics["contact_normal"] == "hertz"
    assert [m["youngs_modulus"] for m in physics["materials"]] == pytest.approx([5.0e7, 5.0e7])
    first, last = cache.read_frame(folder, 1), cache.read_frame(folder, 4)
    assert np.isfinite(last["z"]).all() and last["z"].mean() < first["z"].mean()
    assert last["vz"].mean() < -0.1


def test_a_gpu_backend_refuses_hertz_in_the_bake_report(small_scene, monkeypatch):
    """With Hertz on, a GPU backend chosen in the panel refuses when it starts (its kernels have only the
    linear law), and the engine's sentence is what Bake reports. The GPU is stood in for by a CuPy with
    one device: the refusal comes before any device work."""
    cupy = types.ModuleType("cupy")
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(mochi_module("engine.backends.cuda_grid"), "import_cupy", lambda: cupy)
    # The panel's availability probe would find no device behind the stand-in: it says CUDA can start.
    probe = mochi_module("addon.backend_probe")
    monkeypatch.setattr(probe, "backend_availability",
                        lambda: probe.BackendAvailability({"cpu": "CPU", "cuda": "stand-in"}, {}, False))
    small_scene.mochi.contact_law, small_scene.mochi.timestep_mode = "HERTZ", "AUTO"
    small_scene.mochi.backend = "cuda"
    with pytest.raises(RuntimeError, match=r"GPU backends have only the linear \(Hooke\) contact law, not 'hertz'"):
        bpy.ops.mochi.bake()


class _Layout:
    """Records what a panel draws, and whether each item is drawn active (UILayout cannot be made
    outside a draw); sub-layouts inherit their parent's state, as Blender's do."""

    def __init__(self, log, active=True, enabled=True):
        self.log, self.active, self.enabled = log, active, enabled

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self.log.append((name, args, kwargs, self.active and self.enabled))
            if name in {"row", "column", "box", "split"}:
                return _Layout(self.log, self.active, self.enabled)
            return None
        return call


class _Panel:
    """A panel's ``self`` in a draw: its layout, and the panel class's own helpers."""

    def __init__(self, panel, layout):
        self.panel, self.layout = panel, layout

    def __getattr__(self, name):
        return getattr(self.panel, name)


def _drawn(panel, context) -> tuple[dict, list]:
    """(property name → drawn active, [(label text, icon)]) of ``panel`` drawn in ``context``."""
    log = []
    panel.draw(_Panel(panel, _Layout(log)), context)
    props = {entry[1][1]: entry[3] for entry in log if entry[0] == "prop"}
    labels = [(entry[2].get("text", ""), entry[2].get("icon", "")) for entry in log if entry[0] == "label"]
    return props, labels


@pytest.mark.parametrize("law", ["HOOKE", "HERTZ"])
def test_the_panel_shows_what_the_contact_law_reads(empty_scene, law):
    """The moduli are active only with Hertz (greyed out otherwise); with Hertz the stiffness controls
    give way to the reason, and a GPU backend is said to refuse it before Bake is pressed."""
    panels = mochi_module("addon.ui.panels")
    source = add_source("cube", location=(0.0, 0.0, 1.0), radius=0.1, size=0.5)
    domain = add_domain()
    bpy.ops.mesh.primitive_plane_add()
    collider = bpy.context.object
    collider.mochi.role = "COLLIDER"
    scene = empty_scene
    scene.mochi.contact_law, scene.mochi.use_auto_stiffness = law, False  # a given stiffness: both controls
    hertz = law == "HERTZ"

    props, labels = _drawn(panels.MOCHI_PT_simulation, types.SimpleNamespace(scene=scene))
    assert props["contact_law"]
    assert ("use_auto_stiffness" in props) == ("stiffness" in props) == (not hertz)
    assert any("Young's modulus" in text for text, _ in labels) == hertz
    assert not any(icon == "ERROR" for _, icon in labels)
    scene.mochi.backend = "cuda"
    _, labels = _drawn(panels.MOCHI_PT_simulation, types.SimpleNamespace(scene=scene))
    assert any(icon == "ERROR" and "CPU" in text for text, icon in labels) == hertz

    props, _ = _drawn(panels.MOCHI_PT_object, types.SimpleNamespace(scene=scene, object=source))
    assert props["youngs_modulus"] is props["poisson_ratio"] is hertz
    assert props["density"] and props["cohesion"]
    props, _ = _drawn(panels.MOCHI_PT_object, types.SimpleNamespace(scene=scene, object=domain))
    assert props["wall_youngs_modulus"] is props["wall_poisson_ratio"] is hertz
    _, labels = _drawn(panels.MOCHI_PT_object, types.SimpleNamespace(scene=scene, object=collider))
    assert any("walls" in text for text, _ in labels) == hertz

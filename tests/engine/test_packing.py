"""Sphere packing (engine.packing): overlap, containment, density, robustness, errors, determinism, CLI."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import pytest
import trimesh
from scipy.spatial import cKDTree
from scipy.spatial.distance import pdist

from engine.errors import MochiError
from engine.packing import PackResult, pack_mesh, pack_mesh_file, rigid_velocities
from engine.packing.bvh import build_bvh
from engine.packing.queries import surface_distances, winding_numbers, winding_numbers_exact
from engine.packing.regions import classify_sites, mesh_has_boundary
from engine.ply import read_points
from engine.preset import load_preset

ROOT = Path(__file__).resolve().parents[2]
BUNNY = ROOT / "presets" / "bunny.obj"
OVERLAP_TOLERANCE = 0.01  # of the smaller radius (issue 3)


def worst_overlap(result: PackResult) -> float:
    """Largest overlap of any pair, as a fraction of the smaller radius (k-d tree, float64)."""
    x = result.positions.astype(np.float64)
    r = result.radius.astype(np.float64)
    pairs = cKDTree(x).query_pairs(2.0 * r.max(), output_type="ndarray")
    if len(pairs) == 0:
        return 0.0
    i, j = pairs[:, 0], pairs[:, 1]
    gap = r[i] + r[j] - np.linalg.norm(x[i] - x[j], axis=1)
    return float((gap / np.minimum(r[i], r[j])).max())


def open_box() -> trimesh.Trimesh:
    """A unit cube with its +Z face (two triangles) removed."""
    box = trimesh.creation.box()
    top = box.triangles_center[:, 2] > 0.49
    return trimesh.Trimesh(box.vertices, box.faces[~top], process=False)


def box_distance(points: np.ndarray, half: float = 0.5) -> np.ndarray:
    """Distance from points inside an origin-centred cube to its surface [m]."""
    return (half - np.abs(points)).min(axis=1)


# --- overlap and containment -------------------------------------------------------------------------


def test_small_packing_has_no_overlap_by_brute_force():
    sphere = trimesh.creation.icosphere(3, radius=0.5)
    result = pack_mesh(sphere.vertices, sphere.faces, radius=0.08)
    x = result.positions.astype(np.float64)
    r = result.radius.astype(np.float64)
    assert 100 < len(r) < 3000
    i, j = np.triu_indices(len(r), k=1)
    gap = (r[i] + r[j]) - pdist(x)
    assert (gap / np.minimum(r[i], r[j])).max() <= OVERLAP_TOLERANCE


def test_box_is_dense_disjoint_and_contained():
    box = trimesh.creation.box()
    result = pack_mesh(box.vertices, box.faces, radius=0.05)  # 20 radii across
    assert worst_overlap(result) <= OVERLAP_TOLERANCE
    assert result.packing_fraction >= 0.60
    assert result.mesh_volume == pytest.approx(1.0)
    d = box_distance(result.positions.astype(np.float64))
    assert (d >= result.radius - 1e-6).all()  # every sphere, large and small, fully inside
    assert sorted(result.counts) == pytest.approx([0.025, 0.05])
    assert sum(result.counts.values()) == len(result.radius)
    assert result.counts[float(np.float32(0.05))] == int((~result.is_small).sum())


def test_sphere_is_dense_disjoint_and_contained():
    # 40 radii across: at 20 radii across the curved wall leaves 0.575 (one radius: 0.537, the bound of
    # a lattice clipped to a ball of 10 radii is 0.74 · 0.9³ = 0.54).
    sphere = trimesh.creation.icosphere(4, radius=0.5)
    result = pack_mesh(sphere.vertices, sphere.faces, radius=0.025)
    assert worst_overlap(result) <= OVERLAP_TOLERANCE
    assert result.packing_fraction >= 0.60
    bvh = build_bvh(sphere.vertices, sphere.faces)
    large = ~result.is_small
    d = surface_distances(bvh, result.positions[large], 1.0)
    assert (d >= result.radius[large] - 1e-6).all()
    inside = np.abs(winding_numbers_exact(bvh, result.positions[large][::20])) > 0.5
    assert inside.all()


def test_bunny_matches_the_paper_and_stays_inside():
    result = pack_mesh_file(BUNNY, radius=0.005, fit=0.5)
    assert abs(result.particle_count - 82_337) <= 0.15 * 82_337
    assert worst_overlap(result) <= OVERLAP_TOLERANCE
    mesh = trimesh.load(BUNNY, force="mesh")
    scale = 0.5 / mesh.extents.max()
    assert result.mesh_volume == pytest.approx(mesh.volume * scale ** 3, rel=1e-9)
    # Independent oracle: trimesh's signed distance (positive inside) on a sample of spheres.
    centre = mesh.bounds.mean(axis=0)  # fit scales about the bounding-box centre
    placed = trimesh.Trimesh((mesh.vertices - centre) * scale + centre, mesh.faces)
    pick = np.random.default_rng(0).choice(result.particle_count, 1500, replace=False)
    signed = trimesh.proximity.signed_distance(placed, result.positions[pick].astype(np.float64))
    assert (signed >= result.radius[pick] - 1e-6).all()


# --- the inside test ---------------------------------------------------------------------------------


def test_fast_winding_number_matches_brute_force_on_the_bunny():
    mesh = trimesh.load(BUNNY, force="mesh")
    bvh = build_bvh(mesh.vertices, mesh.faces)
    points = np.random.default_rng(1).uniform(mesh.bounds[0] - 0.5, mesh.bounds[1] + 0.5, (3000, 3))
    fast = winding_numbers(bvh, points)
    exact = winding_numbers_exact(bvh, points)
    assert np.abs(fast - exact).max() < 0.1
    assert ((fast >= 0.5) == (exact >= 0.5)).all()
    assert 0.1 < (exact >= 0.5).mean() < 0.6


def test_grouped_classification_equals_per_site_classification():
    from engine.packing.lattice import hcp_lattice

    mesh = trimesh.load(BUNNY, force="mesh")
    bvh = build_bvh(mesh.vertices, mesh.faces)
    assert not mesh_has_boundary(mesh.faces)
    lattice = hcp_lattice(mesh.bounds[0], mesh.bounds[1], 0.15)
    d = surface_distances(bvh, lattice.positions, 0.31)
    keep = d >= 0.15
    args = (bvh, lattice.positions[keep], lattice.flat_ids[keep], lattice.dims, d[keep])
    grouped = np.abs(classify_sites(*args, closed=True)) >= 0.5
    each = np.abs(classify_sites(*args, closed=False)) >= 0.5
    assert grouped.sum() > 100
    assert (grouped == each).all()


def test_flipped_and_inconsistently_oriented_meshes_fill_like_the_original():
    box = trimesh.creation.box()
    normal = pack_mesh(box.vertices, box.faces, radius=0.05)
    flipped = pack_mesh(box.vertices, box.faces[:, ::-1], radius=0.05)
    assert np.array_equal(normal.positions, flipped.positions)
    mixed_faces = box.faces.copy()
    mixed_faces[::3] = mixed_faces[::3, ::-1]  # every third face flipped: inconsistent orientation
    assert mesh_has_boundary(mixed_faces)
    mixed = pack_mesh(box.vertices, mixed_faces, radius=0.05)
    assert np.array_equal(normal.positions, mixed.positions)


def test_open_mesh_still_fills():
    mesh = open_box()
    assert mesh_has_boundary(mesh.faces)
    closed = pack_mesh(*(lambda b: (b.vertices, b.faces))(trimesh.creation.box()), radius=0.05)
    result = pack_mesh(mesh.vertices, mesh.faces, radius=0.05)
    assert 0.8 * closed.particle_count <= result.particle_count <= closed.particle_count
    assert worst_overlap(result) <= OVERLAP_TOLERANCE
    # From inside, the missing face never covers half the sky: the whole cube stays inside (w > ½).
    assert result.mesh_volume == pytest.approx(1.0)
    assert (box_distance(result.positions.astype(np.float64)) >= result.radius - 1e-6).all()


# --- scaling, count mode, placement -----------------------------------------------------------------


def test_count_scales_as_inverse_radius_cubed():
    sphere = trimesh.creation.icosphere(4, radius=0.5)
    coarse = pack_mesh(sphere.vertices, sphere.faces, radius=0.04, small_ratio=1.0)
    fine = pack_mesh(sphere.vertices, sphere.faces, radius=0.02, small_ratio=1.0)
    finer = pack_mesh(sphere.vertices, sphere.faces, radius=0.01, small_ratio=1.0)
    # Exponent of count vs radius tends to 3 as the wall layer shrinks relative to the body.
    slope_coarse = math.log(fine.particle_count / coarse.particle_count) / math.log(2)
    slope_fine = math.log(finer.particle_count / fine.particle_count) / math.log(2)
    assert 2.8 < slope_fine < slope_coarse < 3.4
    assert abs(slope_fine - 3.0) < 0.15
    # Two radii: the small skin is a shrinking share of the count, so count the volume in large spheres.
    volume = [float(np.sum(pack_mesh(sphere.vertices, sphere.faces, radius=r).radius.astype(np.float64) ** 3))
              / r ** 3 for r in (0.02, 0.01)]
    assert 2.85 < math.log(volume[1] / volume[0]) / math.log(2) < 3.15


def test_count_mode_hits_the_target():
    result = pack_mesh_file(BUNNY, count=5000, fit=0.5)
    assert abs(result.particle_count - 5000) <= 0.02 * 5000
    assert result.large_radius > 0.005
    assert result.counts[float(np.float32(result.large_radius))] == int((~result.is_small).sum())


def test_placement_fit_center_rotation():
    box = trimesh.creation.box(extents=(2.0, 1.0, 0.5))
    path_free = pack_mesh(box.vertices, box.faces, radius=0.1, fit=1.0, center=(3.0, 0.0, 0.0),
                          rotation_deg=(0.0, 0.0, 90.0))
    x = path_free.positions
    assert x[:, 0].min() > 3.0 - 0.25 and x[:, 0].max() < 3.0 + 0.25  # 2 m edge now along y, fit to 1 m
    assert x[:, 1].min() > -0.5 and x[:, 1].max() < 0.5
    assert path_free.mesh_volume == pytest.approx(0.125)
    moved = pack_mesh(box.vertices, box.faces, radius=0.1, transform=np.diag([0.5, 0.5, 0.5, 1.0]))
    assert moved.mesh_volume == pytest.approx(0.125)


# --- shell, jitter, colours, velocities ----------------------------------------------------------------


def test_shell_is_hollow():
    sphere = trimesh.creation.icosphere(4, radius=0.5)
    solid = pack_mesh(sphere.vertices, sphere.faces, radius=0.025)
    shell = pack_mesh(sphere.vertices, sphere.faces, radius=0.025, shell_layers=1)
    depth = 0.5 - np.linalg.norm(shell.positions.astype(np.float64), axis=1)
    assert depth.max() < 0.025 * 2 + 0.05 + 0.01  # skin of two small diameters + one large diameter
    assert 0.2 * solid.particle_count < shell.particle_count < 0.9 * solid.particle_count
    assert worst_overlap(shell) <= OVERLAP_TOLERANCE


def test_plane_needs_shell_mode_and_then_makes_a_sheet():
    plane = trimesh.creation.box(extents=(1.0, 1.0, 0.0))
    with pytest.raises(MochiError, match="encloses no volume"):
        pack_mesh(plane.vertices, plane.faces, radius=0.05)
    sheet = pack_mesh(plane.vertices, plane.faces, radius=0.05, shell_layers=1)
    assert sheet.particle_count > 50
    assert np.abs(sheet.positions[:, 2]).max() < 0.05
    assert math.isnan(sheet.packing_fraction)
    assert worst_overlap(sheet) <= OVERLAP_TOLERANCE


def test_same_seed_same_bits_and_jitter_keeps_spheres_apart():
    sphere = trimesh.creation.icosphere(3, radius=0.5)
    a = pack_mesh(sphere.vertices, sphere.faces, radius=0.05, jitter=0.2, seed=3)
    b = pack_mesh(sphere.vertices, sphere.faces, radius=0.05, jitter=0.2, seed=3)
    c = pack_mesh(sphere.vertices, sphere.faces, radius=0.05, jitter=0.2, seed=4)
    assert a.positions.tobytes() == b.positions.tobytes()
    assert a.radius.tobytes() == b.radius.tobytes()
    assert a.positions.shape != c.positions.shape or not np.array_equal(a.positions, c.positions)
    assert worst_overlap(a) <= OVERLAP_TOLERANCE
    bvh = build_bvh(sphere.vertices, sphere.faces)
    assert (surface_distances(bvh, a.positions, 1.0) >= a.radius - 1e-6).all()


def test_vertex_colours_reach_the_particles(tmp_path):
    box = trimesh.creation.box()
    colors = np.zeros((len(box.vertices), 4), np.uint8)
    colors[:, 3] = 255
    colors[box.vertices[:, 0] > 0, 0] = 255  # red on +x, black on -x
    box.visual = trimesh.visual.ColorVisuals(box, vertex_colors=colors)
    path = tmp_path / "painted.ply"
    box.export(path)
    result = pack_mesh_file(path, radius=0.1)
    assert result.colors is not None and result.colors.shape == (result.particle_count, 4)
    right = result.positions[:, 0] > 0.1
    left = result.positions[:, 0] < -0.1
    assert np.allclose(result.colors[right, 0], 1.0) and np.allclose(result.colors[left, 0], 0.0)
    assert pack_mesh_file(BUNNY, radius=0.05, fit=0.5).colors is None


def test_rigid_velocities():
    x = np.array([[1.0, 0.0, 0.0], [0.0, 2.0, 0.0]])
    v = rigid_velocities(x, (1.0, 0.0, 0.0), (0.0, 0.0, 2.0), (0.0, 0.0, 0.0))
    assert v.dtype == np.float32
    assert np.allclose(v, [[1.0, 2.0, 0.0], [-3.0, 0.0, 0.0]])


# --- errors -------------------------------------------------------------------------------------------


def test_errors_are_one_sentence(tmp_path):
    box = trimesh.creation.box()
    with pytest.raises(MochiError, match="does not exist"):
        pack_mesh_file(tmp_path / "missing.obj", radius=0.1)
    broken = tmp_path / "broken.ply"
    broken.write_bytes(b"ply\nformat nonsense\n\x00\x01")
    with pytest.raises(MochiError, match="broken.ply"):
        pack_mesh_file(broken, radius=0.1)
    empty = tmp_path / "empty.obj"
    empty.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\n")
    with pytest.raises(MochiError, match="no faces"):
        pack_mesh_file(empty, radius=0.1)
    with pytest.raises(MochiError, match="no faces"):
        pack_mesh(box.vertices, np.zeros((0, 3), int), radius=0.1)
    bad = box.vertices.copy()
    bad[3, 1] = np.nan
    with pytest.raises(MochiError, match="NaN"):
        pack_mesh(bad, box.faces, radius=0.1)
    with pytest.raises(MochiError, match="too large"):
        pack_mesh(box.vertices, box.faces, radius=1.2)  # even the small spheres (0.6) do not fit
    with pytest.raises(MochiError, match="exactly one of radius and count"):
        pack_mesh(box.vertices, box.faces, radius=0.1, count=10)
    with pytest.raises(MochiError, match="small-radius ratio"):
        pack_mesh(box.vertices, box.faces, radius=0.1, small_ratio=0.0)
    with pytest.raises(MochiError, match="too small"):
        pack_mesh(box.vertices, box.faces, radius=1e-5)


# --- CLI and presets ---------------------------------------------------------------------------------


def test_cli_writes_a_readable_ply(tmp_path, capsys):
    from engine.cli import pack

    parser = argparse.ArgumentParser()
    pack.register(parser.add_subparsers())
    out = tmp_path / "bunny.ply"
    args = parser.parse_args(["pack", str(BUNNY), "--radius", "0.02", "--fit", "0.5", "--out", str(out)])
    assert args.func(args) == 0
    summary = capsys.readouterr().out.strip()
    assert len(summary.splitlines()) == 1 and "packing fraction" in summary
    columns = read_points(out, required=("x", "y", "z", "radius", "id"))
    assert columns["x"].dtype == np.float32 and columns["id"].dtype == np.int32
    assert f"{len(columns['x']):,} spheres" in summary
    assert set(np.unique(columns["radius"])) == {np.float32(0.02), np.float32(0.01)}


def test_bunny_presets_load():
    drop = load_preset(ROOT / "presets" / "bunny_drop.toml")
    many = load_preset(ROOT / "presets" / "bunnies_14.toml")
    for preset in (drop, many):
        (emitter,) = preset.emitters
        assert emitter.kind == "mesh" and Path(emitter.path) == BUNNY
        # The paper's 2.5e-5 s would let grains overlap 17–37% of a radius: half and a quarter of it.
        assert preset.dt == (1.25e-5 if preset is drop else 6.25e-6) and preset.stiffness is None
        assert all(m["friction"] == 0.0 for m in preset.materials)
    assert len(many.emitters[0].copies) == 14
    # Every copy of the 0.5 m bunny lies inside the box of side 2, in its upper half, apart.
    centres = np.array(many.emitters[0].copies)
    half = np.array([0.25, 0.244, 0.191])
    assert (centres - half >= 0).all() and (centres + half <= 2).all() and (centres[:, 1] - half[1] >= 1).all()
    gaps = np.abs(centres[:, None, :] - centres[None, :, :]) - 2 * half
    apart = (gaps > 0).any(axis=2) | np.eye(14, dtype=bool)
    assert apart.all()

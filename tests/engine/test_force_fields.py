"""Blender's field kinds in the engine (engine.fields, engine.backends.cpu_fields, kernels/field_law.h):
each formula against a hand computation from Blender's effect.cc, the GPU's float32 code (compiled for
the host with nvcc) against the numba code, the field's path through the solver, and presets that keep
every field setting."""

from __future__ import annotations

import ctypes
import math
import shutil
import subprocess
import tomllib
from pathlib import Path

import numpy as np
import pytest

from engine.backends.cpu_fields import field_acceleration, turbulence
from engine.backends.gpu_toolchain import KERNEL_DIR
from engine.errors import MochiError
from engine.fields import ForceField, pack_fields
from engine.preset import parse_preset

NATIVE = Path(__file__).resolve().parent / "native"


def _accelerations(fields, points, velocities=None):
    """Numba field accelerations [m/s²] (n, 3) at points [m] (n, 3) for velocities [m/s] (n, 3)."""
    table, grid = pack_fields(tuple(fields))
    table = table.astype(np.float64)
    velocities = np.zeros_like(points) if velocities is None else velocities
    return np.array([field_acceleration(*map(float, p), *map(float, v), table, grid)
                     for p, v in zip(np.asarray(points, float), np.asarray(velocities, float))])


def test_force_field_pushes_away_with_blender_falloff():
    """Blender: force = normalize(x − c) × strength × (1 + d − d_min)^(−power), 1 inside d_min, 0 beyond d_max."""
    field = ForceField(kind="force", center=(1, 0, 0), axis=(0, 0, 1), strength=3.0, falloff_power=2.0,
                       min_distance=0.5, max_distance=4.0)
    a = _accelerations([field], np.array([[1.3, 0, 0], [1, 2.0, 0], [1, 0, -3.0], [6.0, 0, 0]]))
    assert np.allclose(a[0], [3.0, 0, 0])  # inside min distance: full strength
    assert np.allclose(a[1], [0, 3.0 * (1 + 2.0 - 0.5) ** -2, 0])
    assert np.allclose(a[2], [0, 0, -3.0 * (1 + 3.0 - 0.5) ** -2])
    assert np.allclose(a[3], 0.0)  # beyond max distance
    attract = _accelerations([ForceField(kind="force", center=(0, 0, 0), strength=-2.0)], np.array([[0, 0, 5.0]]))
    assert np.allclose(attract[0], [0, 0, -2.0])


def test_plane_force_and_wind_use_the_distance_from_the_plane():
    wind = ForceField(kind="wind", center=(0, 0, 1), axis=(0, 0, 2), strength=4.0, shape="plane", falloff_power=1.0)
    a = _accelerations([wind], np.array([[5.0, -3, 1.0], [0, 0, 3.0], [9, 9, -1.0]]))
    assert np.allclose(a, [[0, 0, 4.0], [0, 0, 4.0 / 3.0], [0, 0, 4.0 / 3.0]])
    plane = ForceField(kind="force", center=(0, 0, 0), axis=(0, 0, 1), strength=1.0, shape="plane")
    assert np.allclose(_accelerations([plane], np.array([[3.0, 4, -2.0]])), [[0, 0, -1.0]])


def test_z_direction_limits_the_field_to_one_side():
    field = ForceField(kind="wind", axis=(0, 0, 1), strength=1.0, z_direction="positive")
    a = _accelerations([field], np.array([[0, 0, 0.5], [0, 0, -0.5]]))
    assert np.allclose(a, [[0, 0, 1.0], [0, 0, 0.0]])


def test_flow_damps_velocity_towards_the_wind_speed():
    """Blender's flow: a = strength n − flow v, so a wind carries grains at strength / flow."""
    field = ForceField(kind="wind", axis=(1, 0, 0), strength=2.0, flow=0.5)
    a = _accelerations([field], np.zeros((2, 3)), np.array([[4.0, 0, 0], [0, 2.0, 0]]))
    assert np.allclose(a, [[0, 0, 0], [2.0, -1.0, 0]])


def test_blender_vortices():
    """Point vortex: s |r| along axis × r; plane vortex: ω × (ω × r) + ω × r − v with ω = s axis."""
    point = ForceField(kind="vortex", axis=(0, 0, 1), strength=2.0, profile="blender_point")
    assert np.allclose(_accelerations([point], np.array([[1.0, 0, 1.0]])), [[0, 2.0 * math.sqrt(2.0), 0]])
    plane = ForceField(kind="vortex", axis=(0, 0, 1), strength=2.0, profile="blender_plane", shape="plane")
    a = _accelerations([plane], np.array([[0.5, 0, 3.0]]), np.array([[0.1, 0.2, 0.3]]))
    assert np.allclose(a, [[-4.0 * 0.5 - 0.1, 2.0 * 0.5 - 0.2, -0.3]])
    # A grain turning at the vortex's rate on its circle stays on it: only the centripetal term is left.
    steady = _accelerations([plane], np.array([[0.5, 0, 0]]), np.array([[0, 1.0, 0]]))
    assert np.allclose(steady, [[-2.0, 0, 0]])


def test_turbulence_is_deterministic_bounded_and_seeded():
    points = np.random.default_rng(0).uniform(-3, 3, (400, 3))
    field = ForceField(kind="turbulence", strength=5.0, size=0.7, seed=3)
    a = _accelerations([field], points)
    assert np.array_equal(a, _accelerations([field], points))
    assert np.abs(a).max() <= 5.0 and np.abs(a).max() > 1.0 and abs(a.mean()) < 1.0
    assert not np.allclose(a, _accelerations([ForceField(kind="turbulence", strength=5.0, size=0.7, seed=4)], points))
    # Continuous: two points 1e-4 sizes apart differ by little.
    near = _accelerations([field], points + 1e-4 * 0.7)
    assert np.abs(near - a).max() < 5.0 * 0.05
    # Zero on the lattice (gradient noise), for the coarsest octave's node at the centre.
    assert turbulence(0.0, 0.0, 0.0, 7) == 0.0


def test_rankine_vortex_unchanged_by_default_falloff():
    field = ForceField(kind="vortex", axis=(0, 1, 0), strength=2.0, core_radius=0.5)
    a = _accelerations([field], np.array([[0.25, 0, 0], [1.0, 3, 0]]))
    assert np.allclose(a, [[0, 0, -1.0], [0, 0, -1.0]])


@pytest.fixture(scope="module")
def field_host(tmp_path_factory):
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        pytest.skip("nvcc is not installed")
    out = tmp_path_factory.mktemp("field_host") / "field_host.so"
    result = subprocess.run([nvcc, "-x", "c++", "-std=c++17", "-O2", "-shared", "-Xcompiler",
                             "-fPIC,-ffp-contract=off,-Wall,-Werror", f"-I{NATIVE}", f"-I{KERNEL_DIR}", "-o", str(out),
                             str(NATIVE / "field_host.cpp")], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    library = ctypes.CDLL(str(out))
    p = ctypes.c_void_p
    library.dem_field_acceleration_host.argtypes = [p, ctypes.c_int, p, p, ctypes.c_int, p]
    return library


def test_gpu_field_code_matches_the_cpu_to_float32_rounding(field_host, tmp_path):
    rng = np.random.default_rng(5)
    np.save(tmp_path / "s.npy", rng.normal(size=(3, 4, 5, 3)).astype(np.float32))
    fields = (ForceField(kind="vortex", center=(0.1, 0, 0), axis=(0, 1, 0), strength=2.0, core_radius=0.3,
                         falloff_power=1.0, max_distance=2.5),
              ForceField(kind="vortex", axis=(0.2, 0, 1), strength=1.5, profile="blender_point", z_direction="negative"),
              ForceField(kind="vortex", axis=(0, 0, 1), strength=0.7, profile="blender_plane", shape="plane", flow=0.3),
              ForceField(kind="force", center=(0, 0.5, 0), strength=-3.0, falloff_power=2.0, min_distance=0.2),
              ForceField(kind="force", axis=(1, 1, 0), strength=1.0, shape="plane"),
              ForceField(kind="wind", axis=(0, 1, 1), strength=2.0, shape="plane", falloff_power=0.5, flow=1.0),
              ForceField(kind="turbulence", center=(0.3, -0.2, 0.1), strength=4.0, size=0.35, seed=9,
                         falloff_power=1.0),
              ForceField(kind="sampled", path=str(tmp_path / "s.npy"), lo=(-1, -1, -1), hi=(1, 1, 1), strength=0.5))
    table, grid = pack_fields(fields)
    points = np.concatenate([rng.uniform(-2, 2, (500, 3)), rng.normal(scale=2.0, size=(500, 3))], axis=1)
    points = points.astype(np.float32)
    gpu = np.zeros((len(points), 3), np.float32)
    field_host.dem_field_acceleration_host(table.ctypes.data, len(table), grid.ctypes.data, points.ctypes.data,
                                           len(points), gpu.ctypes.data)
    cpu = _accelerations(fields, points[:, :3].astype(np.float64), points[:, 3:].astype(np.float64))
    scale = np.abs(cpu).max(axis=1, keepdims=True) + 1.0
    assert (np.abs(gpu - cpu) / scale).max() < 2e-5


PRESET = """
[[fields]]
type = "force"
center = [0, 1, 0]
axis = [0, 1, 0]
strength = -2.5
falloff_power = 1.5
min_distance = 0.1
max_distance = 3.0
shape = "plane"
z_direction = "positive"
flow = 0.2

[[fields]]
type = "turbulence"
strength = 1.0
size = 0.25
seed = 42

[[emitters]]
type = "box"
count = 10
lo = [0.2, 0.2, 0.2]
hi = [0.8, 0.8, 0.8]
radius = 0.01
"""


def test_preset_keeps_every_field_setting(tmp_path):
    import tomli_w

    from engine.preset_writer import write_preset

    preset = parse_preset(tomllib.loads(PRESET), str(tmp_path / "a.toml"))
    force, turb = (ForceField(**f) for f in preset.fields)
    assert (force.shape, force.z_direction, force.flow, force.falloff_power) == ("plane", "positive", 0.2, 1.5)
    assert (turb.size, turb.seed) == (0.25, 42)
    document = tomllib.loads(PRESET)
    path = write_preset(tmp_path / "b.toml", document, {})
    again = parse_preset(tomllib.loads(path.read_text()), str(path))
    assert again.fields == preset.fields
    assert tomli_w.dumps(document)
    with pytest.raises(MochiError, match="shape"):
        parse_preset(tomllib.loads(PRESET.replace('"plane"', '"tube"')), "c.toml")
    with pytest.raises(MochiError, match="profile"):
        parse_preset(tomllib.loads(PRESET.replace('seed = 42', 'profile = "swirl"')), "d.toml")


def test_a_bake_with_blender_fields_resumes_bit_identical(tmp_path):
    """Velocity-dependent fields (flow, the plane vortex) and turbulence read only the cached state: a
    resumed bake equals an uninterrupted one, byte for byte."""
    import dataclasses

    from engine.bake import BakeProgress, bake
    from engine.preset import load_preset
    from engine.scene import setup_from_preset

    preset = load_preset(Path(__file__).resolve().parents[2] / "presets" / "sand_pile.toml")
    fields = ({"kind": "wind", "axis": (1.0, 0.0, 0.0), "strength": 3.0, "flow": 0.5},
              {"kind": "vortex", "center": (0.5, 0.0, 0.5), "strength": 2.0, "profile": "blender_plane",
               "shape": "plane"},
              {"kind": "turbulence", "strength": 4.0, "size": 0.1, "seed": 3})
    preset = dataclasses.replace(preset, fields=tuple(fields))

    def frames(folder):
        return {p.name: p.read_bytes() for p in sorted(folder.glob("frame_*.ply"))}

    bake(setup_from_preset(preset, particles=150), tmp_path / "full", frames=4)
    progress = BakeProgress()

    def cancel_after_frame_2(p):
        if p.frames_done == 2:
            p.request_cancel()

    bake(setup_from_preset(preset, particles=150), tmp_path / "part", frames=4, progress=progress,
         on_frame=cancel_after_frame_2)
    assert progress.cancelled
    bake(None, tmp_path / "part", frames=4, resume=True)
    assert frames(tmp_path / "part") == frames(tmp_path / "full")
    assert frames(tmp_path / "full")["frame_0004.ply"] != frames(tmp_path / "full")["frame_0001.ply"]

"""Small scenes shared by the engine tests (kept tiny: CI has 2 cores)."""

from __future__ import annotations

import os
import shutil
import subprocess

import numpy as np
import pytest

from engine.model import Domain, Gravity, Material
from engine.neighbors.brute import brute_force_pairs, near_ties  # noqa: F401  (older imports from here)
from engine.scene import setup_from_arrays


def scene(positions, radius, *, velocities=None, gravity=(0.0, 0.0, 0.0), lo=(-1.0, -1.0, -1.0),
          hi=(1.0, 1.0, 1.0), open_sides=(), restitution=0.5, friction=0.0, density=2500.0,
          stiffness=1.0e4, dt=None, substeps=None, fps=25.0, wall_restitution=None, wall_friction=None,
          rebuild_interval=10, rotation=True, integrator="verlet", rolling_friction=0.0, cohesion=0.0):
    """A SceneSetup with one material and explicit physics (walls: the material's rolling friction and
    cohesion too)."""
    material = Material(name="m", density=density, restitution=restitution, friction=friction,
                        rolling_friction=rolling_friction, cohesion=cohesion)
    domain = Domain(lo=tuple(lo), hi=tuple(hi), open_sides=tuple(open_sides),
                    wall_restitution=restitution if wall_restitution is None else wall_restitution,
                    wall_friction=friction if wall_friction is None else wall_friction,
                    wall_rolling_friction=rolling_friction, wall_cohesion=cohesion)
    return setup_from_arrays(positions=np.asarray(positions, np.float32), radius=np.asarray(radius, np.float32),
                             velocities=None if velocities is None else np.asarray(velocities, np.float32),
                             materials=(material,), domain=domain, gravity=Gravity(vector=tuple(gravity)),
                             dt=dt, substeps=substeps, stiffness=stiffness, fps=fps,
                             rebuild_interval=rebuild_interval, rotation=rotation, integrator=integrator)


@pytest.fixture(scope="session")
def rt_device():
    """The Vulkan ray-tracing device of the rt tests (one for the session), or a skip with the reason."""
    from engine.backends.rt_device import open_rt_device
    from engine.errors import MochiError

    try:
        return open_rt_device("vulkan")
    except MochiError as exc:  # no slangpy, or no Vulkan driver with ray tracing (Mesa < 24.1)
        pytest.skip(str(exc))


@pytest.fixture
def rng():
    return np.random.default_rng(12345)


@pytest.fixture
def small_tmpfs(tmp_path):
    """``small_tmpfs("64k")``: a folder on a tmpfs of that size (a full disk on demand), unmounted after
    the test; skips where mounting needs rights this process lacks (root only)."""
    mounts = []

    def mount(size: str):
        if os.geteuid() != 0 or not shutil.which("mount"):
            pytest.skip("mounting a small tmpfs needs root")
        folder = tmp_path / f"tmpfs{len(mounts)}"
        folder.mkdir()
        if subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
                          capture_output=True).returncode != 0:
            pytest.skip("this machine does not allow mounting a tmpfs")
        mounts.append(folder)
        return folder

    yield mount
    for folder in mounts:
        subprocess.run(["umount", "-l", str(folder)], check=False)

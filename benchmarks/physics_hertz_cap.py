"""Issue 41 point 8: does a 20° oblique Hertz impact converge as dt shrinks, with each friction cap?

One grain (r = 5 mm, E = 5 MPa, ν = 0.3, ρ = 2500 kg/m³, e = 0.7, μ = 0.3) hits a wall of its own material
at 1 m/s, 20° from the normal (benchmarks/physics_hertz.py's oblique case), on the CPU backend with rotation
and velocity Verlet, no gravity; the spin ω [rad/s] after the rebound (rolling along +x) is read at
dt = t_c/N, t_c = 2.87 (m²/(R* E*² v))^(1/5) the Hertz contact time, for N = 10 … 50,000, with each cap of
engine.contact_law.FRICTION_CAPS, and with the linear law (k = 2000 N/m, the default cap) for comparison.

Run: ``PYTHONPATH=. python benchmarks/physics_hertz_cap.py`` (about a minute after numba's compile) → JSON
in benchmarks/results/physics_hertz_cap.json and a Markdown table on stdout (docs/physics.md).
tests/engine/test_hertz_friction_convergence.py runs the same impact at three dt.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

YOUNGS, POISSON, DENSITY, RADIUS = 5.0e6, 0.3, 2500.0, 0.005  # [Pa], [1], [kg/m³], [m]
THETA = math.radians(20.0)  # impact angle from the wall's normal
DIVISIONS = (10, 50, 200, 1000, 5000, 20000, 50000)
LINEAR_STIFFNESS = 2000.0  # [N/m], the linear law's comparison row
LINEAR_DIVISIONS = (200, 1000, 5000)


def contact_time() -> float:
    """Hertz's duration of the impact [s] (grain against a wall of its own material, at 1 m/s)."""
    mass = DENSITY * 4.0 / 3.0 * math.pi * RADIUS ** 3
    e_star = 1.0 / (2.0 * (1.0 - POISSON ** 2) / YOUNGS)
    return 2.87 * (mass * mass / (RADIUS * e_star ** 2)) ** 0.2


def impact_setup(dt: float | None, cap: str, *, wall_youngs: float = YOUNGS, normal: str = "hertz"):
    """The scene: the grain a hair above the floor (y = 0), moving at 1 m/s, THETA from the normal.

    Args:
        dt: Time step [s], None for 'auto'.
        cap: One of engine.contact_law.FRICTION_CAPS.
        wall_youngs: The walls' Young's modulus [Pa].
        normal: 'hertz', or 'hooke' (stiffness LINEAR_STIFFNESS).
    """
    from engine.model import Domain, Gravity, Material
    from engine.scene import setup_from_arrays

    material = Material(density=DENSITY, restitution=0.7, friction=0.3, youngs_modulus=YOUNGS,
                        poisson_ratio=POISSON)
    domain = Domain(lo=(-0.1, 0.0, -0.1), hi=(0.1, 0.1, 0.1), wall_restitution=0.7, wall_friction=0.3,
                    wall_youngs_modulus=wall_youngs, wall_poisson_ratio=POISSON)
    linear = {"stiffness": LINEAR_STIFFNESS} if normal == "hooke" else {}
    return setup_from_arrays(
        positions=np.array([[0.0, RADIUS + 1e-9, 0.0]], np.float32), radius=np.array([RADIUS], np.float32),
        velocities=np.array([[math.sin(THETA), -math.cos(THETA), 0.0]], np.float32), materials=(material,),
        domain=domain, gravity=Gravity(vector=(0.0, 0.0, 0.0)), dt=dt, rotation=True, integrator="verlet",
        contact_normal=normal, friction_cap=cap, **linear)


def rebound_spin(cap: str, divisions: int, *, normal: str = "hertz") -> float:
    """Spin ω [rad/s] (rolling along +x) once the grain has left the wall, at dt = t_c / divisions."""
    from engine.backends.cpu import BackendCpu

    setup = impact_setup(contact_time() / divisions, cap, normal=normal)
    backend = BackendCpu(setup.model)
    backend.set_state(setup.state)
    backend.step(math.ceil(1.5 * divisions))  # the contact lasts t_c
    return -float(backend.get_state().angular_velocities[0][2])


def main() -> None:
    from engine.contact_law import FRICTION_CAPS

    rows = {cap: {n: rebound_spin(cap, n) for n in DIVISIONS} for cap in FRICTION_CAPS}
    linear = {n: rebound_spin("clipped", n, normal="hooke") for n in LINEAR_DIVISIONS}
    result = {"contact_time_s": contact_time(), "spin_rad_s": rows, "linear_clipped_spin_rad_s": linear,
              "command": "PYTHONPATH=. python benchmarks/physics_hertz_cap.py"}
    out = REPO / "benchmarks" / "results" / "physics_hertz_cap.json"
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(f"t_c = {contact_time():.4g} s; {out.relative_to(REPO)}")
    print("| N (dt = t_c/N) | " + " | ".join(f"{n:,}" for n in DIVISIONS) + " |")
    print("|---|" + "---|" * len(DIVISIONS))
    for cap, spins in rows.items():
        print(f"| `\"{cap}\"` | " + " | ".join(f"{spins[n]:.2f}" for n in DIVISIONS) + " |")
    print(f"| linear law (k = {LINEAR_STIFFNESS:g} N/m), `\"clipped\"` | "
          + " | ".join(f"{linear[n]:.2f}" if n in linear else "" for n in DIVISIONS) + " |")


if __name__ == "__main__":
    main()

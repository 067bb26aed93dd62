"""The peer benchmarks' LAMMPS input: Mochi's contact law on a Mochi state, from the engine's one mapping.

The law (``pair_style granular hooke … damping tsuji``, the tangential spring, rolling ``sds``, the walls) is
``engine.lammps.law``'s and the deck's common part ``engine.lammps.deck.setup_lines``, as ``mochi
export-lammps`` writes them; this adds only what the benchmark observes (``physics.observe_and_run``). The
benchmarks run Mochi's own friction cap against LAMMPS' (``resolve_law(exact=False)``): docs/physics.md
states the difference (LAMMPS caps at μ|F_n|, Mochi at μ max(F_n, 0); same work, not the same bits).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from engine.lammps.data_file import write_sphere_data
from engine.lammps.deck import setup_lines
from engine.lammps.law import resolve_law
from engine.model import Model

from .physics import observe_and_run


def write_lammps_run(folder: str | Path, model: Model, positions: np.ndarray, velocities: np.ndarray, *,
                     steps: int, skin: float) -> str:
    """Write ``folder``/data.mochi and return the input script running ``steps`` steps.

    Args:
        folder: Run folder (created).
        model: Mochi model (radii, masses, physics) of the state.
        positions, velocities: The state [m], [m/s], shape (particle_count, 3).
        steps: Steps to run.
        skin: Neighbour skin [m] (``neighbor skin bin``, rebuilt when any grain moved half of it).

    The last thermo line holds step, atoms, total kinetic energy [J] (c_ke) and contact count
    (c_contacts: pairs of touching grains, walls excluded).

    Raises:
        MochiError: the model uses what LAMMPS cannot run (``engine.lammps.law.unmappable``).
    """
    law = resolve_law(model, exact=False)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    box_lo, box_hi = law.box()
    density = np.array([m.density for m in model.physics.materials], np.float64)[model.material_index]
    write_sphere_data(folder / "data.mochi", positions, model.radius, density, box_lo, box_hi,
                      material_index=model.material_index, velocities=velocities,
                      type_count=len(model.physics.materials))
    return ("# Mochi state and physics (benchmarks/peers/lammps_input.py, engine/lammps)\n"
            + setup_lines(law, data_name="data.mochi", skin=skin) + observe_and_run(steps))

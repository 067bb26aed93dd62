"""numba kernels of the CPU backend, by concept; each has one launcher in ``engine.backends.cpu``.

All kernels are ``nogil`` so the Blender add-on can run a bake in a worker thread, and parallel loops
are over particles with every particle's sums taken in a fixed order, so results are identical for any
thread count (same seed, same bits). Arrays are stored float32 (positions, velocities, radii, masses)
and arithmetic is float64 inside the kernels.

Neighbour structure: a Verlet list with a skin. ``nbr_start``/``nbr_j`` is a CSR half list (each
candidate pair once, in the row of the particle whose cell comes first) of pairs closer than
r_i + r_j + skin; ``rev_start``/``rev_pair``
is its transpose (for particle j, the list entries p with nbr_j[p] == j) so the reaction forces are
gathered without atomics.

Where they live: ``cpu_kernels_cells`` (binning, sorting, the list's transpose and bookkeeping),
``cpu_kernels_law`` (the grain–grain contact law and the loops over the list), ``cpu_kernels_motion``
(walls and integrators), ``cpu_kernels_bodies`` (glue bonds and rigid clumps); ``cpu_fused`` fuses
the paper model's step into one pass and ``cpu_fields`` holds the force fields. This module gathers
their names, so launchers call ``cpu_kernels.<name>`` without knowing which file holds it.

The contact law is written once (``cpu_kernels_law.make_contact_law``) and compiled per physics: the
paper's non-rotating Euler model is its flags-off instance, and keeps loops of its own (``pair_forces``,
``wall_forces``, ``integrate``, and the fused step) so that it keeps its bits; the ``*_full`` kernels
serve every other setting. Per-entry history is one (P, 6) array: tangential spring ξ in
columns 0–2, rolling spring ξ_r in 3–5 [m].
"""

from __future__ import annotations

from ..kernel_options import KERNEL_OPTIONS
from .cpu_kernels_cells import (_cell_coord, active_bounds, assign_cells, contact_flags, counting_sort, gather_sorted,
                                max_displacement_squared, max_speed_squared, remap_history, take_rows, transpose_pairs)
from .cpu_kernels_law import (_contact, contact_along, contact_law_full, contact_law_paper, gather_reactions,
                              gather_torques, make_contact_law, pair_force_from, pair_forces, pair_forces_full,
                              pair_full_of)
from .cpu_kernels_motion import (_exit_and_displacement, _field_acceleration, _turn, _wall_sum, _wall_sum_full,
                                 advance, drift, integrate, kick, kick_one, mark_interior, wall_candidate,
                                 wall_forces, wall_forces_full)
from .cpu_kernels_bodies import (_clump_omega, _rotation_matrix, bond_forces, clump_step, mark_bonded)

__all__ = [
    "KERNEL_OPTIONS", "_cell_coord", "active_bounds", "assign_cells", "contact_flags", "counting_sort",
    "gather_sorted", "max_displacement_squared", "max_speed_squared", "remap_history", "take_rows",
    "transpose_pairs", "_contact", "contact_law_full", "contact_law_paper", "make_contact_law", "contact_along",
    "gather_reactions", "gather_torques", "pair_force_from", "pair_forces", "pair_forces_full", "pair_full_of",
    "_exit_and_displacement", "_field_acceleration", "_turn", "_wall_sum", "_wall_sum_full", "advance", "drift",
    "integrate", "kick", "kick_one", "mark_interior", "wall_candidate", "wall_forces", "wall_forces_full",
    "_clump_omega", "_rotation_matrix", "bond_forces", "clump_step", "mark_bonded"
]

"""Glue bonds between the grains of a glued body (issue 16 §4, docs/physics.md).

Bonds are made once, from the initial positions, between two grains of the same glued object whose
gap is at most ``BOND_REACH`` of their radii: d ≤ (r_i + r_j)(1 + BOND_REACH). The list is static
(part of the ``Model``: a resumed bake rebuilds it from frame 1); what changes (shear displacement,
intact flag) is state the backend keeps and the exact-resume history stores.

Bond law (parallel bond of Potyondy & Cundall 2004, without bending moment), per bond of rest length
d0, radius r_b = min(r_i, r_j), area A_b = π r_b², normal stiffness per area k_bn:

    force on i = −k_bn A_b (d − d0) n − 2β sqrt(m_eff k_bn A_b) v_n n − k_bt A_b ξ_b,  k_bt = 2/7 k_bn
    ξ_b ← ξ_b − (ξ_b·n) n + v_t dt   (v_t the slip of the contact point, as for a contact)

It breaks, for good, when the tensile stress k_bn (d − d0) or the shear stress k_bt |ξ_b| exceeds the
glue strength σ_b. While a bond is intact the ordinary contact of its pair is skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .errors import MochiError
from .settings_schema import SOURCE_CHOICES, setting

#: How the grains packed from one source object move: each on its own, glued by breakable bonds, or
#: as one rigid body.
BODY_KINDS = next(c for c in SOURCE_CHOICES if c.key == "body").choice_keys()


@dataclass(frozen=True)
class Body:
    """How the grains of one source object hold together (issue 16 §4).

    Attributes:
        object_id: The source object (``Model.object_id``) this applies to.
        kind: 'loose' (independent grains), 'glued' (bonds between touching grains, made once at the
            start, that break under stress and stay broken) or 'rigid' (one rigid clump).
        glue_strength: Stress σ_b at which a bond breaks, in tension or shear [Pa].
        glue_stiffness: Bond normal stiffness per area k_bn [N/m³]; 0 picks k / A_b per bond, so a
            bond is as stiff as a contact.
    """

    object_id: int = 0
    kind: str = "loose"
    glue_strength: float = setting("glue_strength").default
    glue_stiffness: float = setting("glue_stiffness").default


#: Largest gap bridged by a bond, as a fraction of r_i + r_j.
BOND_REACH = 0.05


@dataclass(frozen=True, eq=False)
class Bonds:
    """The static bond list.

    Attributes:
        pairs: (i, j) with i < j, sorted, int32 (B, 2).
        rest: Rest length d0 [m], float64 (B,).
        area: Bond cross-section A_b = π min(r_i, r_j)² [m²], float64 (B,).
        stiffness: Normal stiffness per area k_bn [N/m³], float64 (B,).
        strength: Break stress σ_b [Pa], float64 (B,).
    """

    pairs: np.ndarray
    rest: np.ndarray
    area: np.ndarray
    stiffness: np.ndarray
    strength: np.ndarray

    @property
    def count(self) -> int:
        return int(self.pairs.shape[0])


def check_bodies(bodies: tuple[Body, ...]) -> None:
    """Raises MochiError for an unknown kind, a negative strength or stiffness, or an object twice."""
    seen = set()
    for body in bodies:
        if body.kind not in BODY_KINDS:
            raise MochiError(f"Object {body.object_id} has body '{body.kind}'; use one of {', '.join(BODY_KINDS)}.")
        if not (body.glue_strength > 0 and math.isfinite(body.glue_strength)) or not body.glue_stiffness >= 0:
            raise MochiError(f"Object {body.object_id} needs a positive glue strength and a glue stiffness ≥ 0.")
        if body.object_id in seen:
            raise MochiError(f"Object {body.object_id} is given a body twice.")
        seen.add(body.object_id)


def make_bonds(positions: np.ndarray, radius: np.ndarray, object_id: np.ndarray, bodies: tuple[Body, ...],
               contact_stiffness: float) -> Bonds | None:
    """Bonds of every glued body, or None when there is none.

    Args:
        positions: Initial centres [m], (n, 3); radius: (n,) [m]; object_id: (n,) int.
        contact_stiffness: k [N/m], for glue_stiffness 0 (k_bn = k / A_b).
    """
    from scipy.spatial import cKDTree

    check_bodies(bodies)
    glued = [b for b in bodies if b.kind == "glued"]
    if not glued:
        return None
    x = np.asarray(positions, np.float64)
    r = np.asarray(radius, np.float64)
    pairs, rest, area, stiffness, strength = [], [], [], [], []
    for body in glued:
        members = np.flatnonzero(np.asarray(object_id) == body.object_id)
        if members.size < 2:
            continue
        tree = cKDTree(x[members])
        candidates = tree.query_pairs(2.0 * r[members].max() * (1.0 + BOND_REACH), output_type="ndarray")
        if candidates.size == 0:
            continue
        i, j = members[candidates[:, 0]], members[candidates[:, 1]]
        d = np.linalg.norm(x[i] - x[j], axis=1)
        keep = d <= (r[i] + r[j]) * (1.0 + BOND_REACH)
        i, j, d = i[keep], j[keep], d[keep]
        a = math.pi * np.minimum(r[i], r[j]) ** 2
        pairs.append(np.stack([np.minimum(i, j), np.maximum(i, j)], 1))
        rest.append(d)
        area.append(a)
        stiffness.append(contact_stiffness / a if body.glue_stiffness == 0 else np.full(a.shape, body.glue_stiffness))
        strength.append(np.full(a.shape, body.glue_strength))
    if not pairs:
        return None
    pairs = np.concatenate(pairs).astype(np.int32)
    order = np.lexsort((pairs[:, 1], pairs[:, 0]))
    return Bonds(pairs=np.ascontiguousarray(pairs[order]), rest=np.concatenate(rest)[order],
                 area=np.concatenate(area)[order], stiffness=np.concatenate(stiffness)[order],
                 strength=np.concatenate(strength)[order])


def bond_rows(bonds: Bonds, particle_count: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every bond in the rows of both its grains: (start int64 (n+1,), other int32, bond int64)."""
    i, j = bonds.pairs[:, 0], bonds.pairs[:, 1]
    rows = np.concatenate([i, j])
    other = np.concatenate([j, i]).astype(np.int32)
    index = np.concatenate([np.arange(bonds.count), np.arange(bonds.count)]).astype(np.int64)
    order = np.argsort(rows, kind="stable")
    start = np.zeros(particle_count + 1, np.int64)
    np.cumsum(np.bincount(rows, minlength=particle_count), out=start[1:])
    return start, other[order], index[order]


def bonds_per_particle(bonds: Bonds | None, intact: np.ndarray | None, particle_count: int) -> np.ndarray:
    """Intact bonds of each grain, uint8 (n,) (saturating at 255), for the cache's ``bonds`` column."""
    if bonds is None or bonds.count == 0:
        return np.zeros(particle_count, np.uint8)
    live = bonds.pairs[intact.astype(bool)]
    counts = np.bincount(live.ravel(), minlength=particle_count)
    return np.minimum(counts, 255).astype(np.uint8)


# --- rigid clumps ---------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Clumps:
    """Rigid bodies made of grains (issue 16 §4): static data, in the body frame (= the world frame at
    the start, orientation identity).

    Attributes:
        clump: Clump of each particle, −1 for none, int32 (n,).
        start, members: CSR member lists, int64 (C+1,) and int32 (M,).
        offset: Position of each member relative to its clump's centre of mass in the body frame [m],
            float64 (n, 3) (0 for grains in no clump).
        mass: Clump masses [kg], float64 (C,).
        inertia_inv: Inverse inertia tensors about the centre of mass, body frame [1/(kg m²)],
            float64 (C, 3, 3) (members as solid spheres plus the parallel-axis terms).
    """

    clump: np.ndarray
    start: np.ndarray
    members: np.ndarray
    offset: np.ndarray
    mass: np.ndarray
    inertia_inv: np.ndarray

    @property
    def count(self) -> int:
        return int(self.mass.shape[0])


def make_clumps(positions: np.ndarray, radius: np.ndarray, mass: np.ndarray, object_id: np.ndarray,
                bodies: tuple[Body, ...]) -> Clumps | None:
    """Clumps of every rigid body, or None when there is none."""
    rigid = [b.object_id for b in bodies if b.kind == "rigid"]
    if not rigid:
        return None
    n = positions.shape[0]
    x = np.asarray(positions, np.float64)
    m = np.asarray(mass, np.float64)
    r = np.asarray(radius, np.float64)
    clump = np.full(n, -1, np.int32)
    groups = [np.flatnonzero(np.asarray(object_id) == obj) for obj in sorted(rigid)]
    groups = [g for g in groups if g.size]
    offset = np.zeros((n, 3))
    masses, inverses = [], []
    for c, members in enumerate(groups):
        clump[members] = c
        total = m[members].sum()
        centre = (m[members, None] * x[members]).sum(axis=0) / total
        p = x[members] - centre
        offset[members] = p
        sphere = 0.4 * m[members] * r[members] ** 2
        inertia = np.eye(3) * (sphere.sum() + (m[members] * (p * p).sum(axis=1)).sum()) \
            - np.einsum("i,ij,ik->jk", m[members], p, p)
        masses.append(total)
        inverses.append(np.linalg.inv(inertia))
    start = np.zeros(len(groups) + 1, np.int64)
    np.cumsum([g.size for g in groups], out=start[1:])
    return Clumps(clump=clump, start=start, members=np.concatenate(groups).astype(np.int32), offset=offset,
                  mass=np.array(masses), inertia_inv=np.array(inverses))

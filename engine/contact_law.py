"""The contact law shared by every backend: linear spring-dashpot with Coulomb friction.

For particles i and j with centres x, velocities v, radii r and masses m (walls: m_j = ∞, v_j = 0):

    d      = |x_i − x_j|,  n = (x_i − x_j)/d  (unit, from j to i; (1, 0, 0) when d = 0)
    δ      = r_i + r_j − d                       overlap [m]; contact when δ ≥ 0
    m_eff  = m_i m_j / (m_i + m_j)               [kg]
    v_n    = (v_i − v_j)·n                       negative while approaching [m/s]
    v_t    = (v_i − v_j) − v_n n
    f_n    = k δ − γ_n v_n,   γ_n = 2 β sqrt(m_eff k),  β = −ln e / sqrt(π² + ln² e)
    F_n    = f_n n

Tangential force, friction_model 'spring' (default; Cundall & Strack 1979, as in LIGGGHTS'
tangential_history): an elastic displacement ξ per contact, born at 0 when the pair starts touching,

    ξ      ← ξ − (ξ·n) n + v_t dt                (kept in the current tangent plane)
    F_t    = −k_t ξ − γ_t v_t,   k_t = 2/7 k,  γ_t = 2 β sqrt(m_eff k_t)
    if |F_t| > μ max(f_n, 0):  F_t ← μ max(f_n, 0) F_t/|F_t|,  ξ ← −(F_t + γ_t v_t)/k_t  (sliding)

friction_model 'damper' (history-free, the form a stateless ray-traced pass can evaluate):

    F_t    = −min(γ_d |v_t|, μ max(f_n, 0)) v_t/|v_t|,  γ_d = 2 sqrt(m_eff k)

force on i = F_n + F_t, force on j = −(F_n + F_t). The normal part is the linear spring-dashpot of
Cundall & Strack (1979) with β chosen so an isolated collision restitutes with exactly e (Schwager &
Pöschel, Phys. Rev. E 78, 051304, 2008). The spring gives static friction (a block on a slope below
the friction angle does not move, piles stay); the damper creeps at about g·sinθ/(2ω) on slopes.

Rotation (``Physics.rotation``; off in the paper's model, where ω stays 0). Grains are solid spheres,
I = 2/5 m r². The contact point is at the arm R_i = r_i − δ/2 from i (along −n) and R_j = r_j − δ/2
from j (along +n), as LAMMPS pair granular's dist-to-contact; a wall is j with ω_j = 0. The tangential
part uses the velocity of the contact point

    v_c    = (v_i − v_j) − (R_i ω_i + R_j ω_j) × n,    v_t = v_c − (v_c·n) n

and F_t gives the torques τ_i = −R_i n × F_t and τ_j = −R_j n × F_t (the reaction −F_t at arm +R_j n).

Rolling resistance (spring–dashpot–slider with history, LAMMPS ``rolling sds``; Luding 2008, Wang
et al. 2015): with R_eff = r_i r_j/(r_i + r_j) (wall: r_i) and μ_r the rolling coefficient,

    v_r    = R_eff (ω_i − ω_j) × n
    ξ_r    ← ξ_r − (ξ_r·n) n + v_r dt
    F_r    = −k_r ξ_r − γ_r v_r,   k_r = k_t,  γ_r = γ_t
    if |F_r| > μ_r max(f_n, 0):  F_r ← μ_r max(f_n, 0) F_r/|F_r|,  ξ_r ← −(F_r + γ_r v_r)/k_r
    τ_i   += R_eff n × F_r,   τ_j −= R_eff n × F_r        (a torque only, no force)

ξ changes sign when i and j swap (v_c does), ξ_r does not (ω_i − ω_j and n both flip).

Cohesion (SJKR, LIGGGHTS ``cohesion sjkr``): an attractive normal force c·A while in contact, A the
area of the overlap's contact disc

    A      = π/4 (r_i + r_j − d)(d + r_i − r_j)(d − r_i + r_j)(d + r_i + r_j) / d²,   wall: π(2 r_i δ − δ²)
    f_n   ← f_n − c A

The friction and rolling caps use f_n without the cohesive part (as LAMMPS/LIGGGHTS do). With this
linear spring the net normal force is (k − 2π R_eff c) δ + O(δ²), so cohesion binds only above
c = k/(2π R_eff) (docs/physics.md).

Hertz–Mindlin (``Physics.contact_normal`` 'hertz'; LIGGGHTS ``model hertz tangential history``, the
default of engineering DEM): the stiffnesses grow with the contact's size, from each material's Young's
modulus E and Poisson's ratio ν, mixed per pair as LIGGGHTS does,

    E*     = 1 / ((1 − ν_i²)/E_i + (1 − ν_j²)/E_j),   G* = 1 / (2(2 − ν_i)(1 + ν_i)/E_i + 2(2 − ν_j)(1 + ν_j)/E_j)
    s      = sqrt(R* δ),   R* = r_i r_j/(r_i + r_j)  (wall: r_i; a wall has E and ν of its own)
    k_n    = 4/3 E* s,     γ_n = 2 sqrt(5/6) β sqrt(2 E* s m_eff)      f_n = k_n δ − γ_n v_n
    k_t    = 8 G* s,       γ_t = 2 sqrt(5/6) β sqrt(k_t m_eff)         (Mindlin; replaces 2/7 k)

(the damping is Tsuji's form, as LIGGGHTS writes it, β from e as above), the rolling spring takes k_t
and γ_t as with the linear law, and everything else (caps, arms, cohesion, the damper) is unchanged.
With the √(5/6) factor, an isolated impact restitutes e (measured: within 0.02% for e = 0.3–0.95) at
every impact speed (tests/engine/test_hertz.py).

Pair properties come from the two materials: e, μ and μ_r are averaged, c is the smaller of the two. ``pair_tables`` precomputes β and
μ for every material pair so kernels only do a table look-up; ``hertz_tables`` E* and G*.
"""

from __future__ import annotations

import math

import numpy as np

from .model import Material
from .settings_schema import model_setting

#: k_t / k of the tangential spring (2/7, Hertz–Mindlin's ratio for a Poisson ratio near 0.25).
TANGENTIAL_STIFFNESS_RATIO = 2.0 / 7.0


#: √(5/6), the factor of the Tsuji damping in the Hertz–Mindlin law (LIGGGHTS' ``sqrtFiveOverSix``).
SQRT_FIVE_SIXTHS = math.sqrt(5.0 / 6.0)

#: The normal laws a scene may choose (``Physics.contact_normal``; engine.settings_schema defines them).
CONTACT_NORMAL_LAWS = model_setting("contact_normal").choice_keys()

#: The friction caps a scene may choose (``Physics.friction_cap``; docs/physics.md compares them), in the
#: order of their codes in the law tables: 'clipped' (Mochi's: spring and damping together capped at
#: μ max(f_n, 0)), 'absolute' (LAMMPS': the same capped at μ |f_n|), 'spring' (LIGGGHTS': the spring alone
#: capped at μ |f_n|, the tangential damping acting only while the contact sticks). engine.settings_schema
#: defines them, in that order.
FRICTION_CAPS = model_setting("friction_cap").choice_keys()


def effective_moduli(youngs_i: float, poisson_i: float, youngs_j: float, poisson_j: float) -> tuple[float, float]:
    """(E*, G*) [Pa] of a contact between two materials of Young's moduli E [Pa] and Poisson's ratios ν."""
    youngs = 1.0 / ((1.0 - poisson_i ** 2) / youngs_i + (1.0 - poisson_j ** 2) / youngs_j)
    shear = 1.0 / (2.0 * (2.0 - poisson_i) * (1.0 + poisson_i) / youngs_i
                   + 2.0 * (2.0 - poisson_j) * (1.0 + poisson_j) / youngs_j)
    return youngs, shear


def check_hertz_materials(materials: tuple[Material, ...], domain) -> None:
    """Refuse a Young's modulus or Poisson's ratio Hertz–Mindlin cannot use, naming the material (or walls).

    Raises:
        MochiError: E not a finite number > 0 [Pa], or ν outside [0, 0.5).
    """
    from .errors import MochiError

    owners = [(f"material '{m.name}'", m.youngs_modulus, m.poisson_ratio) for m in materials]
    owners.append(("walls", domain.wall_youngs_modulus, domain.wall_poisson_ratio))
    for owner, youngs, poisson in owners:
        if not (math.isfinite(youngs) and youngs > 0.0):
            raise MochiError(f"The Young's modulus of the {owner} must be a finite number above 0 Pa for the Hertz "
                             f"contact law, not {youngs!r}.")
        if not (math.isfinite(poisson) and 0.0 <= poisson < 0.5):
            raise MochiError(f"The Poisson's ratio of the {owner} must be at least 0 and below 0.5, not {poisson!r}.")


def hertz_tables(materials: tuple[Material, ...], wall_youngs: float, wall_poisson: float
                 ) -> tuple[np.ndarray, np.ndarray]:
    """E* and G* [Pa] per material pair, float64 (M, M, 2), and against the walls and mesh colliders,
    float64 (M, 2) (``effective_moduli``)."""
    count = len(materials)
    pair = np.zeros((count, count, 2), np.float64)
    wall = np.zeros((count, 2), np.float64)
    for a, ma in enumerate(materials):
        wall[a] = effective_moduli(ma.youngs_modulus, ma.poisson_ratio, wall_youngs, wall_poisson)
        for b, mb in enumerate(materials):
            pair[a, b] = effective_moduli(ma.youngs_modulus, ma.poisson_ratio, mb.youngs_modulus, mb.poisson_ratio)
    return pair, wall


def law_tables(physics) -> tuple[np.ndarray, np.ndarray]:
    """What the CPU kernels need beyond the linear law, per material pair (M, M, 3) and against the walls
    and mesh colliders (M, 3), float64: E* [Pa], G* [Pa] (both 0: the linear law of ``physics.stiffness``)
    and the friction cap's index in ``FRICTION_CAPS``. No rows for the linear law with the 'clipped' cap,
    so the kernels skip the look-up."""
    count = len(physics.materials)
    if physics.contact_normal == "hooke" and physics.friction_cap == "clipped":
        return np.zeros((0, 0, 3)), np.zeros((0, 3))
    pair, wall = np.zeros((count, count, 3)), np.zeros((count, 3))
    if physics.contact_normal == "hertz":
        domain = physics.domain
        pair[:, :, :2], wall[:, :2] = hertz_tables(physics.materials, domain.wall_youngs_modulus,
                                                   domain.wall_poisson_ratio)
    pair[:, :, 2] = wall[:, 2] = FRICTION_CAPS.index(physics.friction_cap)
    return pair, wall


#: The friction cap whose tangential force converges as dt shrinks under Hertz–Mindlin. The caps that put
#: the dashpot inside the capped force ('clipped', 'absolute') reset a sliding spring to −(F + γ_t v)/k_t,
#: and γ_t/k_t ∝ δ^(−1/4) grows without bound at the first touch (k_t ∝ √δ), so the smaller dt, the
#: shallower the first step's contact and the longer the spring it starts with: a 20° oblique impact's
#: spin keeps growing as dt shrinks (docs/physics.md; tests/engine/test_hertz_friction_convergence.py).
#: The linear law's k_t is constant, and every cap converges there.
HERTZ_CONVERGED_CAP = "spring"


def friction_cap_notes(physics) -> tuple[str, ...]:
    """The sentence for a Hertz scene whose friction cap does not converge in dt (``HERTZ_CONVERGED_CAP``),
    or none."""
    if physics.contact_normal != "hertz" or physics.friction_cap == HERTZ_CONVERGED_CAP:
        return ()
    return (f"With the Hertz contact law the friction cap '{physics.friction_cap}' depends on dt (an oblique "
            "impact's spin keeps growing as dt shrinks); [contact] friction_cap = "
            f"\"{HERTZ_CONVERGED_CAP}\" converges (docs/physics.md).",)


def largest_youngs_modulus(physics) -> float | None:
    """The largest Young's modulus [Pa] of the grains and walls of a Hertz scene (what sets its dt), or None
    for the linear law."""
    if physics.contact_normal != "hertz":
        return None
    return max([m.youngs_modulus for m in physics.materials] + [physics.domain.wall_youngs_modulus])


def contact_coefficients(stiffness: float, beta: float, m_eff: float, *, shear_modulus: float | None = None,
                         r_eff: float = 0.0, overlap: float = 0.0) -> tuple[float, float, float, float]:
    """(k_n [N/m], γ_n [kg/s], k_t [N/m], γ_t [kg/s]) of one contact.

    Linear law (``shear_modulus`` None): ``stiffness`` is k. Hertz–Mindlin: ``stiffness`` is E* and
    ``shear_modulus`` G* [Pa], at the contact's R* = ``r_eff`` [m] and δ = ``overlap`` [m].
    """
    if shear_modulus is None:
        k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
        return stiffness, 2.0 * beta * math.sqrt(m_eff * stiffness), k_t, 2.0 * beta * math.sqrt(m_eff * k_t)
    size = math.sqrt(r_eff * overlap)
    k_t = 8.0 * shear_modulus * size
    return ((4.0 / 3.0) * stiffness * size, 2.0 * beta * SQRT_FIVE_SIXTHS * math.sqrt(2.0 * stiffness * size * m_eff),
            k_t, 2.0 * beta * SQRT_FIVE_SIXTHS * math.sqrt(k_t * m_eff))


def damping_ratio(restitution: float) -> float:
    """β(e) of the normal dashpot, so an isolated collision restitutes with ``restitution``."""
    e = min(max(restitution, 1e-6), 1.0)
    log_e = math.log(e)
    return -log_e / math.sqrt(math.pi ** 2 + log_e ** 2)


def pair_tables(materials: tuple[Material, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Normal damping ratios β and friction coefficients μ per material pair.

    Returns:
        (beta float32 (M, M), mu float32 (M, M)) with M = len(materials), symmetric.
    """
    count = len(materials)
    beta = np.zeros((count, count), np.float32)
    mu = np.zeros((count, count), np.float32)
    for a, ma in enumerate(materials):
        for b, mb in enumerate(materials):
            beta[a, b] = damping_ratio(0.5 * (ma.restitution + mb.restitution))
            mu[a, b] = 0.5 * (ma.friction + mb.friction)
    return beta, mu


def wall_tables(materials: tuple[Material, ...], wall_restitution: float,
                wall_friction: float) -> tuple[np.ndarray, np.ndarray]:
    """β and μ of each material against the walls, float32 (M,) each (averaged as for pairs)."""
    beta = np.array([damping_ratio(0.5 * (m.restitution + wall_restitution)) for m in materials], np.float32)
    mu = np.array([0.5 * (m.friction + wall_friction) for m in materials], np.float32)
    return beta, mu


def contact_force(xi, xj, vi, vj, ri, rj, mi, mj, stiffness, beta, mu, *, spring=None, dt=0.0):
    """Reference (float64, numpy) force on i from j, or None when they do not touch.

    A readable twin of the kernels for tests and documentation; ``mj = inf`` is a wall.

    Args:
        spring: Tangential displacement ξ [m] (3,) for friction_model 'spring', None for 'damper'.
        dt: Time step [s] (spring model only).

    Returns:
        force (3,) [N] for the damper, (force, new ξ) for the spring; None without contact.
    """
    xi, xj, vi, vj = (np.asarray(a, np.float64) for a in (xi, xj, vi, vj))
    delta_x = xi - xj
    dist = float(np.linalg.norm(delta_x))
    overlap = ri + rj - dist
    if overlap < 0:
        return None
    normal = delta_x / dist if dist > 0 else np.array([1.0, 0.0, 0.0])
    m_eff = mi if math.isinf(mj) else mi * mj / (mi + mj)
    root = math.sqrt(m_eff * stiffness)
    v_rel = vi - vj
    v_n = float(v_rel @ normal)
    f_n = stiffness * overlap - 2.0 * beta * root * v_n
    v_t = v_rel - v_n * normal
    cap = mu * max(f_n, 0.0)
    if spring is not None:
        k_t = TANGENTIAL_STIFFNESS_RATIO * stiffness
        g_t = 2.0 * beta * math.sqrt(m_eff * k_t)
        xi_t = np.asarray(spring, np.float64)
        xi_t = xi_t - (xi_t @ normal) * normal + v_t * dt
        f_t = -k_t * xi_t - g_t * v_t
        magnitude = float(np.linalg.norm(f_t))
        if magnitude > cap:
            f_t = f_t * (cap / magnitude)
            xi_t = -(f_t + g_t * v_t) / k_t
        return f_n * normal + f_t, xi_t
    force = f_n * normal
    speed_t = float(np.linalg.norm(v_t))
    if speed_t > 0:
        force -= min(2.0 * root * speed_t, cap) * v_t / speed_t
    return force


def surface_rolling(materials: tuple[Material, ...], surface_rolling_friction: float) -> np.ndarray:
    """Rolling coefficient μ_r of each material against a surface (a wall, a mesh collider): the mean of
    the two, float64 (M,)."""
    roll = np.array([m.rolling_friction for m in materials], np.float64)
    return 0.5 * (roll + surface_rolling_friction)


def surface_cohesion(materials: tuple[Material, ...], surface_cohesion_c: float) -> np.ndarray:
    """SJKR cohesion c [Pa] of each material against a surface (a wall, a mesh collider): the smaller of
    the two, float64 (M,)."""
    return np.minimum(np.array([m.cohesion for m in materials], np.float64), surface_cohesion_c)


def rolling_tables(materials: tuple[Material, ...], wall_rolling_friction: float) -> tuple[np.ndarray, np.ndarray]:
    """Rolling coefficients μ_r per material pair (M, M) and against the walls (M,), float32, averaged."""
    roll = np.array([m.rolling_friction for m in materials], np.float64)
    pair = (0.5 * (roll[:, None] + roll[None, :])).astype(np.float32)
    return pair, surface_rolling(materials, wall_rolling_friction).astype(np.float32)


def cohesion_tables(materials: tuple[Material, ...], wall_cohesion: float) -> tuple[np.ndarray, np.ndarray]:
    """SJKR cohesion c [Pa] per material pair (M, M) and against the walls (M,), float64, the min."""
    coh = np.array([m.cohesion for m in materials], np.float64)
    return np.minimum(coh[:, None], coh[None, :]), surface_cohesion(materials, wall_cohesion)


def contact_area(dist: float, ri: float, rj: float, *, wall: bool = False) -> float:
    """Area [m²] of the contact disc of two overlapping spheres (wall: ``rj`` unused, d = r_i − δ)."""
    if wall:
        overlap = ri - dist
        return math.pi * (2.0 * ri * overlap - overlap * overlap)
    return (0.25 * math.pi * (ri + rj - dist) * (dist + ri - rj) * (dist - ri + rj) * (dist + ri + rj)
            / (dist * dist))


def contact_response(xi, xj, vi, vj, wi, wj, ri, rj, mi, mj, stiffness, beta, mu, *, mu_roll=0.0,
                     cohesion=0.0, spring=(0.0, 0.0, 0.0), rolling=(0.0, 0.0, 0.0), dt=0.0, rotation=True,
                     shear_modulus=None, friction_cap="clipped"):
    """Reference (float64, numpy) of the full law with rotation, rolling resistance and cohesion.

    ``spring=None`` is friction_model 'damper' (new ξ None). A wall is ``mj = inf`` with ``rj = 0`` and ``xj`` the foot of
    the perpendicular from x_i on the wall plane (so d = r_i − δ and n is the wall's normal); ω_j is
    then ignored.

    Args:
        wi, wj: Angular velocities [rad/s] (3,).
        mu_roll: Rolling coefficient μ_r of the pair (0: no rolling resistance, ξ_r stays 0).
        cohesion: SJKR cohesion c of the pair [Pa].
        spring, rolling: Tangential ξ (None: the damper model) and rolling ξ_r displacements [m] (3,)
            before the step.
        rotation: False for the non-rotating model (ω ignored, no torques).
        shear_modulus: None for the linear law (``stiffness`` k [N/m]); G* [Pa] for Hertz–Mindlin
            (``stiffness`` then E* [Pa]).
        friction_cap: One of ``FRICTION_CAPS``.

    Returns:
        (force on i (3,) [N], torque on i (3,) [N·m], torque on j (3,) [N·m], new ξ (3,), new ξ_r (3,)),
        or None when the two do not touch.
    """
    xi, xj, vi, vj, wi, wj = (np.asarray(a, np.float64) for a in (xi, xj, vi, vj, wi, wj))
    wall = math.isinf(mj)
    delta_x = xi - xj
    dist = float(np.linalg.norm(delta_x))
    overlap = ri + rj - dist
    if overlap < 0:
        return None
    normal = delta_x / dist if dist > 0 else np.array([1.0, 0.0, 0.0])
    m_eff = mi if wall else mi * mj / (mi + mj)
    r_eff = ri if wall else ri * rj / (ri + rj)
    k_n, g_n, k_t, g_t = contact_coefficients(stiffness, beta, m_eff, shear_modulus=shear_modulus, r_eff=r_eff,
                                              overlap=overlap)
    root = math.sqrt(m_eff * k_n)
    arm_i = ri - 0.5 * overlap
    arm_j = 0.0 if wall else rj - 0.5 * overlap
    if wall or not rotation:
        wj = np.zeros(3)
    if not rotation:
        wi = np.zeros(3)
    v_rel = vi - vj
    v_n = float(v_rel @ normal)
    f_n = k_n * overlap - g_n * v_n
    cap_force = max(f_n, 0.0) if friction_cap == "clipped" else abs(f_n)
    if cohesion > 0.0:
        f_n -= cohesion * contact_area(dist, ri, rj, wall=wall)
    v_c = v_rel - np.cross(arm_i * wi + arm_j * wj, normal)
    v_t = v_c - float(v_c @ normal) * normal
    cap = mu * cap_force
    if spring is None:  # friction_model 'damper'
        xi_t = None
        speed_t = float(np.linalg.norm(v_t))
        f_t = -min(2.0 * root * speed_t, cap) * v_t / speed_t if speed_t > 0 else np.zeros(3)
    else:
        xi_t = np.asarray(spring, np.float64)
        xi_t = xi_t - (xi_t @ normal) * normal + v_t * dt
        # LIGGGHTS' 'spring' cap: the spring alone is capped; its dashpot acts only while it sticks.
        g_s = 0.0 if friction_cap == "spring" else g_t  # the dashpot inside the capped force
        f_t = -k_t * xi_t - g_s * v_t
        magnitude = float(np.linalg.norm(f_t))
        if magnitude > cap:
            f_t = f_t * (cap / magnitude)
            xi_t = -(f_t + g_s * v_t) / k_t
        elif friction_cap == "spring":
            f_t = f_t - g_t * v_t
    torque_i = np.zeros(3)
    torque_j = np.zeros(3)
    xi_r = np.zeros(3)
    if rotation:
        torque_i = -arm_i * np.cross(normal, f_t)
        torque_j = -arm_j * np.cross(normal, f_t)
        if mu_roll > 0.0:
            v_r = r_eff * np.cross(wi - wj, normal)
            xi_r = np.asarray(rolling, np.float64)
            xi_r = xi_r - (xi_r @ normal) * normal + v_r * dt
            f_r = -k_t * xi_r - g_t * v_r
            cap_r = mu_roll * cap_force
            magnitude = float(np.linalg.norm(f_r))
            if magnitude > cap_r:
                f_r = f_r * (cap_r / magnitude)
                xi_r = -(f_r + g_t * v_r) / k_t
            torque_roll = r_eff * np.cross(normal, f_r)
            torque_i = torque_i + torque_roll
            torque_j = torque_j - torque_roll
    return f_n * normal + f_t, torque_i, torque_j, xi_t, xi_r


def cohesion_notes(materials: tuple[Material, ...], material_index: np.ndarray, radius: np.ndarray,
                   stiffness: float) -> tuple[str, ...]:
    """What each material's SJKR cohesion does with this stiffness, in sentences for the user.

    Two equal grains of radius r touching with overlap δ feel k δ − c A, A = π r δ − π δ²/4: the pull
    beats the spring only when c > k / (π r) (the binding threshold), and they then settle at
    δ* = 4 r (1 − k / (c π r)). Below the threshold cohesion only softens contacts; far above it grains
    sink deep into each other. Both are worth saying before a bake.

    Args:
        materials: The material table.
        material_index: Material of each grain, shape (particle_count,).
        radius: Radii [m], shape (particle_count,).
        stiffness: Normal stiffness k [N/m].
    """
    notes = []
    for index, material in enumerate(materials):
        if material.cohesion <= 0.0:
            continue
        mine = radius[material_index == index]
        if mine.size == 0:
            continue
        r = float(np.median(mine))
        threshold = stiffness / (math.pi * r)
        if material.cohesion <= threshold:
            notes.append(f"Stickiness {material.cohesion:.3g} Pa of material '{material.name}' is below the "
                         f"{threshold:.3g} Pa its grains (r = {r:.3g} m) need to stick with stiffness "
                         f"{stiffness:.3g} N/m: it only softens their contacts.")
        else:
            depth = 4.0 * (1.0 - threshold / material.cohesion)
            if depth > 0.1:
                notes.append(f"Stickiness {material.cohesion:.3g} Pa of material '{material.name}' makes its grains "
                             f"settle about {depth:.0%} of a radius into each other (binding starts at "
                             f"{threshold:.3g} Pa with stiffness {stiffness:.3g} N/m).")
    return tuple(notes)


def surface_cohesion_notes(materials: tuple[Material, ...], material_index: np.ndarray, radius: np.ndarray,
                           stiffness: float, surfaces) -> tuple[str, ...]:
    """What SJKR cohesion against surfaces (mesh colliders) does with this stiffness, in sentences.

    A grain of radius r on a surface with overlap δ feels k δ − c π (2 r δ − δ²), c the smaller of the
    grain's and the surface's (``surface_cohesion``): the pull beats the spring only when
    c > k / (2π r), and the grain then settles at δ* = 2 r (1 − k / (2π c r)). A surface whose
    Stickiness meets a material without any does nothing to it; worth saying before a bake, as are the
    two cases of ``cohesion_notes``.

    Args:
        materials: The material table.
        material_index: Material of each grain, shape (particle_count,).
        radius: Radii [m], shape (particle_count,).
        stiffness: Normal stiffness k [N/m].
        surfaces: (label, c [Pa]) of each surface, e.g. ("collider 'Bowl'", 2.0e4).
    """
    notes = []
    for label, surface_c in surfaces:
        if surface_c <= 0.0:
            continue
        mixed = surface_cohesion(materials, surface_c)
        for index, material in enumerate(materials):
            mine = radius[material_index == index]
            if mine.size == 0:
                continue
            c = float(mixed[index])
            r = float(np.median(mine))
            threshold = stiffness / (2.0 * math.pi * r)
            if c <= 0.0:
                notes.append(f"The Stickiness of the {label} does not act on material '{material.name}': a contact "
                             "sticks with the smaller of the two Stickiness values, and the material has none.")
            elif c <= threshold:
                notes.append(f"Stickiness {c:.3g} Pa between the {label} and material '{material.name}' is below "
                             f"the {threshold:.3g} Pa its grains (r = {r:.3g} m) need to stick with stiffness "
                             f"{stiffness:.3g} N/m: it only softens their contacts.")
            else:
                depth = 2.0 * (1.0 - threshold / c)
                if depth > 0.1:
                    notes.append(f"Stickiness {c:.3g} Pa between the {label} and material '{material.name}' makes "
                                 f"its grains settle about {depth:.0%} of a radius into the surface (binding starts "
                                 f"at {threshold:.3g} Pa with stiffness {stiffness:.3g} N/m).")
    return tuple(notes)

"""The interface every backend (cpu, cuda, optix) implements.

A backend owns the device copies of one model and state and advances them; the whole step (detect,
contact forces, fields, integration, walls) runs inside it so a GPU backend never syncs with the host
between frames. ``engine.bake`` drives it (``engine.benchmark`` and ``engine.estimate`` too), each through
``engine.backends.make_backend``; a backend checks what it computes itself (``step`` raises
``SimulationDiverged``).
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

import numpy as np

from ..contact_history import ContactHistory
from ..model import Model
from ..state import State


@dataclass
class StepTimings:
    """Wall-clock time of the phases the paper's Table 1 reports, summed over ``steps``.

    Attributes:
        build_s: Building/refitting the collision structure [s].
        detect_s: Finding contacts and computing contact forces [s].
        update_s: Integration, walls, fields and bookkeeping [s].
        fused_s: Detection and update done together in one pass (the CPU's fused step of the paper
            model, engine.backends.cpu_fused), whose shares cannot be told apart [s].
        colliders_s: Of detect and update, the mesh colliders' share: their contact forces and swept
            test, including moving them [s].
        setup_s: One-off work of the first step after ``set_state`` (the CPU's velocity Verlet computes
            the state's accelerations with one extra force pass) [s]. Like builds, it is left out when
            the CPU backend compares thread counts (engine.backends.cpu_threads).
        steps: Steps covered.
        rebuilds: Full rebuilds among them.
    """

    build_s: float = 0.0
    detect_s: float = 0.0
    update_s: float = 0.0
    fused_s: float = 0.0
    colliders_s: float = 0.0
    setup_s: float = 0.0
    steps: int = 0
    rebuilds: int = 0

    def add_step(self, t0: float, t1: float, t2: float, t3: float) -> None:
        """Count one step from four ``time.perf_counter()`` readings [s]: build t0→t1, detect t1→t2,
        update t2→t3."""
        self.build_s += t1 - t0
        self.detect_s += t2 - t1
        self.update_s += t3 - t2
        self.steps += 1

    def add(self, other: "StepTimings") -> None:
        self.build_s += other.build_s
        self.detect_s += other.detect_s
        self.update_s += other.update_s
        self.fused_s += other.fused_s
        self.colliders_s += other.colliders_s
        self.setup_s += other.setup_s
        self.steps += other.steps
        self.rebuilds += other.rebuilds

    @property
    def total_s(self) -> float:
        return self.build_s + self.detect_s + self.update_s + self.fused_s + self.setup_s


class Backend(abc.ABC):
    """Advances one model's state.

    Args:
        model: The static model; the backend keeps references or device copies of its arrays.
    """

    #: Name used on the command line and in Blender ('cpu', 'cuda', 'optix').
    name: str = ""
    #: Whether the same input gives the same bits (reruns, and bakes resumed from a cached frame).
    deterministic: bool = True

    def __init__(self, model: Model):
        self.model = model

    @abc.abstractmethod
    def set_state(self, state: State) -> None:
        """Upload ``state``; the next step rebuilds the collision structure from scratch."""

    @abc.abstractmethod
    def get_state(self) -> State:
        """Download a copy of the current state (particles in the model's order)."""

    @abc.abstractmethod
    def step(self, count: int) -> StepTimings:
        """Advance ``count`` steps.

        Raises:
            SimulationDiverged: NaN or a speed above ``physics.speed_limit``; backends that cannot
                check every step without a host sync check when the state is downloaded.
        """

    def begin_frame(self) -> None:
        """Called before the first step of every frame; backends that keep a resumable history use it
        to start each frame from what a cache frame stores (engine.backends.cpu). Default: nothing."""

    def get_contact_history(self) -> ContactHistory | None:
        """The springs and integrator memory to store with a frame for a bit-exact resume, in particle
        ids; None for a backend that keeps none (the default)."""
        return None

    def set_contact_history(self, history: ContactHistory) -> None:
        """Restore what any backend's ``get_contact_history`` returned; call after ``set_state``.
        Default (a backend that keeps no history): nothing to restore."""

    def prepare(self) -> None:
        """Do now the set-up the next step would start with (the CPU builds its neighbour list), so a
        timed loop can leave it out as LAMMPS's "Loop time" leaves out its setup. Stepping does it
        anyway when this is not called; other backends have nothing to do here."""

    @abc.abstractmethod
    def contact_pairs(self) -> np.ndarray:
        """Colliding pairs of the current state, each once as (i, j) with i < j: int32 (pairs, 2)."""

    def contact_counts(self) -> np.ndarray:
        """Contacts of every particle in the current state, int32 (particle_count,)."""
        pairs = self.contact_pairs()
        n = self.model.particle_count
        return (np.bincount(pairs[:, 0], minlength=n) + np.bincount(pairs[:, 1], minlength=n)).astype(np.int32)

    #: Why 'auto' did not start a faster backend (engine.backends.make_backend), or "".
    selection_note: str = ""

    def describe_device(self) -> str:
        """The backend and its device (subclasses name the device, libraries and threads)."""
        return self.name

    def describe(self) -> str:
        """One line naming the backend and its device, for logs and the UI, with the reason when 'auto'
        fell back from a faster backend (Blender's status line shows it)."""
        text = self.describe_device()
        return f"{text} — {self.selection_note}" if self.selection_note else text

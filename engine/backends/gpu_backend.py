"""What the CUDA grid and OptiX backends share: state transfer and the step loop with its timed phases.

A step, queued on the GPU without a host synchronisation:

1. build: ``_build(rebuild)``, with ``rebuild`` true at the first step after ``set_state`` and every
   ``physics.rebuild_interval`` steps (the backend's own structure: hashed grid or GAS);
2. detect: ``_detect()`` leaves the grain–grain contact forces in the slots' forces (with
   friction_model 'spring', evolving the tangential springs kept by model index, see
   engine.backends.gpu_springs), then the mesh colliders add theirs;
3. update: walls, fields and semi-implicit Euler (``DeviceParticles.integrate``), then the colliders'
   swept test at the end of the step.

With velocity Verlet (``physics.integrator``, issue 16) a step begins with the first half-kick and the
drift (``DeviceParticles.verlet_drift``) and the colliders' swept test; build and detect then see the
new positions, and the update is the second half-kick with the walls and fields at t = (step + 1)·dt.
Before the first step after ``set_state`` (unless ``set_contact_history`` restored them) the
accelerations of the initial state are computed once (``_prime``), as the CPU backend does.

The phases (and the colliders' share of detect + update) are timed with CUDA events and read once at
the end of ``step``.
"""

from __future__ import annotations

import abc

from .base import Backend, StepTimings
from .gpu_failure import gpu_failure_sentence
from .gpu_params import spring_overflow_sentence
from .gpu_toolchain import GpuUnavailable
from ..contact_history import ContactHistory
from ..errors import MochiError
from ..state import State


class BackendGpu(Backend):
    """Base of the GPU backends. Subclasses set, in ``__init__``: ``particles`` (a
    ``gpu_runtime.DeviceParticles``), ``colliders`` (a ``gpu_colliders.DeviceColliders`` or None),
    ``timer`` (a ``gpu_runtime.PhaseTimer``), and implement ``_build`` and ``_detect``."""

    needs_rebuild = True
    steps_since_rebuild = 0
    #: Springs of a restored history that did not fit in their owner's row (set_contact_history).
    springs_dropped = 0

    @abc.abstractmethod
    def _build(self, rebuild: bool) -> None:
        """Bring the collision structure up to the current positions (from scratch when ``rebuild``)."""

    @abc.abstractmethod
    def _detect(self) -> None:
        """Write every slot's grain–grain contact force into ``particles.force``."""

    def set_state(self, state: State) -> None:
        self.particles.upload(state)
        self.needs_rebuild = True
        if self.colliders is not None:
            self.colliders.reset()

    def get_state(self) -> State:
        return self.particles.download()

    def get_contact_history(self) -> ContactHistory:
        """Tangential springs of the grains, walls and mesh colliders in the CPU backend's format
        (engine.backends.cpu), for resume; empty without springs."""
        from .gpu_springs import SpringRows, history_from_rows

        p = self.particles
        history = history_from_rows(p.get_springs() if p.rows_on else SpringRows.empty(p.particle_count))
        history.update(p.get_verlet())
        history.update(p.get_bonds())
        history.update(p.get_clumps())
        if self.colliders is not None:
            history.update(self.colliders.get_history())
        return ContactHistory.from_arrays(history)

    def set_contact_history(self, history: ContactHistory) -> None:
        """Restore what ``get_contact_history`` (of any backend) returned; call after ``set_state``."""
        from .gpu_springs import rows_from_history

        p = self.particles
        if p.rows_on:
            rows, self.springs_dropped = rows_from_history(history, self.model.radius)
            if self.springs_dropped:  # resuming without them would not continue the bake exactly
                raise MochiError(spring_overflow_sentence(self.springs_dropped, "in the restored history"))
            p.set_springs(rows)
        p.set_bonds(history)  # after set_springs, which chose the half the next step reads
        p.set_clumps(history)
        p.set_verlet(history)
        if self.colliders is not None:
            self.colliders.set_history(history)

    def step(self, count: int) -> StepTimings:
        try:
            return self._step(count)
        except MochiError:
            raise
        except Exception as exc:  # out of memory, a driver or OptiX error: one sentence, frames kept
            raise GpuUnavailable(gpu_failure_sentence(self.name, exc, doing="failed during a step")) from exc

    def _prime(self) -> None:
        """Velocity Verlet's accelerations of the current state, before its first step (as the CPU
        backend: the forces at t = step·dt with the histories advanced over 0 s, colliders included)."""
        p = self.particles
        rebuild = self.needs_rebuild or self.steps_since_rebuild >= self.model.physics.rebuild_interval
        self._build(rebuild)
        if rebuild:
            self.needs_rebuild = False
            self.steps_since_rebuild = 0
        p.history_dt.fill(0)
        self._detect()
        p.flip_springs()
        if self.colliders is not None:
            self.colliders.add_forces(p.step_index)
        p.prime()
        p.clump_step(0)
        p.history_dt.fill(self.model.physics.dt)

    def _step(self, count: int) -> StepTimings:
        physics = self.model.physics
        p = self.particles
        timer = self.timer
        timings = StepTimings()
        for _ in range(count):
            e0 = timer.event()
            if p.verlet_on and not p.primed:
                self._prime()
            if p.verlet_on:  # velocity Verlet: first half-kick and drift, then the forces at the new positions
                if self.colliders is not None:
                    self.colliders.remember_positions()
                p.verlet_drift()
                p.clump_step(2)
                if self.colliders is not None:
                    self.colliders.sweep(p.step_index + 1)
            rebuild = self.needs_rebuild or self.steps_since_rebuild >= physics.rebuild_interval
            self._build(rebuild)
            if rebuild:
                self.needs_rebuild = False
                self.steps_since_rebuild = 0
                timings.rebuilds += 1
            e1 = timer.event()
            self._detect()
            p.flip_springs()
            if self.colliders is not None:
                c0 = timer.event()
                self.colliders.add_forces(p.step_index + (1 if p.verlet_on else 0))
                timer.mark("colliders_s", c0, timer.event())
            e2 = timer.event()
            if self.colliders is not None and not p.verlet_on:
                self.colliders.remember_positions()
            p.integrate()
            p.clump_step(3 if p.verlet_on else 1)
            if self.colliders is not None and not p.verlet_on:
                c0 = timer.event()
                self.colliders.sweep(p.step_index)  # the end of the step: integrate advanced it
                timer.mark("colliders_s", c0, timer.event())
            e3 = timer.event()
            timer.mark("build_s", e0, e1)
            timer.mark("detect_s", e1, e2)
            timer.mark("update_s", e2, e3)
            self.steps_since_rebuild += 1
            timings.steps += 1
        timer.collect(timings)
        return timings

"""Mochi engine: sphere DEM with the Mochi paper's collision rules.

Nothing here imports bpy, and GPU libraries (CuPy, optix) are imported only when a GPU backend is
built, so ``import engine`` works on a laptop, on a farm node and inside Blender.

Public nouns (see docs/architecture in README):
    Model      static per-particle arrays and physical settings (engine.model)
    State      time-varying positions, velocities and activity (engine.state)
    Simulation a model, a state and a backend that steps them (engine.simulation)
"""

__version__ = "0.1.0"

from .errors import MochiError  # noqa: E402  (re-exported: the one error users see)

__all__ = ["MochiError", "__version__"]

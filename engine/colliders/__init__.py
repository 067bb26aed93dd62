"""Triangle-mesh colliders: grains against static, rigidly animated and deforming meshes.

Nouns:
    Collider       one mesh with a thickness, a surface material and a motion (``collider``)
    motions        RigidMotionAnalytic, RigidMotionKeyframes, DeformMotion (``motion``)
    ColliderSet    the scene's colliders and the solver hooks ``Model.colliders`` points to
                   (``collider_set``); saved into and loaded from a bake cache (``storage``)

The kernels (``kernels``) work on world-space vertices and a BVH refit per step (``tree``), so every
kind of motion reduces to 'vertices and vertex velocities at time t'. The GPU backends take the same
arrays after ``ColliderSet.advance`` and run a line-for-line port of the kernels
(``engine.backends.gpu_colliders``, ``engine.backends.optix_colliders``, kernels/collider_math.cuh).
"""

from .collider import Collider, check_collider_mesh, load_collider_mesh
from .collider_set import ColliderSet, load_colliders
from .motion import DeformMotion, RigidMotionAnalytic, RigidMotionKeyframes, RigidPose, euler_rotation

__all__ = ["Collider", "ColliderSet", "DeformMotion", "RigidMotionAnalytic", "RigidMotionKeyframes", "RigidPose",
           "check_collider_mesh", "euler_rotation", "load_collider_mesh", "load_colliders"]

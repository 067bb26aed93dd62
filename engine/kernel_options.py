"""The numba options every CPU kernel is compiled with (the backends', the colliders' and the packing's).

``nogil`` so the Blender add-on can bake in a worker thread; ``cache`` so a bake starts without
recompiling; no fast-math (results must not depend on the compiler's reassociation: same seed, same
bits); numpy's error model (a division by zero gives inf/NaN, which the divergence check reports).
"""

KERNEL_OPTIONS = dict(nogil=True, cache=True, fastmath=False, error_model="numpy")

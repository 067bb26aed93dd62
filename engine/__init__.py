"""Mochi engine: sphere DEM with the Mochi paper's collision rules.

Nothing here imports bpy, and GPU libraries (CuPy, optix) are imported only when a GPU backend is
built, so ``import engine`` works on a laptop, on a farm node and inside Blender.

Public nouns (see docs/architecture in README):
    Model      static per-particle arrays and physical settings (engine.model)
    State      time-varying positions, velocities and activity (engine.state)
    Backend    steps a model and a state on one device (engine.backends.make_backend; engine.bake runs it)
"""

import hashlib
import os
import sys
from pathlib import Path

__version__ = "0.1.0"


def _numba_cache_folder() -> str:
    """Where numba caches this package's compiled kernels.

    Keyed by the package's import name: the same source files are imported as ``engine`` (pip,
    tests), ``mochi.engine`` (addon/headless.py) and ``bl_ext.<repo>.mochi.engine`` (Blender), and a
    numba cache written under one name fails to load under another. ``MOCHI_NUMBA_CACHE_DIR``
    overrides the base folder (default: the user cache folder).
    """
    base = os.environ.get("MOCHI_NUMBA_CACHE_DIR")
    if not base:
        cache = os.environ.get("LOCALAPPDATA") if sys.platform == "win32" else os.environ.get("XDG_CACHE_HOME")
        base = str(Path(cache or Path.home() / ".cache") / "mochi" / "numba")
    return str(Path(base) / __name__)


def _source_digest() -> str:
    """Short hash of the engine's Python sources (about 1 ms).

    numba checks a cached kernel against the timestamp of the file that defines it only, not of the
    files whose jitted functions it inlines (engine.packing.queries into engine.colliders.kernels), so
    after an upgrade it would run stale code; a cache folder per source version rules that out.
    """
    digest = hashlib.sha256()
    root = Path(__file__).resolve().parent
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


def set_numba_cache_folder(folder: str) -> None:
    """Make numba cache the engine's kernels under ``folder``, in a subfolder per version of the
    engine's sources (call before the kernels are imported: numba fixes a kernel's cache folder when
    the kernel is decorated).

    The Blender extension points it at its user folder, which Blender removes on uninstall.
    """
    folder = str(Path(folder) / _source_digest())
    # Always set, never 'setdefault': a child process inherits the variable from a parent that may
    # have imported this package under another name.
    os.environ["NUMBA_CACHE_DIR"] = folder
    if "numba" in sys.modules:  # already configured from the environment at its import
        sys.modules["numba"].config.CACHE_DIR = folder


#: numba's threading layers in the order the engine wants them. TBB goes last: inside Blender (whose
#: own libtbb is loaded, so numba would pick it first) a process that used it could hang for ever at
#: exit in ``tbb::finalize``; OpenMP is thread-safe (Blender bakes in a worker thread) and workqueue
#: is the fallback where no OpenMP runtime exists (macOS without libomp).
THREADING_LAYER_PRIORITY = ("omp", "workqueue", "tbb")


def prefer_safe_threading_layer() -> None:
    """Make numba choose its threading layer from ``THREADING_LAYER_PRIORITY`` (before its first
    parallel kernel runs; a layer already started cannot change). A layer the user named with
    ``NUMBA_THREADING_LAYER`` is left alone."""
    os.environ["NUMBA_THREADING_LAYER_PRIORITY"] = " ".join(THREADING_LAYER_PRIORITY)
    if "numba" in sys.modules:
        sys.modules["numba"].config.THREADING_LAYER_PRIORITY = list(THREADING_LAYER_PRIORITY)


#: Spins (libgomp's unit: ~100,000 per ms by its own reckoning) a thread waiting at a barrier makes
#: before it sleeps. On a quiet machine the threads of a 100k-grain step meet within this (sleeping at
#: once cost the pile 1.92× → 1.77× one thread's speed, docs/benchmarks.md); with a core busy the
#: late thread comes a scheduler quantum (milliseconds) late, and this much spinning wastes little
#: of it. libgomp's own default spins 10 times longer: 0.58× one thread with a busy core.
SPIN_COUNT = 30_000


def prefer_short_spin() -> None:
    """Ask numba's OpenMP layer to let a thread that waits at a barrier spin briefly, then sleep
    (``OMP_WAIT_POLICY=passive`` with ``GOMP_SPINCOUNT=SPIN_COUNT``; where the environment names either,
    both are left alone). engine.backends.cpu_threads steps on one thread when all are slower. OpenMP
    reads the variables once, when numba first runs a parallel loop, which packing may do before any
    backend is built: so they are set here, at the engine's import. Runtimes other than GNU's read
    only the policy: waiting threads sleep at once there."""
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    os.environ["GOMP_SPINCOUNT"] = str(SPIN_COUNT)


set_numba_cache_folder(_numba_cache_folder())
prefer_safe_threading_layer()
prefer_short_spin()

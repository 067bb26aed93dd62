"""Check that a change to the GPU sources leaves the CUDA kernels' PTX instruction for instruction.

Compiles, with nvcc (no GPU needed), every translation unit in kernels/ that the engine hands to NVRTC
— CuPy modules and OptiX programs, each with the defines and options its launcher passes, for every
variant the engine builds — and either saves the PTX (``--save DIR``) or compares it with PTX saved
before (``--compare DIR``). Run ``--save`` on the old sources, edit, then ``--compare``:

    python scripts/check_law_ptx.py --save /tmp/ptx-before
    (edit kernels/...)
    python scripts/check_law_ptx.py --compare /tmp/ptx-before

The comparison ignores what does not reach the GPU: comments, debug information (``.loc``, ``.file``,
``.section .debug_…``) and the spelling of mangled identifiers (``_Z…``, renamed in order of first appearance), so
renaming or moving a function compiles to "identical" and changing any instruction, operand, register
or branch does not. Exit status 0 when every variant is identical, 1 otherwise.
"""

from __future__ import annotations

import argparse
import difflib
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from engine.backends.cuda_grid import FORCES_MIN_BLOCKS  # noqa: E402  (after the path is set)
from engine.backends.gpu_colliders import COLLIDER_OPTIONS, collider_defines  # noqa: E402
from engine.backends.gpu_toolchain import kernel_source  # noqa: E402

#: Targets compared: the oldest NVRTC 13 accepts (as tests/engine/test_kernels_compile.py) and Hopper.
ARCHES = ("compute_75", "compute_90")


def _collider_flags() -> list[str]:
    return [*(f"-D{d}" for d in collider_defines()), *COLLIDER_OPTIONS]


def variants() -> dict[str, tuple[str, list[str]]]:
    """{variant name: (kernel file, nvcc flags)} for every build the engine and its host tests make.

    The flags follow the launchers: gpu_toolchain.raw_module (-std=c++17 plus defines and options, for
    dem_common.cu, grid.cu, colliders.cu) and optix_pipeline.OptixPipeline (-std=c++17 -lineinfo plus
    compile flags, for optix_dem.cu and optix_colliders.cu). OPTIX_DEM_LAW 0 and 1 are what
    optix_rt.py builds; 2 (both laws, the default) is what the host tests build.
    """
    return {
        "dem_common": ("dem_common.cu", []),
        "grid": ("grid.cu", [f"-DGRID_FORCES_MIN_BLOCKS={FORCES_MIN_BLOCKS}"]),
        "colliders": ("colliders.cu", _collider_flags()),
        "optix_dem_law0": ("optix_dem.cu", ["-lineinfo", "-DOPTIX_DEM_LAW=0"]),
        "optix_dem_law1": ("optix_dem.cu", ["-lineinfo", "-DOPTIX_DEM_LAW=1"]),
        "optix_dem_law2": ("optix_dem.cu", ["-lineinfo"]),
        "optix_colliders": ("optix_colliders.cu", ["-lineinfo", *_collider_flags()]),
    }


def optix_include() -> Path:
    """OptiX headers shipped by the pyoptix-contrib wheel (found without importing optix)."""
    spec = importlib.util.find_spec("optix")
    path = Path(list(spec.submodule_search_locations)[0]) / "include" if spec else None
    if path is None or not (path / "optix.h").is_file():
        sys.exit("The OptiX programs need pyoptix-contrib's headers (optix/include/optix.h).")
    return path


def compile_ptx(nvcc: str, name: str, flags: list[str], arch: str, work: Path) -> str:
    """PTX of the include-expanded kernels/``name`` (the text NVRTC is given at run time)."""
    source = work / name
    source.write_text(kernel_source(name))
    out = work / f"{source.stem}.{arch}.ptx"
    out.unlink(missing_ok=True)
    extra = [f"-I{optix_include()}"] if name.startswith("optix_") else []
    result = subprocess.run([nvcc, "-std=c++17", f"-arch={arch}", "--ptx", *flags, *extra, "-o", str(out),
                             str(source)], capture_output=True, text=True, timeout=600)
    # nvcc >= 13 checks PTX with the plain ptxas, which does not know OptiX's intrinsics (resolved by
    # OptiX's own compiler): the PTX is written all the same, and those are the only errors accepted.
    errors = [line for line in result.stderr.splitlines() if "error" in line and "ptxas fatal" not in line]
    if not out.is_file() or (result.returncode != 0 and not all("_optix_" in line for line in errors)):
        sys.exit(f"nvcc failed on {name} {' '.join(flags)} ({arch}):\n{result.stderr}")
    return out.read_text()


_MANGLED = re.compile(r"\b_Z\w+")


def instructions(ptx: str) -> list[str]:
    """PTX reduced to what reaches the GPU: no comments, no debug information, mangled names canonical.

    Debug information is the ``.loc``/``.file`` lines and the ``.section .debug_…`` blocks that
    ``-lineinfo`` adds (the names of inlined functions, as bytes, with a hash of the source's path).
    """
    names: dict[str, str] = {}
    lines = []
    in_debug = False
    for raw in ptx.splitlines():
        line = raw.split("//", 1)[0].strip()
        if line.startswith(".section") and ".debug" in line:
            in_debug = True
            continue
        if in_debug:
            in_debug = line != "}"
            continue
        if not line or line.startswith((".loc", ".file")):
            continue
        lines.append(_MANGLED.sub(lambda m: names.setdefault(m.group(0), f"_Z#{len(names)}"), line))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--save", type=Path, metavar="DIR", help="write the PTX of every variant to DIR")
    mode.add_argument("--compare", type=Path, metavar="DIR", help="compare with the PTX saved in DIR")
    args = parser.parse_args()
    nvcc = shutil.which("nvcc")
    if nvcc is None:
        sys.exit("nvcc is not installed.")
    different = 0
    with tempfile.TemporaryDirectory() as tmp:
        for variant, (name, flags) in variants().items():
            for arch in ARCHES:
                ptx = compile_ptx(nvcc, name, flags, arch, Path(tmp))
                saved = (args.save or args.compare) / f"{variant}.{arch}.ptx"
                if args.save:
                    saved.parent.mkdir(parents=True, exist_ok=True)
                    saved.write_text(ptx)
                    print(f"saved     {saved.name}: {len(instructions(ptx))} lines")
                    continue
                old, new = instructions(saved.read_text()), instructions(ptx)
                if old == new:
                    print(f"identical {saved.name}: {len(new)} lines")
                    continue
                different += 1
                diff = list(difflib.unified_diff(old, new, "before", "after", n=2, lineterm=""))
                print(f"DIFFERENT {saved.name}: {len(old)} -> {len(new)} lines")
                print("\n".join(diff[:60]))
    if args.compare:
        print("all identical" if different == 0 else f"{different} variant(s) differ")
    return 1 if different else 0


if __name__ == "__main__":
    sys.exit(main())

"""kernels/ compiles with nvcc (PTX, and OptiX-IR for the OptiX program) with warnings as errors, and
the host mirrors of the launch-parameter structs match kernels/dem_params.h byte for byte.

The compile tests run wherever nvcc is installed (no GPU needed) and skip cleanly otherwise. The mirror
check runs on every machine with a C++ compiler: the header is laid out by the host compiler against a
stand-in for CUDA's vector types (and by nvcc against the real ones, where nvcc is). The OptiX headers
are the ones the pyoptix-contrib wheel ships under optix/include (found without importing optix, which
needs a driver).
"""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from engine.backends.gpu_colliders import COLLIDER_OPTIONS, collider_defines
from engine.backends.optix_colliders import OPTIX_COLLIDER_PARAMS_DTYPE
from engine.backends.gpu_params import COLLIDER_PARAMS_DTYPE, DEM_PARAMS_DTYPE, OPTIX_DEM_PARAMS_DTYPE
from engine.backends.gpu_toolchain import KERNEL_DIR, kernel_source

NVCC = shutil.which("nvcc")
HOST_CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc is not installed")
#: Oldest target NVRTC 13 accepts; the kernels must compile for every GPU the backends may meet.
ARCH = "compute_75"
WERROR = ["-Werror", "all-warnings"]


def optix_include() -> Path | None:
    spec = importlib.util.find_spec("optix")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "include"
    return path if (path / "optix.h").is_file() else None


def nvcc(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([NVCC, "-std=c++17", *args], capture_output=True, text=True, timeout=300)


@needs_nvcc
@pytest.mark.parametrize("name", ["dem_common.cu", "grid.cu", "colliders.cu"])
def test_cuda_kernels_compile_to_ptx(name, tmp_path):
    # Compile the include-expanded text, which is exactly what NVRTC is given at run time.
    source = tmp_path / name
    source.write_text(kernel_source(name))
    out = tmp_path / "out.ptx"
    # The launcher's defines and options (colliders.cu: the CPU reference's constants, --fmad=false).
    extra = [*(f"-D{d}" for d in collider_defines()), *COLLIDER_OPTIONS] if name == "colliders.cu" else []
    result = nvcc(f"-arch={ARCH}", "--ptx", *WERROR, *extra, "-o", str(out), str(source))
    assert result.returncode == 0, result.stderr
    ptx = out.read_text()
    entries = set(re.findall(r"\.entry\s+(\w+)", ptx))
    declared = set(re.findall(r'extern "C" __global__ void (?:__launch_bounds__\([^)]*\)\s*)?(\w+)',
                              source.read_text()))
    assert declared and declared <= entries
    if name == "colliders.cu":
        assert not re.search(r"\bfma\.rn\.f64\b", ptx)  # every double operation rounds as numba's


#: The OptiX programs, their entries and the NVRTC flags their launchers add.
OPTIX_PROGRAMS = {
    "optix_dem.cu": (("__raygen__dem", "__intersection__dem", "__miss__dem"), []),
    "optix_colliders.cu": (("__raygen__collider", "__intersection__collider", "__miss__collider"),
                           [*(f"-D{d}" for d in collider_defines()), *COLLIDER_OPTIONS]),
}


@needs_nvcc
@pytest.mark.parametrize("name", OPTIX_PROGRAMS)
def test_optix_program_compiles_to_optix_ir(name, tmp_path):
    include = optix_include()
    if include is None:
        pytest.skip("pyoptix-contrib (OptiX headers under optix/include) is not installed")
    out = tmp_path / "program.optixir"
    result = nvcc(f"-arch={ARCH}", "-optix-ir", *WERROR, *OPTIX_PROGRAMS[name][1], f"-I{include}", f"-I{KERNEL_DIR}",
                  "-o", str(out), str(KERNEL_DIR / name))
    assert result.returncode == 0, result.stderr
    assert out.stat().st_size > 1000


@needs_nvcc
@pytest.mark.parametrize("name", OPTIX_PROGRAMS)
def test_optix_program_compiles_to_ptx(name, tmp_path):
    include = optix_include()
    if include is None:
        pytest.skip("pyoptix-contrib (OptiX headers under optix/include) is not installed")
    out = tmp_path / "program.ptx"
    # The include-expanded text, as NVRTC gets it (engine.backends.optix_pipeline).
    source = tmp_path / name
    source.write_text(kernel_source(name))
    entries, flags = OPTIX_PROGRAMS[name]
    result = nvcc(f"-arch={ARCH}", "--ptx", *WERROR, *flags, f"-I{include}", "-o", str(out), str(source))
    if result.returncode != 0:
        # nvcc ≥ 13 checks PTX with the plain ptxas, which cannot know the OptiX intrinsics (resolved by
        # OptiX's own compiler); those are the only errors accepted.
        errors = [line for line in result.stderr.splitlines() if "error" in line]
        assert errors and all("_optix_" in line for line in errors), result.stderr
        assert "warning" not in result.stderr, result.stderr
    ptx = out.read_text()
    for entry in entries:
        assert re.search(rf"\.entry\s+{entry}\b", ptx), entry
    assert "_optix_trace_typed_32" in ptx and "_optix_report_intersection" not in ptx
    if "--fmad=false" in flags:
        assert not re.search(r"\bfma\.rn\.f64\b", ptx)  # every double operation rounds as numba's


STRUCTS = (("DemParams", DEM_PARAMS_DTYPE), ("OptixDemParams", OPTIX_DEM_PARAMS_DTYPE),
           ("ColliderParams", COLLIDER_PARAMS_DTYPE), ("OptixColliderParams", OPTIX_COLLIDER_PARAMS_DTYPE))


#: CUDA's vector types as vector_types.h declares them (__builtin_align__(16) float4, (8) int2), for a
#: host compiler that has no CUDA: the only CUDA types dem_params.h uses, today only behind pointers
#: (a value member would make their layout matter: it is kept faithful). Where nvcc is installed the
#: same check runs against the real header.
STAND_IN_VECTOR_TYPES = """#pragma once
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) int2 { int x, y; };
"""


def _host_layout(tmp_path: Path, compiler: str) -> dict[str, int]:
    """sizeof/offsetof of the structs as ``compiler`` ('nvcc' or 'host') lays them out, printed by a host
    program."""
    lines = ["#include <cstdio>", "#include <cstddef>", '#include "dem_params.h"', "int main() {"]
    for struct, dtype in STRUCTS:
        lines.append(f'std::printf("{struct}.size %zu\\n", sizeof({struct}));')
        for field in dtype.names:
            lines.append(f'std::printf("{struct}.{field} %zu\\n", offsetof({struct}, {field}));')
    lines += ["return 0;", "}"]
    source = tmp_path / "layout.cpp"
    source.write_text("\n".join(lines))
    exe = tmp_path / "layout"
    if compiler == "nvcc":
        command = [NVCC, "-x", "c++", "-std=c++17", f"-I{KERNEL_DIR}", "-o", str(exe), str(source)]
    else:
        stand_in = tmp_path / "stand_in"
        stand_in.mkdir()
        (stand_in / "vector_types.h").write_text(STAND_IN_VECTOR_TYPES)
        command = [HOST_CXX, "-std=c++17", f"-I{stand_in}", f"-I{KERNEL_DIR}", "-o", str(exe), str(source)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr
    printed = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    return {name: int(value) for name, value in (line.split() for line in printed.splitlines())}


@pytest.mark.parametrize("compiler", [
    pytest.param("host", marks=pytest.mark.skipif(HOST_CXX is None, reason="no C++ compiler")),
    pytest.param("nvcc", marks=needs_nvcc)])
def test_struct_mirrors_match_header(compiler, tmp_path):
    layout = _host_layout(tmp_path, compiler)
    for prefix, dtype in STRUCTS:
        assert layout[f"{prefix}.size"] == dtype.itemsize, prefix
        for field in dtype.names:
            assert layout[f"{prefix}.{field}"] == dtype.fields[field][1], f"{prefix}.{field}"
    # Every member of the header is mirrored (a field added to the header alone must fail here).
    header = (KERNEL_DIR / "dem_params.h").read_text()
    for struct, dtype in STRUCTS:
        body = re.search(rf"struct {struct} \{{(.*?)\n\}};", header, re.S).group(1)
        members = re.findall(r"^\s+[\w\s\*]+?[\s\*](\w+)(?:\[\d+\])?;", body, re.M)
        assert members == list(dtype.names), struct


def test_kernel_source_expands_local_includes_once():
    text = kernel_source("grid.cu")
    assert '#include "' not in text
    assert text.count("struct DemParams {") == 1
    assert np.dtype(DEM_PARAMS_DTYPE).itemsize % 8 == 0

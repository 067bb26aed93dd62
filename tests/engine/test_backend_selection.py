"""Safe backend selection: every way a GPU backend fails to start becomes one sentence, 'auto' falls
back optix → cuda → cpu saying why, and optix is chosen only after its self-check.

No GPU runs here. The fallbacks through the real constructors run as they would on a machine without
CuPy; where a decision needs a GPU (RT cores present, a self-check answer), the machine's GPU
description is substituted, and the test says so.
"""

from __future__ import annotations

import numpy as np
import pytest

from engine.backends import make_backend, select
from engine.backends.gpu_failure import gpu_failure_sentence, start_gpu_backend
from engine.backends.gpu_toolchain import GpuUnavailable, kernel_source
from engine.backends.self_check import SelfCheckMemory, compare_contacts, self_check_state
from engine.backends.cpu import BackendCpu
from engine.model import contact_model
from engine.errors import MochiError
from engine.state import make_state


def _model():
    positions, radius = self_check_state(200)
    return contact_model(positions, radius)


# Exception types named as CuPy and NVRTC name theirs (CuPy is not installed here).
class OutOfMemoryError(Exception):
    pass


class CUDARuntimeError(RuntimeError):
    pass


class NVRTCError(RuntimeError):
    pass


@pytest.mark.parametrize("exc, expected", [
    (OutOfMemoryError("Out of memory allocating 8,589,934,592 bytes"), "ran out of memory"),
    (CUDARuntimeError("cudaErrorInsufficientDriver: CUDA driver version is insufficient"), "CUDA driver reported"),
    (NVRTCError("NVRTC_ERROR_COMPILATION (6)"), "failed to compile with NVRTC"),
    (RuntimeError("NVRTC failed on optix_dem.cu: NVRTC_ERROR_COMPILATION\nline 2\nline 3"), "failed to compile with NVRTC"),
    (RuntimeError("OPTIX_ERROR_UNSUPPORTED_ABI_VERSION: Optix call 'optixInit()' failed"), "OptiX reported an error"),
    (ValueError("something else entirely"), "ValueError: something else entirely"),
])
def test_failure_sentence_names_the_cause(exc, expected):
    sentence = gpu_failure_sentence("optix", exc)
    assert sentence.startswith("The optix backend could not start: ") and expected in sentence
    assert sentence.endswith(".") and "\n" not in sentence and sentence.count(". ") == 0


def test_missing_kernel_file_is_one_sentence():
    """The real kernel loader on a file that is not there (a broken install)."""
    with pytest.raises(GpuUnavailable) as info:
        start_gpu_backend("cuda", lambda model: kernel_source("no_such_kernel.cu"), None)
    message = str(info.value)
    assert "kernel source file is missing" in message and "no_such_kernel.cu" in message and "reinstall" in message


def test_refused_physics_keeps_its_sentence():
    def refuse(model):
        raise MochiError("The GPU backends do not implement this.")
    with pytest.raises(MochiError, match="^The GPU backends do not implement this.$"):
        start_gpu_backend("cuda", refuse, None)


def test_explicit_gpu_backend_fails_with_one_sentence():
    """No CuPy here: the real constructors fail, and say why in one sentence."""
    for name in ("cuda", "optix"):
        with pytest.raises(MochiError) as info:
            make_backend(name, _model(), log=lambda m: None)
        assert "CuPy" in str(info.value) and "\n" not in str(info.value)


def test_auto_falls_back_through_every_gpu_backend_saying_why():
    """'auto' told to start optix (as on an RTX GPU): optix and cuda fail for real here, cpu runs."""
    lines = []
    runner = make_backend("auto", _model(), log=lines.append, choose=lambda log: "optix")
    assert isinstance(runner, BackendCpu)
    assert [line.split(":")[0] for line in lines] == ["auto backend", "auto backend"]
    assert "Using cuda instead." in lines[0] and "Using cpu instead." in lines[1]
    assert "optix not used" in runner.describe() and "cuda not used" in runner.describe()
    assert runner.describe().startswith("cpu (numba")


def test_cli_contacts_auto_says_what_it_chose(tmp_path, capsys):
    from engine.cli.main import main
    from engine.ply import write_points

    positions, radius = self_check_state(300)
    write_points(tmp_path / "s.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2], "radius": radius})
    assert main(["contacts", str(tmp_path / "s.ply"), "--out", str(tmp_path / "c.npy"), "--backend", "auto"]) == 0
    assert "auto backend: cpu; no GPU backend:" in capsys.readouterr().out


@pytest.fixture
def rtx_machine(monkeypatch):
    """This machine as if it had an RTX GPU with CuPy and pyoptix (no GPU runs here)."""
    probe = (("cpu", True, "always available"),
             ("cuda", True, "NVIDIA RTX 4090 (sm_89, with RT cores), CuPy 14.0"),
             ("optix", True, "NVIDIA RTX 4090 (sm_89, with RT cores), CuPy 14.0, OptiX 9.0.0"))
    monkeypatch.setattr(select, "probe_backends", lambda: probe)


def test_auto_picks_optix_only_after_its_self_check(rtx_machine):
    lines = []
    assert select.choose_backend_name(log=lines.append, optix_check=lambda log: (True, "same contacts")) == "optix"
    assert "optix on" in lines[-1] and "same contacts" in lines[-1]
    assert select.choose_backend_name(log=lines.append, optix_check=lambda log: (False, "3 missing")) == "cuda"
    assert "optix not used: 3 missing" in lines[-1]

    def broken(log):
        raise RuntimeError("OPTIX_ERROR_INTERNAL_ERROR")
    assert select.choose_backend_name(log=lines.append, optix_check=broken) == "cuda"
    assert "OptiX reported an error" in lines[-1]


def test_self_check_memory(tmp_path):
    memory = SelfCheckMemory(tmp_path / "check.json")
    assert memory.get("gpu A") is None
    memory.put("gpu A", True, "equal")
    memory.put("gpu B | driver 2", False, "2 missing")
    assert memory.get("gpu A") == (True, "equal")
    assert SelfCheckMemory(tmp_path / "check.json").get("gpu B | driver 2") == (False, "2 missing")
    (tmp_path / "check.json").write_text("{not json")
    assert memory.get("gpu A") is None  # a damaged file only means the check runs again


OPTIX = {"reference": "the CUDA grid", "checked": "OptiX"}


def test_self_check_comparison_catches_missing_and_repeated_pairs():
    """The comparison the self-check makes, on the CPU backend's contacts of the self-check state."""
    positions, radius = self_check_state(600)
    runner = BackendCpu(contact_model(positions, radius))
    runner.set_state(make_state(positions))
    pairs = runner.contact_pairs()
    assert len(pairs) > 100 and [0, 1] in pairs.tolist() and [2, 3] in pairs.tolist()
    assert compare_contacts(pairs, pairs.copy(), **OPTIX)[0]
    passed, reason = compare_contacts(pairs, pairs[1:], **OPTIX)
    assert not passed and "1 missing" in reason
    doubled = np.concatenate([pairs, pairs[:2]])
    doubled = doubled[np.lexsort((doubled[:, 1], doubled[:, 0]))]
    passed, reason = compare_contacts(pairs, doubled, **OPTIX)
    assert not passed and "2 listed twice" in reason


def test_a_gpu_failure_during_a_step_is_one_sentence():
    """What a GPU backend's step raises from CuPy or OptiX (out of memory, a driver error) reaches the
    bake as one sentence; the step loop itself is the real one (engine.backends.gpu_backend)."""
    from engine.backends.gpu_backend import BackendGpu

    class FailingGpu(BackendGpu):
        name = "cuda"

        def _step(self, count):
            raise OutOfMemoryError("Out of memory allocating 1,073,741,824 bytes (allocated so far: 0 bytes).")

        def _build(self, rebuild):
            pass

        def _detect(self):
            pass

        def contact_pairs(self):
            return np.zeros((0, 2), np.int32)

    with pytest.raises(GpuUnavailable) as info:
        FailingGpu(_model()).step(1)
    assert str(info.value).startswith("The cuda backend failed during a step: the GPU ran out of memory")

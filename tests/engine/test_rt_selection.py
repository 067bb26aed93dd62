"""Choosing the rt backend's device (``--rt-device``), and when 'auto' picks rt: only on hardware ray
tracing after its self-check, never on a software device such as lavapipe.

The device tests run on this machine's real ray-tracing device (lavapipe in CI) and skip where slangpy or
a Vulkan driver with ray tracing is missing. A hardware device cannot be had here: the one test of
'auto' picking rt substitutes the probe's answer for a GPU's and says so.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from engine.backends import make_backend, select
from engine.backends.rt_self_check import rt_identity, rt_passes_self_check, run_rt_self_check
from engine.backends.self_check import SelfCheckMemory, self_check_state
from engine.errors import MochiError
from engine.model import contact_model

ROOT = Path(__file__).resolve().parents[2]


def _model(count=200):
    positions, radius = self_check_state(count)
    return contact_model(positions, radius)


def _one_sentence(text: str) -> None:
    assert "\n" not in text and text.endswith(".") and "Traceback" not in text


def test_rt_device_forces_vulkan(rt_device):
    runner = make_backend("rt", _model(), rt_device="vulkan")
    assert runner.rt.kind == "vulkan" and runner.rt.adapter == rt_device.adapter


@pytest.mark.parametrize("backend", ["rt", "auto"])
def test_an_unknown_device_kind_is_one_sentence(backend):
    with pytest.raises(MochiError) as info:
        make_backend(backend, _model(), rt_device="bogus", log=lambda m: None)
    assert str(info.value) == "Unknown ray-tracing device 'bogus'; choose one of vulkan, d3d12, metal, cuda."


def test_a_device_kind_for_another_backend_is_refused():
    with pytest.raises(MochiError) as info:
        make_backend("cpu", _model(), rt_device="vulkan")
    _one_sentence(str(info.value))
    assert "rt and auto backends only" in str(info.value) and "cpu" in str(info.value)


@pytest.mark.skipif(sys.platform == "darwin", reason="Metal exists on macOS")
def test_metal_where_there_is_none_names_what_was_tried():
    pytest.importorskip("slangpy")
    with pytest.raises(MochiError) as info:
        make_backend("rt", _model(), rt_device="metal")
    message = str(info.value)
    assert message.startswith("No device with ray tracing was found for the rt backend (metal: ")
    assert message.endswith(").") and "\n" not in message and "vulkan" not in message


def test_auto_never_picks_a_software_device_and_says_why(rt_device):
    if not rt_device.is_software:
        pytest.skip(f"{rt_device.adapter} is a GPU: this machine tests what auto does without one")
    lines, checked = [], []
    chosen = select.choose_backend_name(log=lines.append, rt_check=lambda kind, log: checked.append(kind))
    assert chosen == "cpu" and checked == []  # the self-check is not even run on a software device
    assert lines[-1].startswith("auto backend: cpu; no GPU backend: ")
    assert f"rt not used: {rt_device.adapter}" in lines[-1] and "software" in lines[-1]
    assert dict((name, ok) for name, ok, _ in select.probe_backends())["rt"] is True
    runner = make_backend("auto", _model(), log=lines.append)
    assert runner.name == "cpu" and "software" in lines[-1]


def test_auto_picks_rt_on_a_hardware_device_only_after_its_self_check(monkeypatch):
    """The probe's answer replaced by a GPU's (none here); CuPy is absent here, as on an AMD machine."""
    gpu = select.RtProbe(True, "AMD Radeon RX 7900 XTX (vulkan; ray query, pipeline)", True, "vulkan")
    monkeypatch.setattr(select, "probe_rt", lambda kind=None: gpu)
    lines = []
    assert select.choose_backend_name(log=lines.append, rt_check=lambda kind, log: (True, "same contacts")) == "rt"
    assert lines[-1] == f"auto backend: rt on {gpu.text} (same contacts)"
    assert select.choose_backend_name(log=lines.append, rt_check=lambda kind, log: (False, "3 missing")) == "cpu"
    assert lines[-1] == f"auto backend: cpu; rt not used on {gpu.text}: 3 missing."

    def broken(kind, log):
        raise RuntimeError("VK_ERROR_DEVICE_LOST")
    assert select.choose_backend_name(log=lines.append, rt_check=broken) == "cpu"
    assert "VK_ERROR_DEVICE_LOST" in lines[-1]


def test_the_self_check_passes_here(rt_device):
    """The check itself, run directly on this device: the rt backend's contacts equal the CPU's."""
    passed, reason = run_rt_self_check(rt_device)
    assert passed, reason
    assert reason.startswith("the rt backend found the CPU backend's ") and "contacts on the self-check state" in reason


def test_the_self_check_is_remembered_per_device_and_driver(rt_device, tmp_path):
    from engine.backends.rt_driver import driver_of

    memory = SelfCheckMemory(tmp_path / "rt.json")
    lines = []
    assert rt_passes_self_check("vulkan", memory=memory, log=lines.append)[0]
    assert len(lines) == 1 and "once per device and driver" in lines[0]
    stored = json.loads((tmp_path / "rt.json").read_text())
    identity = rt_identity(rt_device)
    assert list(stored) == [identity]
    driver = driver_of("vulkan", rt_device.adapter)
    assert identity.startswith(f"vulkan | {rt_device.adapter} | {driver} | slangpy ")
    # A remembered answer is what the next call returns, without running the check again.
    memory.put(identity, False, "remembered")
    assert rt_passes_self_check("vulkan", memory=memory, log=lines.append) == (False, "remembered")
    assert len(lines) == 1


def _mochi(*args):
    return subprocess.run([sys.executable, "-m", "engine.cli.main", *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=600)


TINY = """
[scene]
name = "Tiny"
frames = 2
fps = 25

[time]
substeps = 40
stiffness = 2000.0

[domain]
lo = [0.0, 0.0, 0.0]
hi = [0.2, 0.2, 0.2]

[[materials]]
name = "grain"

[[emitters]]
type = "box"
count = 12
lo = [0.05, 0.05, 0.05]
hi = [0.15, 0.15, 0.15]
radius = 0.01
"""


def test_cli_bake_on_rt_with_a_forced_device(rt_device, tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY)
    result = _mochi("bake", str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "c"), "--backend", "rt",
                    "--rt-device", "vulkan", "--no-estimate")
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr and "Baked frames 1–2" in result.stdout
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["backend"] == "rt" and manifest["rt_device_requested"] == "vulkan"


@pytest.mark.parametrize("args, expected", [
    (["--backend", "rt", "--rt-device", "bogus"],
     "mochi: error: Unknown ray-tracing device 'bogus' for --rt-device; choose one of vulkan, d3d12, metal, cuda."),
    (["--backend", "cpu", "--rt-device", "vulkan"],
     "mochi: error: A ray-tracing device (--rt-device vulkan) applies to the rt and auto backends only, not to cpu."),
])
def test_cli_refuses_a_bad_rt_device_in_one_line(tmp_path, args, expected):
    (tmp_path / "tiny.toml").write_text(TINY)
    result = _mochi("bake", str(tmp_path / "tiny.toml"), "--out", str(tmp_path / "c"), *args)
    assert result.returncode == 2
    assert result.stderr.strip() == expected and result.stdout == ""
    assert not (tmp_path / "c").exists()


@pytest.mark.parametrize("command", ["contacts", "bench", "wedge"])
def test_every_command_with_a_backend_refuses_a_bad_rt_device(tmp_path, command):
    (tmp_path / "tiny.toml").write_text(TINY)
    args = {"contacts": ["contacts", str(tmp_path / "s.ply"), "--out", str(tmp_path / "c.npy")],
            "bench": ["bench", str(tmp_path / "tiny.toml")],
            "wedge": ["wedge", str(tmp_path / "tiny.toml"), "--vary", "seed=1..2", "--out", str(tmp_path / "w")]}
    result = _mochi(*args[command], "--rt-device", "opengl")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "Unknown ray-tracing device 'opengl'" in result.stderr and "Traceback" not in result.stderr
    result = _mochi(*args[command], "--backend", "cpu", "--rt-device", "vulkan")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert "applies to the rt and auto backends only" in result.stderr


def test_cli_contacts_on_a_forced_device_equal_the_oracle(rt_device, tmp_path):
    import numpy as np

    from engine.ply import write_points

    positions, radius = self_check_state(400)
    write_points(tmp_path / "s.ply", {"x": positions[:, 0], "y": positions[:, 1], "z": positions[:, 2],
                                      "radius": radius})
    for backend in ("rt", "brute"):
        extra = ["--rt-device", "vulkan"] if backend == "rt" else []
        result = _mochi("contacts", str(tmp_path / "s.ply"), "--out", str(tmp_path / f"{backend}.npy"),
                        "--backend", backend, *extra)
        assert result.returncode == 0, result.stderr
    assert np.array_equal(np.load(tmp_path / "rt.npy"), np.load(tmp_path / "brute.npy"))


def test_auto_falls_back_from_rt_to_cpu_saying_why():
    """'auto' told to start rt (as on a GPU whose self-check passed) on physics rt refuses: cpu runs."""
    import dataclasses

    model = _model()
    model = dataclasses.replace(model, physics=dataclasses.replace(model.physics, contact_normal="hertz"))
    lines = []
    runner = make_backend("auto", model, log=lines.append, choose=lambda log: "rt")
    assert runner.name == "cpu" and len(lines) == 1
    assert lines[0].startswith("auto backend: The rt backend has only the linear (Hooke) contact law")
    assert lines[0].endswith(" Using cpu instead.") and "rt not used" in runner.describe()

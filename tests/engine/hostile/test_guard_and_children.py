"""Point 4 of issue 25: the one top-level guard, child Blender processes, headless cache folders and
farm jobs.

``engine.cli.main.main`` turns RecursionError, MemoryError, OSError and Ctrl-C into one sentence; a
Blender child started by the CLI dies with it; a .blend naming an absolute cache folder outside its own
folder is refused headless unless --out is given; the Flamenco job never turns on script auto-run.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from engine.cache_files import check_blend_cache_folder
from engine.cache_integrity import with_manifest_digest
from engine.errors import MochiError

from .conftest import ROOT, TINY_PRESET, one_sentence, run_cli


def _spawn(code: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as handle:  # a zombie is dead
        return handle.read().split(")")[-1].split()[0] != "Z"


@pytest.mark.parametrize("where", ["export --follow", "wedge"])
def test_ctrl_c_is_one_sentence_and_exit_130(where, tmp_path):
    """SIGINT while a command runs: one sentence, status 130, no traceback (the guard wraps parsing and
    the imports of the subcommands too)."""
    (tmp_path / "empty").mkdir()
    preset = tmp_path / "p.toml"
    preset.write_text(TINY_PRESET.replace("frames = 3", "frames = 100000"))
    argv = ({"export --follow": ["export", str(tmp_path / "empty"), "--usd", str(tmp_path / "o.usda"), "--follow",
                                 "--idle", "600"],
             "wedge": ["wedge", str(preset), "--vary", "seed=1", "--out", str(tmp_path / "w"), "--no-sheet"]})[where]
    child = _spawn(f"""
        import sys
        from engine.cli.main import main
        print("ready", flush=True)
        sys.exit(main({argv!r}))
    """)
    assert child.stdout.readline().strip() == "ready"
    time.sleep(1.0)  # inside main, whatever it is doing
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=120)
    assert child.returncode == 130, err[-2000:]
    assert "Traceback" not in err
    assert [line for line in err.splitlines() if line.startswith("mochi: error: ")] == \
        [line for line in err.splitlines() if "Interrupted" in line] != []


def test_ctrl_c_inside_a_callback_from_c_still_stops_the_command():
    """A Ctrl-C that arrives while C code runs a Python callback (numba's compiler calls llvmlite's ctypes
    callbacks; seen in CI: the wedge went on baking for ever) is dropped by Python as unraisable; the
    guard delivers it again, so the command stops with its sentence. Deterministic: the callback raises
    the signal itself, and the command would otherwise sleep for a minute."""
    child = _spawn("""
        import argparse, ctypes, signal, sys, time
        from engine.cli import main as cli

        def command(args):
            def callback():
                signal.raise_signal(signal.SIGINT)  # Ctrl-C while C has called back into Python
                sum(range(1000))  # the handler runs here: KeyboardInterrupt inside the callback
            ctypes.CFUNCTYPE(None)(callback)()
            time.sleep(60)  # what the command goes on doing when the interrupt is lost
            return 0

        parser = argparse.ArgumentParser()
        parser.set_defaults(func=command)
        cli.build_parser = lambda: parser
        sys.exit(cli.main([]))
    """)
    _, err = child.communicate(timeout=50)
    assert child.returncode == 130, err[-2000:]
    assert "Traceback" not in err and "Exception ignored" not in err
    assert [line for line in err.splitlines() if line.startswith("mochi: error: ")] == \
        ["mochi: error: Interrupted; complete frames are kept (a bake continues with --resume)."]


def test_work_failing_after_a_dropped_ctrl_c_is_an_interrupt():
    """A Ctrl-C dropped inside a callback from C can make the work it cut short fail in its own way before
    it is delivered again (seen in CI: the wedge's numba compile, interrupted, then failed saving to its
    cache with "RuntimeError: no compiled object yet", a traceback and exit 1): exit 130 with the one
    sentence, and no stray interrupt after it."""
    child = _spawn("""
        import argparse, ctypes, signal, sys, time
        from engine.cli import main as cli

        def command(args):
            def callback():
                signal.raise_signal(signal.SIGINT)
                sum(range(1000))  # KeyboardInterrupt inside the callback: dropped
            ctypes.CFUNCTYPE(None)(callback)()
            raise RuntimeError("no compiled object yet")  # the cut-short work fails at once

        parser = argparse.ArgumentParser()
        parser.set_defaults(func=command)
        cli.build_parser = lambda: parser
        status = cli.main([])
        time.sleep(0.3)  # a re-delivery left pending would interrupt this
        print("after", flush=True)
        sys.exit(status)
    """)
    out, err = child.communicate(timeout=50)
    assert child.returncode == 130, err[-2000:]
    assert out.strip() == "after"
    assert "Traceback" not in err and "Exception ignored" not in err
    assert [line for line in err.splitlines() if line.startswith("mochi: error: ")] == \
        ["mochi: error: Interrupted; complete frames are kept (a bake continues with --resume)."]


def test_ctrl_c_reported_by_a_compiled_function_as_a_system_error_is_an_interrupt(monkeypatch, capsys):
    """Ctrl-C landing while a numba function returns reaches Python as "SystemError: ... returned a result
    with an exception set", the KeyboardInterrupt its cause (seen under load in the wedge case above): exit
    130 with the sentence; a SystemError of any other cause stays a bug."""
    import argparse

    from engine.cli import main as cli

    def command(error):
        parser = argparse.ArgumentParser()
        parser.set_defaults(func=lambda args: (_ for _ in ()).throw(error()))
        return parser

    def interrupted_numba_call():
        return _with_cause(SystemError("CPUDispatcher(<function transpose_pairs>) returned a result with an "
                                       "exception set"), KeyboardInterrupt())

    monkeypatch.setattr(cli, "build_parser", lambda: command(interrupted_numba_call))
    assert cli.main([]) == 130
    assert "Interrupted" in capsys.readouterr().err
    monkeypatch.setattr(cli, "build_parser", lambda: command(lambda: SystemError("a real bug")))
    with pytest.raises(SystemError, match="a real bug"):
        cli.main([])


def _with_cause(error: BaseException, cause: BaseException) -> BaseException:
    error.__cause__ = cause
    return error


def test_a_deeply_nested_colliders_file_reaches_the_guard_as_one_sentence(tmp_path):
    """RecursionError from a file no check reads first: the guard's sentence, not a traceback."""
    preset = tmp_path / "p.toml"
    bowl = (ROOT / "presets" / "meshes" / "bowl.obj").as_posix()
    preset.write_text(TINY_PRESET + f'\n[[colliders]]\ntype = "mesh"\npath = "{bowl}"\nposition = [0.1, 0.02, 0.1]\n')
    out = tmp_path / "c"
    assert run_cli("bake", preset, "--out", out, "--no-estimate", "--frames", "2").returncode == 0
    path = out / "colliders" / "colliders.json"
    path.write_text("[" * 200_000 + "]" * 200_000)
    manifest = json.loads((out / "manifest.json").read_text())
    manifest["file_digests"]["colliders/colliders.json"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest.pop("manifest_digest")
    (out / "manifest.json").write_text(json.dumps(with_manifest_digest(manifest)))
    sentence = one_sentence(run_cli("bake", preset, "--out", out, "--resume", "--frames", "3"))
    assert "nested too deeply" in sentence or "colliders" in sentence


def test_memory_exhaustion_is_one_sentence(tmp_path):
    """A PLY of 4 million points of radius 0.05 in a unit cube (some 10^10 touching pairs) under a
    1.5 GiB address-space limit: MemoryError in the brute-force count (SciPy's k-d tree, no compile
    first, so it comes within seconds), caught by the guard."""
    import numpy as np

    from engine.ply import write_points

    n = 4_000_000
    rng = np.random.default_rng(0)
    xyz = rng.random((n, 3), dtype=np.float32)
    write_points(tmp_path / "big.ply", {"x": xyz[:, 0], "y": xyz[:, 1], "z": xyz[:, 2],
                                         "radius": np.full(n, 0.05, np.float32)})
    result = run_cli("contacts", tmp_path / "big.ply", "--out", tmp_path / "c.npy", "--backend", "brute",
                     memory_gib=1.5, timeout=300)
    if result.returncode == 0:
        pytest.skip("the count fitted in 1.5 GiB here")
    sentence = one_sentence(result)
    assert "memory" in sentence


@pytest.mark.parametrize("directory, refused", [
    ("/srv/other_project/cache", True), ("/", True), ("/tmp", True), ("{home}/../elsewhere", True),
    ("{home}/mochi_shot", False), ("{home}", False), ("{home}/a/b/c", False), ("//mochi_shot", False),
    ("//../elsewhere", False), ("relative/cache", False), ("", False),
])
def test_headless_refuses_an_absolute_cache_folder_outside_the_blends_folder(directory, refused, tmp_path):
    home = tmp_path / "project"
    folder = directory.format(home=home)
    if refused:
        with pytest.raises(MochiError, match="give the cache folder with --out"):
            check_blend_cache_folder(home / "shot.blend", folder)
    else:
        check_blend_cache_folder(home / "shot.blend", folder)


@pytest.fixture(scope="module")
def blend_with_outside_cache(tmp_path_factory) -> tuple[Path, Path]:
    pytest.importorskip("bpy")
    folder = tmp_path_factory.mktemp("project")
    outside = tmp_path_factory.mktemp("someone_elses") / "cache"
    blend = folder / "shot.blend"
    script = f"""
        import sys
        sys.path.insert(0, {str(ROOT / "addon")!r})
        import headless
        sys.path.pop(0)
        import bpy
        package = headless.load_package()
        package.register()
        bpy.context.scene.mochi.cache_directory = {str(outside)!r}
        bpy.ops.wm.save_mainfile(filepath={str(blend)!r})
        package.unregister()
    """
    result = subprocess.run([sys.executable, "-c", textwrap.dedent(script)], cwd=ROOT, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    return blend, outside


def test_mochi_bake_of_a_blend_with_an_outside_cache_folder_is_refused(blend_with_outside_cache):
    blend, outside = blend_with_outside_cache
    sentence = one_sentence(run_cli("bake", blend, timeout=300))
    assert "outside the folder of 'shot.blend'" in sentence and "--out" in sentence
    assert not outside.exists()


def test_mochi_bake_of_a_blend_with_an_outside_cache_folder_and_out_is_not_refused_for_it(blend_with_outside_cache,
                                                                                          tmp_path):
    blend, _ = blend_with_outside_cache
    result = run_cli("bake", blend, "--out", tmp_path / "c", timeout=300)
    assert "outside the folder of" not in result.stderr


CHILD = """
    import sys
    from engine.cli.blender_bridge import run_child
    sys.exit(run_child([sys.executable, "-c", "import os, time; print(os.getpid(), flush=True); time.sleep(600)"]))
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL])
def test_a_child_started_by_the_cli_dies_with_it(signum):
    """SIGTERM is passed on; SIGKILL (nothing can be passed on) reaches the child through the kernel."""
    parent = _spawn(CHILD)
    child_pid = int(parent.stdout.readline())
    assert _alive(child_pid)
    parent.send_signal(signum)
    parent.wait(timeout=60)
    deadline = time.monotonic() + 60
    while _alive(child_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child_pid)
    if signum == signal.SIGTERM:
        assert parent.returncode == 128 + signal.SIGTERM


def test_the_child_exit_status_is_passed_on():
    from engine.cli.blender_bridge import run_child

    assert run_child([sys.executable, "-c", "raise SystemExit(7)"]) == 7


@pytest.mark.parametrize("job", sorted((ROOT / "addon" / "flamenco").glob("*.js")), ids=lambda p: p.name)
def test_flamenco_jobs_never_enable_script_auto_run(job):
    text = job.read_text()
    code = "\n".join(line.split("//")[0] for line in text.splitlines())
    assert " -y" not in code and "enable-autoexec" not in code and "{blenderArgs}" not in code
    if "blender" in code and "blendfile" in code:
        assert "--disable-autoexec" in code


@pytest.fixture
def tiny_disk(small_tmpfs):
    """A 64 KiB tmpfs; needs root."""
    return small_tmpfs("64k")


@pytest.mark.parametrize("suffix", [".usda", ".usdc"])
def test_usd_export_onto_a_full_disk_is_one_sentence(suffix, tiny_bake, tiny_disk):
    pytest.importorskip("pxr")
    (tiny_disk / "filler").write_bytes(b"\0" * 60 * 1024)
    sentence = one_sentence(run_cli("export", tiny_bake, "--usd", tiny_disk / f"o{suffix}"))
    assert "Cannot write" in sentence

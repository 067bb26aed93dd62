"""Issue 39 point 5: a wedge's worker processes die with the ``mochi wedge`` that started them.

Real processes throughout: a wedge of two long variants bakes in two workers; once both hold their
folders' locks (each worker's pid is in its folder's lock-owner record), the parent is signalled or
killed, and every worker, the multiprocessing resource tracker and any other child of the parent must be
gone within a generous bound, and each folder's lock must be free to take. No assertion is on how fast.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.cache_lock import OWNER_NAME, CacheLock

from .conftest import ROOT, TINY_PRESET

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")

#: Bound on every wait [s]: far beyond what a loaded two-core machine needs; nothing is timed.
PATIENCE_S = 240.0
LONG_PRESET = TINY_PRESET.replace("frames = 3", "frames = 100000")


def _stat(pid: int) -> list[str] | None:
    """Fields of /proc/PID/stat after the command name (state first), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None


def _alive(pid: int) -> bool:
    """Running, sleeping or stopped; a zombie (dead, not yet reaped by an orphan's new parent) is dead."""
    fields = _stat(pid)
    return fields is not None and fields[0] != "Z"


def _children(pid: int) -> set[int]:
    """The live processes whose parent is ``pid``."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = _stat(int(entry))
            if fields is not None and fields[1] == str(pid) and fields[0] != "Z":
                found.add(int(entry))
    return found


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _wait_for(condition, what: str, timeout: float = PATIENCE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"gave up waiting for {what}")


def _owner_pid(folder: Path) -> int | None:
    try:
        return int(json.loads((folder / OWNER_NAME).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _start_wedge(tmp_path: Path, *, out: Path | None = None, extra: tuple[str, ...] = (),
                 env: dict | None = None) -> subprocess.Popen:
    preset = tmp_path / "long.toml"
    preset.write_text(LONG_PRESET)
    out = out or tmp_path / "w"
    # Its own session: a signal for the wedge never reaches pytest.
    return subprocess.Popen([sys.executable, "-m", "engine.cli.main", "wedge", str(preset), "--vary", "seed=1,2",
                             "--out", str(out), "--jobs", "2", "--no-sheet", *extra],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})})


def _baking_workers(wedge: subprocess.Popen, out: Path) -> dict[Path, int]:
    """Wait until a worker of ``wedge`` holds each variant folder's lock; {folder: worker pid}."""
    folders = [out / "seed-1", out / "seed-2"]

    def holders():
        if wedge.poll() is not None:
            raise AssertionError(f"the wedge ended early ({wedge.returncode}): {wedge.stderr.read()[-2000:]}")
        pids = {folder: _owner_pid(folder) for folder in folders}
        return pids if all(pid is not None and _alive(pid) for pid in pids.values()) else None

    workers = _wait_for(holders, "both workers to hold their locks")
    assert set(workers.values()) <= _children(wedge.pid), "the lock holders are the wedge's own workers"
    return workers


def _assert_all_gone(pids: set[int], folders) -> None:
    _wait_for(lambda: not any(_alive(pid) for pid in pids), f"the processes {sorted(pids)} to end")
    for folder in folders:
        with CacheLock(folder, action="check"):  # refused (MochiError) while an orphan holds it
            pass


def _signal_and_check(wedge: subprocess.Popen, workers: dict[Path, int], signum: int, *, group: bool = False) -> int:
    """Send ``signum`` to the wedge (to its whole process group, as a terminal's Ctrl-C, with ``group``); wait
    for it; assert that nothing it started lives on; its status."""
    family = _children(wedge.pid)  # the workers and the resource tracker
    assert set(workers.values()) <= family
    assert any("resource_tracker" in _cmdline(pid) for pid in family) or len(family) >= 2
    if group:
        os.killpg(wedge.pid, signum)  # its own session: the group is the wedge's and its workers'
    else:
        wedge.send_signal(signum)
    wedge.wait(timeout=PATIENCE_S)
    wedge.stdout.close()
    _assert_all_gone(family, workers)
    return wedge.returncode


@pytest.mark.parametrize("signum, group", [(signal.SIGTERM, False), (signal.SIGINT, False), (signal.SIGINT, True),
                                           (signal.SIGKILL, False)],
                         ids=["SIGTERM", "SIGINT", "SIGINT to the process group", "SIGKILL"])
def test_the_workers_die_with_the_wedge(signum, group, tmp_path):
    """SIGTERM: the wedge stops its workers and dies of the signal (143); SIGINT: stops them, one sentence,
    exit 130 (the workers ignore a Ctrl-C sent to the whole group: the wedge acts on it once); SIGKILL: the
    kernel (PR_SET_PDEATHSIG) and each worker's watch of its parent end them."""
    wedge = _start_wedge(tmp_path)
    workers = _baking_workers(wedge, tmp_path / "w")
    status = _signal_and_check(wedge, workers, signum, group=group)
    err = wedge.stderr.read()
    assert "Traceback" not in err, err[-2000:]
    assert status == {signal.SIGTERM: -signal.SIGTERM, signal.SIGINT: 130, signal.SIGKILL: -signal.SIGKILL}[signum]
    if signum == signal.SIGINT:
        assert [line for line in err.splitlines() if line.startswith("mochi: error: ")] == \
            ["mochi: error: Interrupted; complete frames are kept (a bake continues with --resume)."]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=lambda s: s.name)
def test_stopped_workers_die_with_the_wedge(signum, tmp_path):
    """Workers frozen by SIGSTOP act on nothing but SIGKILL: the wedge's SIGTERM handling kills what does not
    stop, and the kernel's parent-death signal is SIGKILL."""
    wedge = _start_wedge(tmp_path)
    workers = _baking_workers(wedge, tmp_path / "w")
    for pid in workers.values():
        os.kill(pid, signal.SIGSTOP)
    try:
        _signal_and_check(wedge, workers, signum)
    finally:
        for pid in workers.values():
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)


def test_a_wedge_killed_while_its_workers_compile(tmp_path):
    """An empty numba cache: the workers compile the kernels for many seconds after taking their locks;
    SIGKILL of the wedge then still ends them (the compiler holds the interpreter, the kernel does not)."""
    wedge = _start_wedge(tmp_path, env={"MOCHI_NUMBA_CACHE_DIR": str(tmp_path / "numba")})
    workers = _baking_workers(wedge, tmp_path / "w")
    _signal_and_check(wedge, workers, signal.SIGKILL)


def test_a_second_wedge_into_the_same_folder_is_refused_and_leaves_the_first_alone(tmp_path):
    """Two wedges into one folder at once: the second (even with --overwrite) is refused with one sentence
    while the first's workers hold the folders; the first bakes on, then dies with its parent as ever."""
    first = _start_wedge(tmp_path)
    workers = _baking_workers(first, tmp_path / "w")
    for extra in ((), ("--overwrite",), ("--resume",)):
        second = _start_wedge(tmp_path, extra=extra)
        _, err = second.communicate(timeout=PATIENCE_S)
        assert second.returncode == 2, err[-2000:]
        assert "Traceback" not in err
        lines = [line for line in err.splitlines() if line.startswith("mochi: error: ")]
        assert len(lines) == 1, err[-2000:]
        assert {folder: _owner_pid(folder) for folder in workers} == workers  # the first's workers hold on
    _signal_and_check(first, workers, signal.SIGTERM)


@pytest.mark.parametrize("platform", ["linux", "darwin"])
def test_a_worker_ends_when_its_parent_is_gone_on_every_platform_s_path(platform, tmp_path):
    """A process started by a multiprocessing parent that then dies at once (``os._exit``, nothing passed on)
    ends by itself: on Linux through PR_SET_PDEATHSIG and the watch, elsewhere through the watch of the
    parent's sentinel alone ('darwin': the path macOS and Windows take, the sentinel being a pipe here; on
    Windows it is the parent's process handle, which cannot be tried on Linux). Without ``_die_with_parent``
    it would sleep for ten minutes."""
    script = tmp_path / "orphan.py"
    script.write_text(
        "import multiprocessing, os, sys, time\n"
        "def child(ready, platform):\n"
        "    sys.platform = platform\n"
        "    from engine.wedge_workers import _die_with_parent\n"
        "    _die_with_parent()\n"
        "    ready.set()\n"
        "    time.sleep(600)\n"
        "if __name__ == '__main__':\n"
        "    ctx = multiprocessing.get_context('spawn')\n"
        "    ready = ctx.Event()\n"
        f"    p = ctx.Process(target=child, args=(ready, {platform!r}))\n"
        "    p.start()\n"
        "    print(p.pid, flush=True)\n"
        "    ready.wait()\n"
        "    os._exit(0)\n")
    parent = subprocess.run([sys.executable, str(script)], cwd=ROOT, capture_output=True, text=True,
                            timeout=PATIENCE_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    orphan = int(parent.stdout.split()[0])
    try:
        _wait_for(lambda: not _alive(orphan), "the orphaned worker to end")
    finally:
        if _alive(orphan):
            os.kill(orphan, signal.SIGKILL)

"""Issue 39: Ctrl-C at any moment of the ``mochi`` console script, its import included, is one sentence and exit 130.

The console script is run as pip writes it (``from <module> import <function>`` with the entry point that
pyproject.toml names), in a real child process that gets a real SIGINT. To rule out Python's own start-up,
which no code of Mochi's can guard (and where a Ctrl-C ends with Python's message), the child starts with
SIGINT blocked, as a farm agent may start it: a SIGINT sent while the interpreter starts waits, and is
delivered where ``engine_entry`` unblocks it, the first thing it does. The delays spread the signals over
that moment, the import of the engine and the command itself; whichever each meets, the outcome must be
the same, so nothing here depends on timing.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import tomllib

import pytest

from .conftest import ROOT

pytestmark = pytest.mark.skipif(not hasattr(signal, "pthread_sigmask"), reason="POSIX signal masks")

#: Seconds between the start of the child and its SIGINT.
DELAYS = (0.0, 0.005, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.6)
SENTENCES = ("mochi: error: Interrupted while starting; nothing was done.",
             "mochi: error: Interrupted; complete frames are kept (a bake continues with --resume).")


def _console_script(tmp_path) -> str:
    """The script pip installs for ``mochi``, from pyproject.toml's entry point."""
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["mochi"]
    module, function = entry.split(":")
    script = tmp_path / "mochi"
    script.write_text(f"import sys\nfrom {module} import {function}\nif __name__ == '__main__':\n"
                      f"    sys.argv[0] = sys.argv[0].removesuffix('.exe')\n    sys.exit({function}())\n")
    return str(script)


def _block_sigint() -> None:
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def _interrupted(script: str, delay: float, *argv: str, block: bool = True) -> subprocess.CompletedProcess:
    child = subprocess.Popen([sys.executable, script, *argv], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, preexec_fn=_block_sigint if block else None,
                             env={**os.environ, "PYTHONPATH": str(ROOT)})
    time.sleep(delay)
    child.send_signal(signal.SIGINT)
    out, err = child.communicate(timeout=300)
    return subprocess.CompletedProcess(child.args, child.returncode, out, err)


def test_the_console_script_enters_through_the_guarded_entry():
    entry = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"]["mochi"]
    assert entry == "engine_entry:main"


def test_the_entry_imports_nothing_of_mochi_before_its_guard():
    """The entry module imports no engine module at its own import (that is where Ctrl-C was a traceback)."""
    code = "import sys, engine_entry; print(sorted(m for m in sys.modules if m.split('.')[0] == 'engine'))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert out.strip() == "[]"


def test_the_entry_exit_status_is_the_cli_s():
    from engine.cli.main import EXIT_INTERRUPTED
    import engine_entry

    assert engine_entry.EXIT_INTERRUPTED == EXIT_INTERRUPTED == 128 + signal.SIGINT


@pytest.mark.parametrize("delay", DELAYS)
def test_ctrl_c_at_any_moment_of_a_command_is_one_sentence_and_130(delay, tmp_path):
    result = _interrupted(_console_script(tmp_path), delay, "bench", "presets/sand_pile.toml", "--particles", "100",
                          "--steps", "100000")
    assert result.returncode == 130, result.stderr[-2000:]
    assert "Traceback" not in result.stderr and "KeyboardInterrupt" not in result.stderr, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("mochi: error: ")]
    assert len(lines) == 1 and lines[0] in SENTENCES, result.stderr[-2000:]


def test_ctrl_c_waiting_from_the_start_is_the_entry_s_sentence(tmp_path):
    """A SIGINT that waited through the whole start-up is delivered where the entry unblocks it: before any
    of the engine is imported, so it is the entry's own sentence."""
    script = _console_script(tmp_path)
    child = subprocess.Popen([sys.executable, "-c", "import os, signal, sys; os.kill(os.getpid(), signal.SIGINT); "
                              f"sys.argv = [{script!r}, '--version']; exec(open({script!r}).read())"],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             preexec_fn=_block_sigint, env={**os.environ, "PYTHONPATH": str(ROOT)})
    out, err = child.communicate(timeout=120)
    assert child.returncode == 130, err[-2000:]
    assert err.strip() == SENTENCES[0] and out == ""


def test_a_command_that_ended_keeps_its_status_whatever_comes_at_shutdown():
    """--version exits 0; a SIGINT that comes after the command returned (at the interpreter's shutdown)
    does not turn it into a traceback: the entry ignores SIGINT once the command is done."""
    result = subprocess.run([sys.executable, "-c", "import signal, sys, engine_entry\n"
                             "sys.argv = ['mochi', 'free', '--help']\n"
                             "try:\n    status = engine_entry.main()\nexcept SystemExit as exc:\n"
                             "    status = exc.code\n"
                             "import os; os.kill(os.getpid(), signal.SIGINT)\n"
                             "print('after', status, flush=True)\n"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert result.returncode == 0 and "after 0" in result.stdout, result.stderr[-2000:]
    assert "Traceback" not in result.stderr

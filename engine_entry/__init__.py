"""The ``mochi`` console script's entry point (pyproject.toml ``[project.scripts]``): Ctrl-C from the first line.

A console script imports its entry point's module before it calls anything, and every module of the
``engine`` package first runs ``engine/__init__.py``, which hashes the engine's sources to name numba's
cache folder: a Ctrl-C in that import (a tenth of a second on a busy machine) was a KeyboardInterrupt
traceback. This package is outside ``engine`` and imports nothing but ``sys`` and ``signal`` (loaded
while Python starts), so the guard below stands before any of Mochi is imported; ``engine.cli.main.main``
is the guard of everything after.

Only Python's own start-up, before this module runs, is not covered: a Ctrl-C there ends with Python's
message. A parent that must rule that out (a farm agent, the tests) starts ``mochi`` with SIGINT blocked:
``main`` unblocks it here, where a Ctrl-C that waited is handled like any other.
"""

import signal
import sys

#: Exit status of an interrupted command, as ``engine.cli.main.EXIT_INTERRUPTED`` (128 + SIGINT, as
#: shells report it); written out here because importing it would import the engine first.
EXIT_INTERRUPTED = 130
#: What a Ctrl-C before the command started says.
STARTUP_INTERRUPTED = "mochi: error: Interrupted while starting; nothing was done."


def main() -> int:
    """Import the CLI and run it, turning a Ctrl-C during the import into one sentence and exit 130; once
    the command has returned, a late Ctrl-C cannot turn its exit status into a traceback at shutdown."""
    try:
        if hasattr(signal, "pthread_sigmask"):  # POSIX; Windows delivers Ctrl-C as it comes
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
        from engine.cli.main import main as run_command
    except KeyboardInterrupt:
        _say(STARTUP_INTERRUPTED)
        return EXIT_INTERRUPTED
    try:
        return run_command()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)


def _say(sentence: str) -> None:
    try:
        print(sentence, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # a closed stderr: the exit status still says it

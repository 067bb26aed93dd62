"""The ``mochi`` command: parser and guard (the console script enters through ``engine_entry``, which guards
the import of this module).

Every subcommand module exposes ``register(subparsers)`` (adds its parser and sets ``func``) and
``run(args) -> int``. ``main`` is the one guard of every command: a ``MochiError`` becomes its sentence
on stderr and exit status 2; so do what hostile input can raise past the checks (a file nested too
deeply: RecursionError; a size no check foresaw: MemoryError; the file system: OSError) and Ctrl-C at
any moment (KeyboardInterrupt, exit 130), each as one sentence. Anything else is a bug and keeps its
traceback. Every sentence is printed with its control characters escaped.

A Ctrl-C that lands inside a callback from C (numba compiling through llvmlite calls back into Python
through ctypes) is printed as "Exception ignored" and dropped, and the command would go on as if it had
never come; ``_interrupts_not_dropped`` delivers it again, so that it reaches the guard. What fails
after such an interrupt (the work it cut short) counts as the interrupt.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import importlib
import signal
import sys
import threading

from .. import __version__
from ..errors import MochiError, escape_controls

SUBCOMMANDS = ("bake", "contacts", "bench", "pack", "render_preview", "free", "export", "wedge", "preset",
               "export_lammps", "import_lammps")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mochi", description="Sphere-packed grains simulated with DEM (Mochi collision detection).")
    parser.add_argument("--version", action="version", version=f"mochi {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in SUBCOMMANDS:
        try:
            module = importlib.import_module(f".{name}", __package__)
        except ModuleNotFoundError as exc:
            if exc.name and exc.name.endswith(f"cli.{name}"):
                continue  # subcommand not part of this build
            raise
        module.register(subparsers)
    return parser


#: Exit status of a refusal or failure, and of an interrupted command (128 + SIGINT, as shells do).
EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def _say(sentence: str) -> None:
    """Print one error sentence on stderr (control characters escaped), whatever state stderr is in."""
    try:
        print(f"mochi: error: {escape_controls(sentence)}", file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # a closed or full stderr: the exit status still says it


def _os_sentence(exc: OSError) -> str:
    what = exc.strerror or str(exc) or type(exc).__name__
    if exc.errno == errno.ENAMETOOLONG:
        what = "a file name is longer than the file system allows (255 bytes per name)"
    where = f" '{exc.filename}'" if exc.filename is not None else ""
    return f"Cannot use{where}: {what}."


@contextlib.contextmanager
def _interrupts_not_dropped():
    """Re-deliver a KeyboardInterrupt that Python could only report as unraisable (raised in a ctypes
    callback, a ``__del__``, a weakref callback...).

    The hook runs still inside the callback, where a new interrupt would be dropped again; so a timer
    thread sends SIGINT to the main thread a moment later (a real signal: it also wakes a sleep). Should
    that one land in a callback too, the hook fires again, until one propagates.
    """
    previous = sys.unraisablehook
    main_thread = threading.main_thread().ident
    dropped = threading.Event()  # an interrupt was dropped: what fails after it failed because of it
    timers = []

    def hook(unraisable):
        if issubclass(unraisable.exc_type, KeyboardInterrupt):
            dropped.set()
            again = threading.Timer(0.05, signal.pthread_kill, (main_thread, signal.SIGINT))
            again.daemon = True
            timers.append(again)
            again.start()
            return
        previous(unraisable)

    sys.unraisablehook = hook
    try:
        yield dropped
    finally:
        sys.unraisablehook = previous
        for timer in timers:  # the command has ended: no interrupt is left to deliver
            timer.cancel()


def _interrupted() -> int:
    _say("Interrupted; complete frames are kept (a bake continues with --resume).")
    return EXIT_INTERRUPTED


def _caused_by_interrupt(exc: BaseException) -> bool:
    """Whether a KeyboardInterrupt is in the chain of causes of ``exc``."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, KeyboardInterrupt):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def main(argv: list[str] | None = None) -> int:
    try:
        with _interrupts_not_dropped() as dropped:
            return _guarded_main(argv, dropped)
    except KeyboardInterrupt:  # in the instant before or after the guard below
        return _interrupted()


def _guarded_main(argv: list[str] | None, dropped: threading.Event) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except MochiError as exc:
        _say(str(exc))
    except KeyboardInterrupt:
        return _interrupted()
    except SystemError as exc:
        # Ctrl-C landing as a compiled (numba) function returns reaches us as "returned a result with an
        # exception set", the KeyboardInterrupt as its cause: an interrupt all the same.
        if not _caused_by_interrupt(exc):
            raise
        return _interrupted()
    except RecursionError:
        _say("An input is nested too deeply to be read (a preset, manifest or JSON file of thousands of nested "
             "tables or lists).")
    except MemoryError:
        _say("This machine ran out of memory for that input; it asks for far more than a scene of this size "
             "needs (check its counts, sizes and --particles).")
    except OSError as exc:
        _say(_os_sentence(exc))
    except Exception:
        # An interrupt dropped inside C code can make the work it cut short fail in its own way before it
        # is delivered again (seen in CI: numba saving to its cache a compilation the interrupt stopped,
        # "no compiled object yet"): an interrupt all the same. Without one, it is a bug: raised.
        if not dropped.is_set():
            raise
        return _interrupted()
    return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())

"""Installing an optional package with Blender's own Python, in a background process. No bpy here.

The preferences' install button (addon/preferences.py) runs ``pip install --target <extension user
folder>`` as a child process, so Blender's window keeps drawing through a ~92 MB download; a thread reads
pip's output as it comes (the last line is the status shown), and the main thread polls ``finished``
from a timer, as it polls a Pack (addon/pack_job.py) or a bake (addon/bake_job.py).
"""

from __future__ import annotations

import subprocess
import sys
import threading
from dataclasses import dataclass, field

#: Characters of pip's last line shown as the status.
STATUS_CHARS = 120


def pip_install_command(requirements: str | list[str], target: str, *, python: str | None = None,
                        no_deps: bool = False) -> list[str]:
    """The command installing ``requirements`` (e.g. 'slangpy==0.43.1') into the folder ``target``.

    Args:
        python: The interpreter (default: this one; inside Blender 2.91+, Blender's own Python).
        no_deps: Install exactly ``requirements``, none of their dependencies (which Blender may have
            already: a numpy in the extension's folder would shadow Blender's own).
    """
    names = [requirements] if isinstance(requirements, str) else list(requirements)
    return [python or sys.executable, "-m", "pip", "install", "--upgrade", "--no-input", "--disable-pip-version-check",
            *(["--no-deps"] if no_deps else []), "--target", target, *names]


def missing_pip_sentence(what: str, *, python: str | None = None) -> str | None:
    """The one thing to do when the interpreter has no pip to install ``what`` with, or None when it has."""
    from importlib.util import find_spec

    if find_spec("pip") is not None:
        return None
    return (f"Blender's Python has no pip to install {what} with: run \"{python or sys.executable}\" -m ensurepip "
            "once in a terminal, then click the install button again.")


@dataclass(eq=False)
class PackageInstall:
    """One ``command`` run in a child process, its output read by a thread.

    Attributes:
        command: The argument list (``pip_install_command``).
        what: What it installs, for the sentences ('slangpy 0.43.1').
        status: The last line the child printed ("" before any).
        error: One sentence when it failed, else None.
        finished: True once the child has exited (or could not start).
    """

    command: list[str]
    what: str
    status: str = ""
    error: str | None = None
    finished: bool = False
    _process: subprocess.Popen | None = field(default=None, repr=False)
    thread: threading.Thread | None = field(default=None, repr=False)

    def start(self) -> "PackageInstall":
        self.thread = threading.Thread(target=self._run, name="mochi-install", daemon=True)
        self.thread.start()
        return self

    def cancel(self) -> None:
        """Stop the child (Blender closing, the add-on disabled)."""
        process = self._process
        if process is not None and process.poll() is None:
            process.terminate()

    def join(self, timeout: float | None = None) -> bool:
        if self.thread is not None:
            self.thread.join(timeout)
        return self.finished

    def _run(self) -> None:
        try:
            self._process = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                             stdin=subprocess.DEVNULL, text=True, errors="replace")
        except OSError as exc:
            self.error = f"Installing {self.what} could not start {self.command[0]} ({exc.strerror or exc})."
            self.finished = True
            return
        last_error = ""
        for line in self._process.stdout:
            text = line.strip()
            if text:
                self.status = text[:STATUS_CHARS]
                if text.startswith("ERROR:") or "Error" in text.split(":", 1)[0]:
                    last_error = text
        code = self._process.wait()
        if code != 0:
            detail = (last_error or self.status or f"exit status {code}").rstrip(".")
            self.error = f"Installing {self.what} failed ({detail[:STATUS_CHARS * 2]})."
        self.finished = True

"""Download the wheels the Blender extension bundles: the CPU path's runtime dependencies, from PyPI.

    python scripts/fetch_wheels.py                                 # Python 3.11 (Blender 4.5-5.0), 4 platforms
    python scripts/fetch_wheels.py --python 3.13                   # Blender 5.1+
    python scripts/fetch_wheels.py --python 3.14                   # a distribution's Blender on 3.14
    python scripts/fetch_wheels.py --platform linux-x64 --check    # one platform; verify requirements

Wheels land, unmodified, in ``wheels/cp311/<platform>/`` (``wheels/`` is ignored by git). pip downloads
each pinned wheel with ``--only-binary=:all: --no-deps`` for the target platform and Python, so what a
platform gets does not depend on the machine that fetches. Afterwards every wheel's ``Requires-Dist``
(evaluated for the target platform and Python, extras left out) must be met by the other bundled wheels
or by Blender's own numpy, whose versions the wheels must accept.

numpy is never bundled: Blender ships it, and a second numpy in the extension's site-packages would
shadow Blender's.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WHEELS_DIR = REPO / "wheels"

#: Python of each Blender line: a separate set of zips per line, since compiled wheels differ.
PYTHON_LINES = {"3.11": "Blender 4.5 to 5.0", "3.13": "Blender 5.1 and newer",
                "3.14": "Linux distributions' Blender on Python 3.14 (Debian sid's 5.2 LTS)"}

#: Blender platform -> the pip platform tags to accept, most specific first. pip expands a macOS tag to
#: every older macOS, but not a manylinux tag, hence the explicit glibc list (Blender needs glibc 2.28).
PLATFORM_TAGS = {
    "linux-x64": tuple(f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1)) + ("manylinux2014_x86_64",),
    "windows-x64": ("win_amd64",),
    # scipy's arm64 wheels need macOS 12; Blender itself needs 11.2.
    "macos-arm64": ("macosx_12_0_arm64",),
    "macos-x64": ("macosx_11_0_x86_64",),
}

#: The runtime dependencies of the CPU path (engine/ and addon/ imports) and what they require
#: themselves, all versions in one place. numba needs llvmlite; scipy, trimesh and plyfile need only
#: numpy; filelock and tomli-w need nothing. tqdm is the shell CLI's progress bar and is not imported inside Blender.
PINS = {
    "numba": "0.68.1",
    "llvmlite": "0.50.0",
    # 1.15 accepts numpy >= 1.23.5: Blender 4.1/4.2 ship numpy 1.24.3 (1.17 would need 1.26.4).
    "scipy": "1.15.3",
    "trimesh": "5.2.0",
    "plyfile": "1.1.3",
    # The cache folder's lock (engine.cache_lock); pure Python, no requirements.
    "filelock": "4.2.11",
    # Presets saved from Blender (engine.preset_writer); pure Python, no requirements.
    "tomli-w": "1.2.0",
    # The settings schema's loader (engine.settings_schema); compiled (~0.2 MB a platform), no requirements.
    "msgspec": "0.22.0",
}
#: Exceptions to PINS. numba publishes no macOS x86_64 wheels after 0.62.1.
PINS_BY_PLATFORM = {"macos-x64": {"numba": "0.62.1", "llvmlite": "0.45.1"}}
#: Blender 5.1+ ships numpy 2 (bpy 5.2.3 on PyPI asks numpy>=2.2,<3), which scipy 1.17 covers longer.
PINS_BY_PYTHON = {"3.13": {"scipy": "1.17.1"}, "3.14": {"scipy": "1.17.1"}}

#: Packages Blender itself provides, never bundled.
PROVIDED_BY_BLENDER = ("numpy",)
#: numpy versions the bundled wheels must accept, per Python line: Blender 4.1/4.2's 1.24.3 and
#: 4.5/5.0's 1.26.4 (bpy 5.0.1 asks numpy>=1.26,<2). For 3.13 no Blender numpy is pinned down here.
BLENDER_NUMPY = {"3.11": ("1.24.3", "1.26.4"), "3.13": (), "3.14": ()}


def normalize(name: str) -> str:
    """A distribution name as wheel file names spell it (PEP 503 normalised, dashes as underscores)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def pins_for(python: str, platform: str) -> dict[str, str]:
    """Distribution name -> version bundled for one Python line and one Blender platform."""
    return {**PINS, **PINS_BY_PYTHON.get(python, {}), **PINS_BY_PLATFORM.get(platform, {})}


def wheel_dir(python: str, platform: str, *, root: Path = WHEELS_DIR) -> Path:
    """Folder of one platform's wheels, e.g. wheels/cp311/linux-x64."""
    return root / ("cp" + python.replace(".", "")) / platform


def find_wheels(python: str, platform: str, *, root: Path = WHEELS_DIR) -> list[Path] | None:
    """The pinned wheels already in the platform's folder, or None when one is missing."""
    folder = wheel_dir(python, platform, root=root)
    found = []
    for name, version in pins_for(python, platform).items():
        matches = sorted(folder.glob(f"{normalize(name)}-{version}-*.whl")) if folder.is_dir() else []
        if not matches:
            return None
        found.append(matches[0])
    return found


def fetch(python: str, platform: str, *, root: Path = WHEELS_DIR, quiet: bool = False) -> list[Path]:
    """Download one platform's pinned wheels with pip (nothing is fetched when they are there already).

    Raises:
        RuntimeError: pip failed (no network, a version without a wheel for the platform...).
    """
    if (found := find_wheels(python, platform, root=root)) is not None:
        return found
    folder = wheel_dir(python, platform, root=root)
    folder.mkdir(parents=True, exist_ok=True)
    abi = "cp" + python.replace(".", "")
    command = [sys.executable, "-m", "pip", "download", "--disable-pip-version-check", "--only-binary=:all:",
               "--no-deps", "--python-version", python, "--implementation", "cp", "--abi", abi, "--abi", "none",
               "--abi", "abi3", "--dest", str(folder)]
    for tag in PLATFORM_TAGS[platform]:
        command += ["--platform", tag]
    command += [f"{name}=={version}" for name, version in pins_for(python, platform).items()]
    if quiet:
        command.append("--quiet")
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        errors = [line for line in (result.stderr + result.stdout).splitlines() if line.startswith("ERROR")]
        raise RuntimeError(f"pip could not download the {platform} wheels for Python {python}: "
                           + (" ".join(errors) or result.stderr.strip()[-500:]))
    if (found := find_wheels(python, platform, root=root)) is None:
        held = sorted(p.name for p in folder.iterdir())
        raise RuntimeError(f"pip ran but {folder} lacks a pinned wheel; it holds {held}.")
    return found


def wheel_metadata(path: Path) -> list[str]:
    """The Requires-Dist lines of a wheel's METADATA."""
    with zipfile.ZipFile(path) as archive:
        (name,) = [n for n in archive.namelist() if n.count("/") == 1 and n.endswith(".dist-info/METADATA")]
        text = archive.read(name).decode("utf-8")
    return [line.split(":", 1)[1].strip() for line in text.splitlines() if line.startswith("Requires-Dist:")]


def marker_environment(python: str, platform: str) -> dict[str, str]:
    """The PEP 508 marker values of Blender's Python on a platform (for evaluating Requires-Dist)."""
    system, machine = platform.split("-")
    return {
        "python_version": python,
        "python_full_version": python + ".0",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "sys_platform": {"linux": "linux", "windows": "win32", "macos": "darwin"}[system],
        "os_name": "nt" if system == "windows" else "posix",
        "platform_system": {"linux": "Linux", "windows": "Windows", "macos": "Darwin"}[system],
        "platform_machine": {("linux", "x64"): "x86_64", ("windows", "x64"): "AMD64",
                             ("macos", "x64"): "x86_64", ("macos", "arm64"): "arm64"}[(system, machine)],
        "extra": "",
    }


def requirement_problems(wheels: list[Path], python: str, platform: str) -> list[str]:
    """Unmet runtime requirements of a platform's wheels: one sentence each, empty when all are met.

    A requirement is met by another bundled wheel of an accepted version, or by Blender's numpy when
    the wheel accepts every numpy version in BLENDER_NUMPY[python].
    """
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pip always carries a copy
        from pip._vendor.packaging.requirements import Requirement
    bundled = {normalize(p.name.split("-")[0]): p.name.split("-")[1] for p in wheels}
    environment = marker_environment(python, platform)
    problems = []
    for wheel in wheels:
        for line in wheel_metadata(wheel):
            requirement = Requirement(line)
            if requirement.marker is not None and not requirement.marker.evaluate(environment):
                continue  # an extra, or another platform's requirement
            name = normalize(requirement.name)
            if name in PROVIDED_BY_BLENDER:
                refused = [v for v in BLENDER_NUMPY.get(python, ()) if not requirement.specifier.contains(v)]
                if refused:
                    problems.append(f"{wheel.name} requires {requirement}; "
                                    f"Blender's numpy {refused[0]} does not meet it.")
            elif name not in bundled:
                problems.append(f"{wheel.name} requires {requirement}, which is not bundled.")
            elif not requirement.specifier.contains(bundled[name], prereleases=True):
                problems.append(f"{wheel.name} requires {requirement}, but {name} {bundled[name]} is bundled.")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", choices=sorted(PYTHON_LINES), default="3.11",
                        help="Python of the Blender line: " + "; ".join(f"{k} for {v}" for k, v in PYTHON_LINES.items()))
    parser.add_argument("--platform", action="append", choices=sorted(PLATFORM_TAGS),
                        help="a Blender platform (repeatable); all four by default")
    parser.add_argument("--dest", type=Path, default=WHEELS_DIR, help="root folder of the wheels (default wheels/)")
    args = parser.parse_args(argv)
    status = 0
    for platform in args.platform or list(PLATFORM_TAGS):
        try:
            wheels = fetch(args.python, platform, root=args.dest, quiet=True)
        except RuntimeError as exc:
            print(f"fetch_wheels: error: {exc}", file=sys.stderr)
            return 2
        problems = requirement_problems(wheels, args.python, platform)
        size = sum(p.stat().st_size for p in wheels) / 2**20
        print(f"{platform} (Python {args.python}): {len(wheels)} wheels, {size:.1f} MiB in "
              f"{wheel_dir(args.python, platform, root=args.dest)}")
        for problem in problems:
            print(f"fetch_wheels: error: {problem}", file=sys.stderr)
            status = 2
    return status


if __name__ == "__main__":
    sys.exit(main())

"""Build the self-contained extension zips, one per platform, with the Python dependencies as wheels.

    python scripts/build_extension.py                          # dist/mochi-0.1.0-<platform>.zip (Python 3.11)
    python scripts/build_extension.py --platform linux-x64     # one platform
    python scripts/build_extension.py --python 3.13            # dist/mochi-0.1.0-python3.13-<platform>.zip
    python scripts/build_extension.py --python 3.14            # a distribution's Blender on Python 3.14

Steps: fetch the missing wheels (scripts/fetch_wheels.py) and check that their requirements are met;
build the plain extension from the repository with Blender's own tool, so that the committed manifest's
exclusions decide which files ship; unpack it into a temporary folder, add wheels/ and a manifest that
lists `platforms` and `wheels`; build there with `--split-platforms`; validate each zip with the same
tool and print its size. The committed blender_manifest.toml lists no wheels, so the repository stays
a valid (wheel-less) extension for development and tests.

Blender's tool is bl_pkg's blender_ext.py, taken from the bpy module of the Python running this script
(`pip install bpy==5.0.1`), or from a Blender installation with --blender-ext PATH.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import shutil
import subprocess
import sys
import tempfile
import tomllib
import zipfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import fetch_wheels  # noqa: E402  (a sibling script, not a package)

REPO = fetch_wheels.REPO
MANIFEST = "blender_manifest.toml"


class BuildError(Exception):
    """The extension cannot be built; the message is one sentence for the user."""


def extension_tool() -> Path:
    """Blender's extension command-line tool (bl_pkg's blender_ext.py) shipped in the bpy module."""
    spec = importlib.util.find_spec("bpy")
    if spec is not None and spec.submodule_search_locations:
        for folder in spec.submodule_search_locations:
            found = sorted(Path(folder).glob("*/scripts/addons_core/bl_pkg/cli/blender_ext.py"))
            if found:
                return found[-1]
    raise BuildError("Blender's extension tool blender_ext.py was not found: install the bpy module "
                     "(pip install bpy==5.0.1) or pass --blender-ext PATH.")


def run_tool(tool: Path, *args: str) -> str:
    """Run blender_ext.py with the given arguments; its output, or BuildError with that output."""
    result = subprocess.run([sys.executable, str(tool), *args], capture_output=True, text=True)
    output = (result.stdout + result.stderr).strip()
    if result.returncode != 0:
        raise BuildError(f"Blender's extension tool failed on '{' '.join(args)}': {output}")
    return output


def manifest_with_wheels(text: str, platforms: list[str], wheels: list[str]) -> str:
    """The manifest text with top-level `platforms` and `wheels` keys added before its first table."""
    lines = text.splitlines(keepends=True)
    first_table = next(i for i, line in enumerate(lines) if line.lstrip().startswith("["))
    added = ["# Written by scripts/build_extension.py for this build.\n",
             "platforms = " + json.dumps(platforms) + "\n",
             "wheels = [\n", *(f"  {json.dumps(w)},\n" for w in wheels), "]\n", "\n"]
    result = "".join(lines[:first_table] + added + lines[first_table:])
    data = tomllib.loads(result)
    assert data["platforms"] == platforms and data["wheels"] == wheels, "wheels must be top-level keys"
    return result


def zip_name(manifest: dict, python: str) -> str:
    """The output file name handed to the tool, which inserts '-<platform>' before '.zip'."""
    line = "" if python == "3.11" else f"-python{python}"
    return f"{manifest['id']}-{manifest['version']}{line}.zip"


def gather_wheels(python: str, platforms: list[str], *, fetch_missing: bool) -> dict[str, list[Path]]:
    """Each platform's wheels, fetched if missing and allowed, with their requirements checked."""
    wheels = {}
    for platform in platforms:
        found = fetch_wheels.find_wheels(python, platform)
        if found is None:
            if not fetch_missing:
                raise BuildError(f"The {platform} wheels for Python {python} are missing from "
                                 f"{fetch_wheels.wheel_dir(python, platform)}; run scripts/fetch_wheels.py.")
            try:
                found = fetch_wheels.fetch(python, platform, quiet=True)
            except RuntimeError as exc:
                raise BuildError(str(exc)) from None
        if problems := fetch_wheels.requirement_problems(found, python, platform):
            raise BuildError(" ".join(problems))
        wheels[platform] = found
    return wheels


def build(*, python: str = "3.11", platforms: list[str] | None = None, output_dir: Path = REPO / "dist",
          fetch_missing: bool = True, tool: Path | None = None) -> list[Path]:
    """Build, validate and return one extension zip per platform.

    Raises:
        BuildError: wheels missing or inconsistent, or Blender's tool refused the build or a zip.
    """
    platforms = platforms or list(fetch_wheels.PLATFORM_TAGS)
    tool = tool or extension_tool()
    wheels = gather_wheels(python, platforms, fetch_missing=fetch_missing)
    output_dir = Path(output_dir).resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mochi-extension-") as temp:
        temp = Path(temp)
        # The plain build applies the committed manifest's [build] exclusions with Blender's own rules.
        run_tool(tool, "build", "--source-dir", str(REPO), "--output-filepath", str(temp / "plain.zip"))
        source = temp / "source"
        with zipfile.ZipFile(temp / "plain.zip") as archive:
            archive.extractall(source)
        (source / "wheels").mkdir()
        listed = []
        for platform in platforms:
            for wheel in wheels[platform]:
                if not (source / "wheels" / wheel.name).exists():  # a pure wheel serves every platform
                    shutil.copy2(wheel, source / "wheels" / wheel.name)
                    listed.append(f"./wheels/{wheel.name}")
        text = (REPO / MANIFEST).read_text(encoding="utf-8")
        (source / MANIFEST).write_text(manifest_with_wheels(text, platforms, sorted(listed)), encoding="utf-8")
        manifest = tomllib.loads(text)
        output = output_dir / zip_name(manifest, python)
        run_tool(tool, "build", "--source-dir", str(source), "--output-filepath", str(output), "--split-platforms")
    zips = []
    for platform in platforms:
        path = output.with_name(f"{output.stem}-{platform.replace('-', '_')}{output.suffix}")
        if not path.is_file():
            raise BuildError(f"Blender's tool did not write {path}.")
        run_tool(tool, "validate", str(path))
        check_zip(path, wheels[platform])
        zips.append(path)
    return zips


def check_zip(path: Path, wheels: list[Path]) -> None:
    """The zip holds exactly its platform's wheels and nothing that should stay out (tests, caches, git)."""
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    bundled = sorted(n for n in names if n.startswith("wheels/"))
    expected = sorted(f"wheels/{w.name}" for w in wheels)
    if bundled != expected:
        raise BuildError(f"{path.name} bundles {bundled}, expected {expected}.")
    stray = [n for n in names if n.split("/")[0] in ("tests", "benchmarks", ".git", ".venv", "docs", "scripts")
             or "__pycache__/" in n or n.endswith((".pyc", ".nbi", ".nbc"))]
    if stray:
        raise BuildError(f"{path.name} contains files that must stay out of it, e.g. {stray[0]}.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--python", choices=sorted(fetch_wheels.PYTHON_LINES), default="3.11",
                        help="Python of the Blender line: " + "; ".join(
                            f"{k} for {v}" for k, v in fetch_wheels.PYTHON_LINES.items()))
    parser.add_argument("--platform", action="append", choices=sorted(fetch_wheels.PLATFORM_TAGS),
                        help="a Blender platform (repeatable); all four by default")
    parser.add_argument("--output-dir", type=Path, default=REPO / "dist", help="where the zips go (default dist/)")
    parser.add_argument("--no-fetch", action="store_true", help="fail instead of downloading missing wheels")
    parser.add_argument("--blender-ext", type=Path, help="path of Blender's blender_ext.py (default: from bpy)")
    args = parser.parse_args(argv)
    try:
        zips = build(python=args.python, platforms=args.platform, output_dir=args.output_dir,
                     fetch_missing=not args.no_fetch, tool=args.blender_ext)
    except BuildError as exc:
        print(f"build_extension: error: {exc}", file=sys.stderr)
        return 2
    for path in zips:
        print(f"{path}  {path.stat().st_size / 2**20:.1f} MiB  (validated)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

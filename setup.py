"""The packages of the wheel: engine and addon with their subpackages, plus the kernels/ and presets/
folders installed inside the engine package (engine.resources finds them there). pyproject.toml holds
everything else; only a mapping of folders onto packages needs this file."""

from setuptools import find_packages, setup

DATA_PACKAGES = {"engine.kernels": "kernels", "engine.presets": "presets", "engine.presets.meshes": "presets/meshes",
                 "engine.presets.looks": "presets/looks"}

setup(packages=find_packages(include=["engine*", "addon*"]) + list(DATA_PACKAGES), package_dir=DATA_PACKAGES)

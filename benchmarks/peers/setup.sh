#!/usr/bin/env bash
# Installs the peer DEM codes of the benchmarks and validation: Debian's lammps (GRANULAR package, `lmp`)
# and liggghts (`liggghts`), and OpenMPI with lammps (`mpirun`). Needs root (or sudo) and Debian's archive;
# `scripts/setup.sh all` runs it, and the tests that need a peer skip where it could not install them.
set -euo pipefail
if command -v lmp >/dev/null && command -v liggghts >/dev/null && command -v mpirun >/dev/null; then
    exit 0
fi
SUDO=""
[ "$(id -u)" = 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq lammps liggghts >/dev/null
command -v lmp >/dev/null && command -v liggghts >/dev/null && command -v mpirun >/dev/null

#!/usr/bin/env bash
# Makes Vulkan ray tracing available on a machine without a GPU: Mesa's lavapipe (a CPU Vulkan driver)
# of Mesa >= 24.1, which has acceleration structures, ray queries and ray-tracing pipelines. The `rt`
# backend's tests run on it (exact, and no speed figure). Debian 12's own Mesa (22.3) has no ray
# tracing, so on Debian 12 this adds the bookworm-backports suite of the archive the machine already
# uses and installs mesa-vulkan-drivers from it (25.0.x), as root with apt.
#
# Idempotent and offline once done: a new enough driver already installed ends the script at once,
# before any apt call. Where it cannot install (not root, not Debian 12, no archive), it says why in
# one sentence and exits 0: the rt tests then skip with the reason.
set -euo pipefail

MIN_MESA=24.1
installed=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
if [ -n "$installed" ] && dpkg --compare-versions "$installed" ge "$MIN_MESA"; then
    exit 0
fi
say() { echo "install_lavapipe: $*; the rt backend's tests will skip." >&2; exit 0; }
[ "$(id -u)" = 0 ] || say "Mesa's Vulkan driver $MIN_MESA or newer is not installed and this is not root"
command -v apt-get >/dev/null || say "no apt-get: install Mesa $MIN_MESA+ (mesa-vulkan-drivers) by hand"
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
target=()
if [ "$codename" = bookworm ]; then
    # The archive the machine already uses, as named in its deb822 or one-line sources.
    uri=$(grep -hs '^URIs:' /etc/apt/sources.list.d/*.sources | grep -v security | head -1 | awk '{print $2}')
    [ -n "$uri" ] || uri=$(grep -hs '^deb ' /etc/apt/sources.list | grep -v security | head -1 | awk '{print $2}')
    [ -n "$uri" ] || say "no Debian archive found in apt's sources"
    cat >/etc/apt/sources.list.d/mochi-backports.sources <<SOURCES
Types: deb
URIs: $uri
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
    target=(-t bookworm-backports)
fi
echo "install_lavapipe: installing Mesa's Vulkan drivers (lavapipe with ray tracing)" >&2
apt-get update -qq >/dev/null || say "apt-get update failed (no network?)"
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${target[@]}" mesa-vulkan-drivers >/dev/null \
    || say "apt-get could not install mesa-vulkan-drivers"
installed=$(dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true)
dpkg --compare-versions "${installed:-0}" ge "$MIN_MESA" || say "the archive offers Mesa $installed, older than $MIN_MESA"

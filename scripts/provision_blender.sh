#!/usr/bin/env bash
# Prints the path of a real Blender executable for the real-executable test tier, provisioning one
# on first use.
#
#   $BLENDER set            -> that executable, as given (nothing is downloaded).
#   otherwise               -> Debian sid's `blender` package (5.2 LTS, system Python 3.14) in a
#                              `debootstrap --variant=minbase` chroot cached under
#                              ${MOCHI_BLENDER_CACHE:-~/.cache/mochi/blender-sid}; the printed path is a
#                              wrapper that runs Blender inside the chroot with /proc, /dev, /sys, /tmp
#                              and the checkout bind-mounted at their own paths (a private mount
#                              namespace per call: nothing stays mounted on the host).
# The chroot also holds Xvfb, xdotool, xwd and Mesa's software OpenGL and EGL for the UI test and the
# EEVEE renders (tests/addon/test_blender_executable.py).
# (Debian names the cattrs package python3-cattr.) Provisioning needs root, debootstrap and Debian's
# archive (1.4 GB on disk, about 3 minutes); later calls only check a stamp file and need no network.
# Exit 1 with one sentence when it cannot provision.
set -euo pipefail

if [ -n "${BLENDER:-}" ]; then
    if [ -x "$BLENDER" ] || command -v "$BLENDER" >/dev/null 2>&1; then
        command -v "$BLENDER"
        exit 0
    fi
    echo "provision_blender: \$BLENDER=$BLENDER is not an executable." >&2
    exit 1
fi

CACHE=${MOCHI_BLENDER_CACHE:-$HOME/.cache/mochi/blender-sid}
ROOT=$CACHE/root
WRAPPER=$CACHE/blender
# Everything the chroot holds; a change here re-provisions (the stamp holds this list).
PACKAGES="blender python3-numpy python3-cattr python3-requests python3-zstandard python3-pytest xvfb xauth xdotool libgl1-mesa-dri libegl1 libegl-mesa0 x11-apps ca-certificates"
MIRROR=${MOCHI_DEBIAN_MIRROR:-http://deb.debian.org/debian}
STAMP_WANT="sid $PACKAGES"

if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP_WANT" ] && [ -x "$WRAPPER" ]; then
    echo "$WRAPPER"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "provision_blender: building the Blender chroot needs root; set \$BLENDER to a Blender executable instead." >&2
    exit 1
fi
if ! command -v debootstrap >/dev/null 2>&1; then
    apt-get install -y -qq debootstrap >/dev/null || {
        echo "provision_blender: debootstrap is missing and apt-get could not install it." >&2; exit 1; }
fi

mkdir -p "$CACHE"
# Two test runs provisioning at once would debootstrap into the same folder: the second waits.
exec 9>"$CACHE/lock"
flock 9
if [ -f "$CACHE/stamp" ] && [ "$(cat "$CACHE/stamp")" = "$STAMP_WANT" ] && [ -x "$WRAPPER" ]; then
    echo "$WRAPPER"
    exit 0
fi
if [ ! -x "$ROOT/usr/bin/apt-get" ]; then
    rm -rf "$ROOT"
    echo "provision_blender: debootstrap of Debian sid into $ROOT (once; several minutes)" >&2
    debootstrap --variant=minbase sid "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 || {
        echo "provision_blender: debootstrap failed; see $CACHE/debootstrap.log." >&2; exit 1; }
fi

in_chroot() {
    # A private mount namespace: /proc and /dev exist for apt and Blender, and vanish with the call.
    unshare --mount --propagation private bash -c '
        root=$1; shift
        mount -t proc proc "$root/proc"
        mount --rbind /dev "$root/dev"
        exec chroot "$root" "$@"' _ "$ROOT" "$@"
}

echo "provision_blender: installing $PACKAGES into the chroot" >&2
# sid's Release file is re-signed often and its Valid-Until can lag behind this machine's clock.
in_chroot env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false update -qq \
    >"$CACHE/apt.log" 2>&1
in_chroot env DEBIAN_FRONTEND=noninteractive apt-get -o Acquire::Check-Valid-Until=false install -y \
    -qq --no-install-recommends $PACKAGES >>"$CACHE/apt.log" 2>&1 || {
    echo "provision_blender: apt-get install in the chroot failed; see $CACHE/apt.log." >&2; exit 1; }
in_chroot apt-get clean

cat >"$WRAPPER" <<WRAP
#!/usr/bin/env bash
# Runs Debian sid's Blender inside $ROOT (made by scripts/provision_blender.sh).
# The host's /tmp, /dev, /sys and the directory tree of the current checkout appear at their own paths,
# so file arguments and the working directory mean the same inside.
exec unshare --mount --propagation private bash -c '
    root=\$1; cwd=\$2; shift 2
    mount -t proc proc "\$root/proc"
    mount --rbind /dev "\$root/dev"
    mount --rbind /sys "\$root/sys"
    mount --bind /tmp "\$root/tmp"
    for dir in \${MOCHI_BLENDER_BIND:-} "\$cwd"; do
        mkdir -p "\$root\$dir" && mount --bind "\$dir" "\$root\$dir"
    done
    cd "\$root" && exec chroot "\$root" bash -c "cd \"\\\$0\" && exec \"\\\$@\"" "\$cwd" "\${MOCHI_BLENDER_PROGRAM:-blender}" "\$@"' \
    _ "$ROOT" "\$PWD" "\$@"
WRAP
chmod +x "$WRAPPER"
echo "$STAMP_WANT" >"$CACHE/stamp"
echo "$WRAPPER"

#!/usr/bin/env bash
# Sets up rootful podman for building and running kjit's image on a machine
# with no Docker engine and no container registry, and makes the `debian:12`
# base image locally with debootstrap from the Debian archive apt already
# uses. Idempotent: podman, the configuration and the base image are reused
# when present (the base is made once, a few minutes; later runs take a
# second).
#
#   scripts/podman-base.sh            then: . "$KJIT_PODMAN_DIR/env.sh"; podman build ...
#
# Everything podman keeps (images, containers, layers) lives under
# KJIT_PODMAN_DIR (default /var/tmp/kjit-podman), apart from the system's own
# podman state. `podman` must be called with the environment of env.sh.
set -euo pipefail

dir=${KJIT_PODMAN_DIR:-/var/tmp/kjit-podman}
apt_get=(apt-get -o DPkg::Lock::Timeout=900)
sudo_cmd=()
if [[ $(id -u) -ne 0 ]]; then sudo_cmd=(sudo); fi

# The Debian archive of apt's sources that serves the suite bookworm itself
# (not bookworm-security or -updates): a deb822 .sources stanza's URIs: with
# that suite in its Suites:, or a one-line entry `deb [options] URI bookworm`.
debian_archive() {
  local f
  for f in /etc/apt/sources.list.d/*.sources /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [[ -r $f ]] || continue
    awk 'function stanza_end() { if (uri != "" && suite) { print uri; uri = ""; exit } uri = ""; suite = 0 }
         /^[[:space:]]*#/ { next }
         /^[[:space:]]*$/ { stanza_end(); next }
         /^URIs:/ { uri = $2 }
         /^Suites:/ { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
         $1 == "deb" { for (i = 2; i < NF; i++) if ($i ~ /^[a-z+]+:\/\// && $(i + 1) == "bookworm") { print $i; exit } }
         END { stanza_end() }' "$f"
  done | head -1
}

# runc, not crun: crun refuses hosts whose cgroups are a hybrid v1/v2 layout.
missing=()
for p in podman runc debootstrap; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then missing+=("$p"); fi
done
if ((${#missing[@]})); then
  echo "podman-base: installing ${missing[*]}"
  "${sudo_cmd[@]}" "${apt_get[@]}" update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" "${apt_get[@]}" install -y -qq "${missing[@]}" >/dev/null
fi

mkdir -p "$dir"/{storage,run,tmp,networks}
cat >"$dir/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$dir/storage"
runroot = "$dir/run"
EOF
# Host networking (no CNI setup needed, and builds reach apt and PyPI the way
# this host does). The ulimits stay within the hard limits root may have
# where it lacks CAP_SYS_RESOURCE (podman's defaults, far higher, then fail
# with "error setting rlimits").
nofile=$(ulimit -Hn)
nproc=$(ulimit -Hu)
if [[ $nofile == unlimited ]] || ((nofile > 20000)); then nofile=20000; fi
if [[ $nproc == unlimited ]] || ((nproc > 32768)); then nproc=32768; fi
cat >"$dir/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$nofile:$nofile", "nproc=$nproc:$nproc"]
netns = "host"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
tmp_dir = "$dir/tmp"
[network]
network_config_dir = "$dir/networks"
EOF
cat >"$dir/env.sh" <<EOF
export CONTAINERS_CONF=$dir/containers.conf CONTAINERS_STORAGE_CONF=$dir/storage.conf TMPDIR=$dir/tmp
EOF
# shellcheck source=/dev/null
. "$dir/env.sh"

if podman image exists localhost/debian:12; then
  echo "podman-base: debian:12 present ($dir)"
  exit 0
fi

root=$dir/rootfs
if [[ ! -x $root/bin/bash ]]; then
  rm -rf "$root"
  # The Debian archive apt is configured with on this machine, never one
  # written here: a host that reaches Debian only through its own mirror or
  # proxy must build from that.
  mirror=$(debian_archive)
  if [[ -z $mirror ]]; then
    echo "podman-base: no Debian archive in apt's sources (/etc/apt/sources.list, /etc/apt/sources.list.d/);" \
      "debootstrap needs one to make the debian:12 base" >&2
    exit 1
  fi
  echo "podman-base: debootstrap bookworm from $mirror, apt's archive (a few minutes, once)"
  if ! debootstrap --variant=minbase bookworm "$root.part" "$mirror" >"$dir/debootstrap.log" 2>&1; then
    echo "podman-base: debootstrap failed; see $dir/debootstrap.log" >&2
    tail -5 "$dir/debootstrap.log" >&2
    exit 1
  fi
  mv "$root.part" "$root"
fi
# The base reaches the network as this host does: its apt sources and
# settings, its extra CA certificates (picked up by an image that installs
# ca-certificates), pip told to use the system bundle.
rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root/etc/apt/sources.list"
mkdir -p "$root/var/lib/apt/lists/partial" "$root/usr/local/share/ca-certificates"
cp /etc/apt/sources.list.d/* "$root/etc/apt/sources.list.d/" 2>/dev/null || true
if [[ -f /etc/apt/sources.list ]]; then cp /etc/apt/sources.list "$root/etc/apt/"; fi
if grep -rqs 'Check-Valid-Until' /etc/apt/apt.conf.d/; then
  echo 'Acquire::Check-Valid-Until "false";' >"$root/etc/apt/apt.conf.d/99valid-until"
fi
cp /usr/local/share/ca-certificates/* "$root/usr/local/share/ca-certificates/" 2>/dev/null || true
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"$root/etc/pip.conf"

tar -C "$root" -c . | podman import --quiet \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["bash"]' - localhost/debian:12 >/dev/null
# No registry's name is given to it: podman resolves the short name
# `debian:12` of a FROM line to localhost/debian:12 before any registry.
podman tag localhost/debian:12 localhost/debian:bookworm
echo "podman-base: made debian:12 ($dir)"

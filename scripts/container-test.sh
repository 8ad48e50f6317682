#!/usr/bin/env bash
# The container image end to end (make test-container): builds it with
# podman from the host's build/bin/kjitd and build/bin/kjit (the Dockerfile's
# runtime-prebuilt target; KJIT_CTEST_FROM_SOURCE=1 builds the `runtime`
# target, which compiles them in the image), runs kjitd in it with the socket
# directory bind-mounted, and from the host's CLI compiles a kernel for
# cuda:90 and cuda:107 (NVIDIA's 13.5 wheels in the image) and a TTIR with
# the image's Triton build, asks for health
# and the cache's statistics (with a Redis tier, a redis-server on the
# host's loopback, when redis-server is installed), then stops the container
# and checks kjitd exited 0. Then runs deploy/kjitd.service under systemd in
# a privileged container of the image (ready by sd_notify, direct reads
# for the socket's group, gRPC for others). Prints the image's size, its layers, and kjitd's start time
# (start to health SERVING) in the container and on the host.
#
# Needs root (rootful podman) and, the first time, Debian's archive and
# PyPI: scripts/podman-base.sh installs podman and makes the debian:12 base
# once; podman keeps the image's layers, so later runs rebuild only what
# changed.
#
#   KJIT_PODMAN_DIR         podman's state (default /var/tmp/kjit-podman)
#   KJIT_CTEST_IMAGE        the image's name (default localhost/kjit:test)
#   KJIT_CTEST_START_RUNS   start-time samples, container and host (default 3)
#   KJIT_CTEST_FROM_SOURCE  1: build the image's binaries from source
set -euo pipefail
cd "$(dirname "$0")/.."

t_begin=$EPOCHREALTIME
image=${KJIT_CTEST_IMAGE:-localhost/kjit:test}
start_runs=${KJIT_CTEST_START_RUNS:-3}
kjit=$PWD/build/bin/kjit
kjitd=$PWD/build/bin/kjitd
work=$(mktemp -d /tmp/kjit-ctest.XXXXXX)
podman_log=$work/podman.log
containers=()
host_pid=
redis_pid=
failures=()

# --- helpers

say() { printf 'container-test: %s\n' "$*"; }
fail() { failures+=("$*"); printf 'container-test: FAIL: %s\n' "$*" >&2; }
die() {
  printf 'container-test: FAIL: %s\n' "$*" >&2
  exit 1
}
ms_since() { awk -v a="$1" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", (b - a) * 1000 }'; }
median() { printf '%s\n' "$@" | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  local c
  for c in "${containers[@]}"; do podman rm -f -t 0 "$c" >>"$podman_log" 2>&1 || true; done
  local pid
  for pid in $host_pid $redis_pid; do
    kill -TERM "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  if ((rc != 0)) && [[ -s $podman_log ]]; then
    echo "--- podman's messages (last 20 lines)" >&2
    grep -v 'unable to get systemd connection' "$podman_log" | tail -20 >&2 || true
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Polls health until SERVING; prints the milliseconds since $2.
wait_serving() {
  local socket=$1 t0=$2 deadline=$((SECONDS + 60))
  until KJIT_SOCKET=$socket "$kjit" health >/dev/null 2>&1; do
    if ((SECONDS > deadline)); then return 1; fi
    sleep 0.01
  done
  ms_since "$t0"
}

# A directory the image's kjit user (uid 10001) can make its socket in.
socket_dir() {
  local dir
  dir=$(mktemp -d "$work/run.XXXXXX")
  chown 10001:10001 "$dir"
  chmod 0750 "$dir"
  echo "$dir"
}

# Stops a container with SIGTERM and checks that kjitd exited 0 (podman
# wait's answer and the container's recorded exit code).
stop_and_check() {
  local name=$1 waited inspected
  podman stop -t 15 "$name" >>"$podman_log" 2>&1 || fail "podman stop $name"
  waited=$(podman wait "$name" 2>>"$podman_log" || echo "?")
  inspected=$(podman inspect --format '{{.State.ExitCode}}' "$name" 2>>"$podman_log" || echo "?")
  if [[ $waited != 0 || $inspected != 0 ]]; then
    fail "kjitd in $name exited $waited (inspect: $inspected) after SIGTERM"
    podman logs --tail 20 "$name" 2>&1 | sed 's/^/    /' >&2 || true
    return 1
  fi
}

# --- podman, the base image, the host binaries

if [[ $(id -u) -ne 0 ]]; then die "needs root (rootful podman); run it with sudo"; fi
scripts/podman-base.sh
# shellcheck source=/dev/null
. "${KJIT_PODMAN_DIR:-/var/tmp/kjit-podman}/env.sh"
if [[ ! -x $kjitd || ! -x $kjit ]]; then
  say "no build/bin/kjitd or build/bin/kjit: make build"
  make build
fi

# The Python client and what it imports, built here (pip --target) for the
# direct-read clients: a host process and the systemd container's Debian
# python3 run it.
pylib=$work/pylib
if ! python3 -m pip install --quiet --disable-pip-version-check --no-input --target "$pylib" client/python \
       >"$work/pylib.log" 2>&1; then
  tail -20 "$work/pylib.log" >&2
  die "pip could not install the Python client (client/python)"
fi
# Other users (the image's kjit group, a uid of its own) reach the socket
# directories and the client inside this run's directory.
chmod 0711 "$work"
chmod -R go+rX "$pylib"

# --- the image

target=runtime-prebuilt
[[ ${KJIT_CTEST_FROM_SOURCE:-0} == 1 ]] && target=runtime
old_image=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
say "building $image (--target $target)"
t0=$EPOCHREALTIME
if ! podman build --format docker --network host --skip-unused-stages --target "$target" -t "$image" . \
       >"$work/build.log" 2>&1; then
  tail -40 "$work/build.log" >&2
  die "podman build failed"
fi
build_ms=$(ms_since "$t0")
new_image=$(podman image inspect --format '{{.Id}}' "$image")
# The image this one replaces, now untagged, and the prebuilt stage's images
# of earlier runs (each holds the binaries it copied); the layers this build
# used stay cached.
if [[ -n $old_image && $old_image != "$new_image" ]]; then podman rmi "$old_image" >>"$podman_log" 2>&1 || true; fi
podman images --filter label=org.kjit.stage=prebuilt-bin --filter dangling=true --format '{{.CreatedAt}}\t{{.ID}}' |
  sort -r | tail -n +2 | cut -f2 | while read -r stale; do
  podman rmi "$stale" >>"$podman_log" 2>&1 || true
done

user=$(podman image inspect --format '{{.Config.User}}' "$image")
[[ -n $user && $user != root && $user != 0 ]] || fail "the image runs as '${user:-root}', not an unprivileged user"
[[ $(podman image inspect --format '{{.Config.Healthcheck}}' "$image") == *"kjit health"* ]] ||
  fail "the image has no HEALTHCHECK running kjit health (built without --format docker?)"

# --- a Redis for the last container's shared tier (podman-base.sh gives
# containers the host's network, so they reach its loopback)

redis_args=()
if command -v redis-server >/dev/null; then
  redis_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no >"$work/redis.log" 2>&1 &
  redis_pid=$!
  redis_args=(--redis "127.0.0.1:$redis_port")
else
  say "no redis-server here: the container runs without a Redis tier"
fi

# --- start times: the same kjitd, in the container and on the host

container_ms=()
host_ms=()
for ((i = 1; i <= start_runs; i++)); do
  dir=$(socket_dir)
  "$kjitd" --socket "$dir/kjitd.sock" --cache-dir "$dir/cache" --log-level warn 2>>"$work/host-kjitd.log" &
  host_pid=$!
  t0=$EPOCHREALTIME
  if ! ms=$(wait_serving "$dir/kjitd.sock" "$t0"); then
    tail -20 "$work/host-kjitd.log" >&2
    die "kjitd on the host did not serve within 60 s"
  fi
  host_ms+=("$ms")
  kill -TERM "$host_pid"
  rc=0
  wait "$host_pid" || rc=$?
  host_pid=
  ((rc == 0)) || fail "kjitd on the host exited $rc after SIGTERM"

  name=kjit-ctest-$$-$i
  dir=$(socket_dir)
  args=()
  volumes=(-v "$dir:/run/kjit")
  if ((i == start_runs)); then
    # The last container's disk tier is a host directory at the same path
    # inside, so the host's clients can read its entries directly.
    shared_cache=$(mktemp -d "$work/cache.XXXXXX")
    chown 10001:10001 "$shared_cache"
    chmod 0750 "$shared_cache"
    volumes+=(-v "$shared_cache:$shared_cache")
    args=(--config /etc/kjit/kjitd.toml "${redis_args[@]}" --cache-dir "$shared_cache")
  fi
  podman create --name "$name" "${volumes[@]}" "$image" "${args[@]}" >>"$podman_log" 2>&1 ||
    die "podman create failed"
  containers+=("$name")
  t0=$EPOCHREALTIME
  podman start "$name" >>"$podman_log" 2>&1 || die "podman start failed"
  if ! ms=$(wait_serving "$dir/kjitd.sock" "$t0"); then
    podman logs --tail 30 "$name" >&2 2>&1 || true
    die "kjitd in the container did not serve within 60 s"
  fi
  container_ms+=("$ms")
  socket=$dir/kjitd.sock
  # All but the last container only time the start.
  if ((i < start_runs)); then
    stop_and_check "$name" || true
    podman rm "$name" >>"$podman_log" 2>&1 || true
  fi
done

# --- the last container, from the host's CLI

export KJIT_SOCKET=$socket
say "kjitd serving in $name, socket $socket"

if [[ $(podman exec "$name" id -u 2>>"$podman_log") == 0 ]]; then fail "kjitd runs as root in the container"; fi
if podman healthcheck run "$name" >>"$podman_log" 2>&1; then
  say "the image's HEALTHCHECK: healthy"
else
  fail "the image's HEALTHCHECK (kjit health inside the container) failed"
fi

compile() {  # target, expected cache answer
  local target=$1 expected=$2 out=$work/vadd-${1/:/}.cubin json
  if ! json=$("$kjit" compile examples/vector_add.cu --target "$target" -o "$out" --json 2>"$work/compile.err"); then
    fail "kjit compile --target $target failed:"
    sed 's/^/    /' "$work/compile.err" >&2
    return 1
  fi
  if [[ $(head -c 4 "$out" | od -An -c | tr -d ' ') != '177ELF' ]]; then
    fail "kjit compile --target $target wrote no cubin (no ELF header in $out)"
    return 1
  fi
  local cache
  cache=$(sed -n 's/.*"cache":"\([a-z]*\)".*/\1/p' <<<"$json")
  if [[ $cache != "$expected" ]]; then
    fail "kjit compile --target $target answered from '$cache', expected '$expected'"
    return 1
  fi
  say "compiled vector_add.cu for $target: $(stat -c %s "$out") bytes, cache: $cache"
}
compile cuda:90 compiled || true
if ! compile cuda:107 compiled; then
  echo "    cuda:107 needs NVRTC and nvJitLink 13.5 or newer (NVIDIA's wheels in /opt/kjit/cuda-wheels);" \
    "the toolkits kjitd found:" >&2
  "$kjit" toolkits 2>&1 | sed -n '1,/^$/p' | sed 's/^/    /' >&2 || true
fi
compile cuda:90 memory || true

# Triton IR through the image's own Triton build.
if "$kjit" toolkits --json >"$work/toolkits.json" 2>"$work/toolkits.err" &&
    python3 -c 'import json,sys; sys.exit(not any(b["name"].startswith("triton-") for b in json.load(open(sys.argv[1])).get("triton", [])))' "$work/toolkits.json"; then
  if "$kjit" compile tests/triton/data/softmax.ttir --target cuda:90 -o "$work/softmax.cubin" >/dev/null 2>"$work/triton.err" &&
      [[ $(head -c 4 "$work/softmax.cubin" | od -An -c | tr -d ' ') == '177ELF' ]]; then
    say "compiled softmax.ttir for cuda:90 with the image's Triton build: $(stat -c %s "$work/softmax.cubin") bytes"
  else
    fail "kjit compile softmax.ttir in the container failed:"
    sed 's/^/    /' "$work/triton.err" >&2
  fi
else
  fail "kjit toolkits lists no Triton build in the image: $(head -c 400 "$work/toolkits.json") $(cat "$work/toolkits.err")"
fi

health=$("$kjit" health 2>&1) || true
[[ $health == SERVING ]] || fail "kjit health said '$health'"
say "kjit health: $health"
if stats=$("$kjit" cache stats 2>&1); then
  printf "%s\n" "$stats" | sed "s/^/    /"
  awk '$1 == "memory" && $2 >= 1 { ok = 1 } END { exit !ok }' <<<"$stats" ||
    fail "kjit cache stats shows no memory hit after the same compile twice"
  if [[ -n $redis_pid ]]; then
    awk '$1 == "redis" && $4 >= 2 { ok = 1 } END { exit !ok }' <<<"$stats" ||
      fail "kjit cache stats shows no puts in the Redis tier"
  fi
else
  fail "kjit cache stats failed: $stats"
fi

# Direct reads from the container's disk tier: a host process as kjitd's
# own user (uid 10001, the image's kjit user; no user of the host), an
# operator, reads a blob the operator stored, with no call and without
# loading gRPC; another user of the socket's group (uid 10002) gets no direct
# reader before the daemon grants it one, finds over gRPC only its own
# blobs, and once granted reads its own blob from the disk tier.
if [[ ! -x /usr/bin/python3 ]]; then
  fail "no /usr/bin/python3 on this host for the direct-read client"
elif out=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1]); import kjit; kjit.Client(sys.argv[2]).put_blob("ctest", "k1", "kernel.cubin", b"kjit-direct")' \
             "$pylib" "$socket" 2>&1); then
  out=$(setpriv --reuid=10001 --regid=10001 --clear-groups env PYTHONPATH="$pylib" /usr/bin/python3 \
          scripts/container-test/blob_reader.py "$socket" read ctest k1 kernel.cubin 6b6a69742d646972656374 2>&1 || true)
  if [[ $out == *'"how": "direct", "same_bytes": true'*'"grpc_loaded_before_fallback": false'* ]]; then
    say "a host process as kjitd's user read the container's blob directly: $out"
  else
    fail "a host process as kjitd's user did not read the container's blob directly: $out"
  fi
  other_home=$(mktemp -d "$work/home-10002.XXXXXX")
  chown 10002:10001 "$other_home"
  # blob_reader.py as uid 10002 (of the socket's group), with a cache directory of its own.
  as_other_user() {
    setpriv --reuid=10002 --regid=10001 --clear-groups env PYTHONPATH="$pylib" XDG_CACHE_HOME="$other_home" \
      /usr/bin/python3 scripts/container-test/blob_reader.py "$socket" "$@" 2>&1 || true
  }
  out=$(as_other_user read ctest k1 kernel.cubin 6b6a69742d646972656374)
  if [[ $out == *'"how": "grpc", "same_bytes": false, "direct_reader": false'* ]]; then
    say "another user of the socket's group had no direct reader and did not get the operator's blob: $out"
  else
    fail "another user of the socket's group reached the operator's blob: $out"
  fi
  out=$(as_other_user own ctest k1 kernel.cubin 6f776e)
  if [[ $out == *'"how": "direct", "same_bytes": true, "granted": true'* ]]; then
    say "that user, granted by the daemon, read its own blob from the disk tier: $out"
  else
    fail "that user did not read its own blob directly once granted: $out"
  fi
else
  fail "putting a blob into the container's kjitd: $out"
fi

stop_and_check "$name" && say "kjitd in the container exited 0 after SIGTERM"

# Direct reads under the unit: the manifest beside the socket is there,
# readable by all, and kjitd's user gets the operator's blob from the disk
# tier with no call (gRPC never loaded); a member of the socket's group and
# a user let onto the socket alone (an ACL, as an operator grants one user)
# have no direct reader before the daemon grants them one, over gRPC find
# only their own blobs, and once granted read their own from the disk.
systemd_direct_reads() {
  local manifest=$unit_socket.direct.json blob=6b6a69742d646972656374 out
  local run_py="PYTHONPATH=/opt/kjit-python python3 /usr/local/lib/kjit-ctest/blob_reader.py $unit_socket"
  local perms
  perms=$(in_unit "stat -c '%a %G' $manifest" || true)
  [[ $perms == "644 kjit" ]] || { fail "the unit's direct-read manifest: '$perms', not mode 644 group kjit"; return; }
  out=$(in_unit "$run_py put ctest k1 kernel.cubin $blob" || true)
  [[ $out == *'"put": true'* ]] || { fail "putting a blob through the unit's socket: $out"; return; }
  out=$(in_unit "runuser -u kjit -- env $run_py read ctest k1 kernel.cubin $blob" || true)
  [[ $out == *'"how": "direct", "same_bytes": true'*'"grpc_loaded_before_fallback": false'* ]] ||
    fail "kjitd's user did not read the blob directly: $out"
  out=$(in_unit "runuser -u member -- env $run_py read ctest k1 kernel.cubin $blob" || true)
  [[ $out == *'"how": "grpc", "same_bytes": false, "direct_reader": false'* ]] ||
    fail "a member of the socket's group reached the operator's blob: $out"
  out=$(in_unit "runuser -u member -- env XDG_CACHE_HOME=/tmp/member-cache $run_py own ctest k1 kernel.cubin 6f776e" || true)
  [[ $out == *'"how": "direct", "same_bytes": true, "granted": true'* ]] ||
    fail "a member of the socket's group did not read its own blob directly once granted: $out"
  in_unit "setfacl -m u:outsider:x /run/kjit && setfacl -m u:outsider:rw $unit_socket" >>"$podman_log" ||
    { fail "could not let the user outsider onto the socket with setfacl"; return; }
  out=$(in_unit "runuser -u outsider -- env $run_py read ctest k1 kernel.cubin $blob" || true)
  [[ $out == *'"how": "grpc", "same_bytes": false, "direct_reader": false'* ]] ||
    fail "a user outside the socket's group reached the operator's blob: $out"
}

# --- deploy/kjitd.service, hardened as shipped, under systemd (in a
# privileged container of the same image, so that systemd can set up its
# sandboxing): kjitd starts, its workers confine themselves, it compiles,
# and a stop ends it cleanly. KJIT_CTEST_SYSTEMD=0 skips it.

if [[ ${KJIT_CTEST_SYSTEMD:-1} == 1 ]]; then
  t0=$EPOCHREALTIME
  ctx=$work/systemd
  mkdir "$ctx"
  cp deploy/kjitd.service deploy/kjit.sysusers.conf deploy/kjitd.toml examples/vector_add.cu \
    scripts/container-test/blob_reader.py "$ctx/"
  cp -r "$pylib" "$ctx/pylib"
  cat >"$ctx/Containerfile" <<CONTAINERFILE
FROM $image
USER root
RUN apt-get update && apt-get install -y --no-install-recommends systemd systemd-sysv python3 acl \\
 && apt-get clean && rm -rf /var/lib/apt/lists/*
COPY kjit.sysusers.conf /usr/lib/sysusers.d/kjit.conf
COPY kjitd.toml /etc/kjit/kjitd.toml
COPY kjitd.service /etc/systemd/system/kjitd.service
COPY vector_add.cu /root/
COPY blob_reader.py /usr/local/lib/kjit-ctest/
COPY pylib /opt/kjit-python
RUN userdel kjit && systemd-sysusers && systemctl enable kjitd \\
 && useradd --create-home --groups kjit member && useradd --create-home outsider
STOPSIGNAL SIGRTMIN+3
ENTRYPOINT ["/sbin/init"]
CMD []
CONTAINERFILE
  systemd_image=${image%:*}-systemd:test
  if ! podman build --network host -t "$systemd_image" "$ctx" >"$work/systemd-build.log" 2>&1; then
    tail -20 "$work/systemd-build.log" >&2
    fail "building the systemd test image failed"
  else
    name=kjit-ctest-$$-systemd
    containers+=("$name")
    podman run -d --name "$name" --privileged --systemd=always "$systemd_image" >>"$podman_log" 2>&1 ||
      die "podman run (systemd) failed"
    in_unit() { podman exec "$name" sh -c "$1" 2>&1; }
    # Type=notify: "activating" until kjitd says READY=1, which it does once
    # its socket serves; "active" from then on. Polled until a deadline that
    # a loaded machine never reaches (systemd's own start timeout is 90 s).
    state=
    deadline=$((SECONDS + 150))
    while ((SECONDS < deadline)); do
      state=$(podman exec "$name" systemctl is-active kjitd 2>/dev/null || true)
      if [[ $state == active || $state == failed ]]; then break; fi
      sleep 0.2
    done
    unit_socket=/run/kjit/kjitd.sock
    # Asked once, on purpose: under Type=notify "active" means serving, so a
    # refusal here is a readiness bug, not a slow machine.
    if [[ $state != active ]] || ! in_unit "kjit --socket $unit_socket health" | grep -qx SERVING; then
      fail "kjitd.service did not start under systemd (state: ${state:-none}); its journal:"
      in_unit 'journalctl -u kjitd --no-pager | tail -20' | sed 's/^/    /' >&2
    elif ! in_unit "kjit --socket $unit_socket compile /root/vector_add.cu --target cuda:90 -o /root/v.cubin" \
           >"$work/systemd-compile.log"; then
      fail "kjitd.service could not compile for cuda:90:"
      sed 's/^/    /' "$work/systemd-compile.log" >&2
      in_unit 'journalctl -u kjitd --no-pager | tail -20' | sed 's/^/    /' >&2
    else
      status_text=$(in_unit 'systemctl show kjitd -p StatusText --value' || true)
      [[ $status_text == "serving on unix:$unit_socket"* ]] ||
        fail "kjitd.service's status (sd_notify STATUS=) is '$status_text', not 'serving on unix:$unit_socket ...'"
      confined=$(in_unit "kjit --socket $unit_socket health --verbose" | sed -n 's/^ *last worker: //p')
      [[ $confined == *Landlock*seccomp* ]] ||
        fail "the unit's compile worker did not report Landlock and seccomp: '$confined'"
      systemd_direct_reads
      stopped=$(in_unit 'systemctl stop kjitd; systemctl show kjitd -p Result -p ExecMainStatus --value' |
                tr '\n' ' ')
      [[ $stopped == "success 0 " ]] ||
        fail "systemctl stop kjitd: Result and ExecMainStatus were '$stopped', not 'success 0'"
      exposure=$(in_unit 'systemd-analyze security --no-pager kjitd.service' |
                 sed -n 's/.*Overall exposure level for kjitd.service: \([0-9.]*\).*/\1/p')
      say "deploy/kjitd.service under systemd: ready by sd_notify, compiled for cuda:90, workers confined" \
        "(${confined%% (*}), direct reads for the socket's group, stopped cleanly; exposure ${exposure:-?};" \
        "$(($(ms_since "$t0") / 1000)) s"
    fi
    podman rm -f -t 0 "$name" >>"$podman_log" 2>&1 || true
  fi
  # Made from this run's image, so never reused.
  podman rmi -f "$systemd_image" >>"$podman_log" 2>&1 || true
fi

# --- the report

size=$(podman image inspect --format '{{.Size}}' "$image")
echo
say "image $image ($target): $(awk -v s="$size" 'BEGIN { printf "%.0f MB", s / 1e6 }'), built in $((build_ms / 1000)) s"
echo "    layers (podman history, newest first):"
podman history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' "$image" |
  awk -F'\t' '$1 != "0 B" { sub(/^\/bin\/sh -c (#\(nop\) )?/, "", $2); printf "    %10s  %.90s\n", $1, $2 }'
say "kjitd start to SERVING, median of ${start_runs}: container $(median "${container_ms[@]}") ms" \
  "(podman start included; runs: ${container_ms[*]}), host $(median "${host_ms[@]}") ms (runs: ${host_ms[*]})"
say "total $(($(ms_since "$t_begin") / 1000)) s"
if ((${#failures[@]})); then
  say "${#failures[@]} check(s) failed:"
  printf '    %s\n' "${failures[@]}" >&2
  exit 1
fi
say "all checks passed"

#!/usr/bin/env bash
# Fresh-machine check: builds a clean Debian 12 root with debootstrap and runs, inside it, exactly
# the README's two commands (on a clean clone) or installs the .deb packages. Usage: README.md
# beside this file, or `check.sh --help`. Run as root on a Debian 12 host with debootstrap, Xvfb,
# xdotool, x11-utils and imagemagick installed.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
HERE=$(dirname "$SELF")

# ---------------------------------------------------------------- internal: enter the root --
# `check.sh __enter ROOT X11 CMD...` runs inside `unshare --mount --propagation private`: the
# mounts below live in that private mount namespace only and vanish with its last process, so no
# exit path (not even SIGKILL of this script) leaves a mount on the host.
if [ "${1:-}" = "__enter" ]; then
  root=$2 x11=$3 shared=$4 shared_at=$5
  shift 5
  mount -t proc proc "$root/proc"
  mount -t sysfs sysfs "$root/sys"
  mount --rbind /dev "$root/dev" # /dev, /dev/pts, /dev/shm, /dev/mqueue
  if [ -n "$x11" ]; then # only the socket of this run's Xvfb (X91...), not the host's others
    mkdir -p "$root/tmp/.X11-unix"
    : > "$root/tmp/.X11-unix/$x11"
    mount --bind "/tmp/.X11-unix/$x11" "$root/tmp/.X11-unix/$x11"
  fi
  if [ -n "$shared" ]; then # --shared: the test data beside the clone, read-only
    mkdir -p "$root$shared_at"
    mount --bind "$shared" "$root$shared_at"
    mount -o remount,bind,ro "$root$shared_at"
  fi
  exec chroot "$root" "$@"
fi

usage() {
  cat <<'EOF'
usage: check.sh [options] COMMAND [ARGS]

commands:
  root                  debootstrap a pristine Debian 12 root (cached as a tarball; --force remakes it)
  readme                clean clone in a fresh copy of the root, then the README's test command to the
                        end and its run command under Xvfb until the main window is up (screenshot)
  package DEB...        fresh copy of the root: apt-get install ./inferdesk_*.deb (and inferdesk-cuda),
                        desktop entry, icon, man page, inferdesk-cli --help / bench --dummy, the GUI
  hide-package PKG      like readme's test command, with PKG made unavailable first: the test command
                        must fail and name PKG (--how pin|files, --expect TEXT)
  clean                 remove root copies left by --keep (never the pristine tarball)
  window CMD [ARGS]     the Xvfb + window + screenshot part alone, on a host command (no root), e.g.
                        check.sh window build/gui/inferdesk --data-dir /tmp/x

options:
  --work DIR            cache and root copies (default /work/fresh-cache)
  --out DIR             logs, screenshots, summary (default /work/fresh-out/<timestamp>-<command>)
  --repo PATH           repository to clone (default: the one this script is in)
  --commit REV          commit to check (default HEAD of --repo)
  --mirror URL          Debian mirror (default http://deb.debian.org/debian)
  --include LIST        extra packages for debootstrap (default sudo,ca-certificates)
  --force               root: remake the pristine root even when cached
  --keep                keep the root copy after the run (inspect with: chroot DIR; remove: clean)
  --nice N              run the commands in the root with nice -n N (default 0)
  --window-name RE      main window title (regex, default ^InferDesk)
  --window-timeout S    how long the run command may take to show the window (default 7200: it may
                        have to build everything first)
  --how pin|files       hide-package: pin = apt pin Pin-Priority -1 before anything (default);
                        files = install-deps.sh first, then delete PKG's files (dpkg still lists it
                        as installed, so only CMake can notice) and pin it
  --expect TEXT         hide-package: text the failing output must contain (default: PKG)
  --shared DIR          readme, hide-package: DIR read-only at /home/user/shared, the test data
                        beside the clone that the README's Tests section mentions (default: none,
                        as on a fresh machine)
EOF
}

# --------------------------------------------------------------------------------- options --
WORK=/work/fresh-cache
OUT=""
REPO=""
COMMIT=HEAD
MIRROR=http://deb.debian.org/debian
SUITE=bookworm
INCLUDE=sudo,ca-certificates
FORCE=0
KEEP=0
NICE=0
WINDOW_NAME='^InferDesk'
WINDOW_TIMEOUT=7200
SETTLE=3
HOW=pin
SHARED=""
EXPECT=""
CMD=""
ARGS=()
while [ $# -gt 0 ]; do
  if [ "$CMD" = window ]; then ARGS+=("$@"); break; fi # the rest is the host command
  case "$1" in
    --work) WORK=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    --repo) REPO=$2; shift 2 ;;
    --commit) COMMIT=$2; shift 2 ;;
    --mirror) MIRROR=$2; shift 2 ;;
    --include) INCLUDE=$2; shift 2 ;;
    --force) FORCE=1; shift ;;
    --keep) KEEP=1; shift ;;
    --nice) NICE=$2; shift 2 ;;
    --window-name) WINDOW_NAME=$2; shift 2 ;;
    --window-timeout) WINDOW_TIMEOUT=$2; shift 2 ;;
    --how) HOW=$2; shift 2 ;;
    --expect) EXPECT=$2; shift 2 ;;
    --shared) SHARED=$(readlink -f "$2"); shift 2 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "check.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) if [ -z "$CMD" ]; then CMD=$1; else ARGS+=("$1"); fi; shift ;;
  esac
done
case "$CMD" in
  root|readme|clean) [ ${#ARGS[@]} -eq 0 ] || { echo "check.sh: $CMD takes no arguments" >&2; exit 2; } ;;
  package) [ ${#ARGS[@]} -ge 1 ] || { echo "check.sh: package needs .deb files" >&2; exit 2; } ;;
  hide-package) [ ${#ARGS[@]} -eq 1 ] || { echo "check.sh: hide-package needs one package name" >&2; exit 2; } ;;
  window) [ ${#ARGS[@]} -ge 1 ] || { echo "check.sh: window needs a command" >&2; exit 2; } ;;
  "") usage >&2; exit 2 ;;
  *) echo "check.sh: unknown command $CMD" >&2; usage >&2; exit 2 ;;
esac
case "$HOW" in pin|files) ;; *) echo "check.sh: --how pin|files" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "check.sh: run as root (debootstrap, chroot, mount)" >&2; exit 2; }

# The README's two commands as this script knows them; the Quick start section of the README of
# the commit under test must hold exactly these two (checked), and what runs is the README's text.
README_TEST_CMD='bash scripts/test.sh'
README_RUN_CMD='bash scripts/run.sh'
CLONE_IN=/home/user/inferdesk # where the clone lives inside the root

STAMP=$(date +%Y%m%d-%H%M%S)
PRISTINE=$WORK/debian-$SUITE-pristine.tar.zst
ROOTS=$WORK/roots
[ -n "$OUT" ] || OUT=/work/fresh-out/$STAMP-$CMD
ROOT=""      # the root copy of this run
XVFB_PID=""  # the host's Xvfb of this run
DISP=""
BG_PID=""    # a command running in the root in the background
SHA=""

# ------------------------------------------------------------------------- step bookkeeping --
S_NAME=() S_SECS=() S_RES=() S_INFO=()
now_us() { local t=$EPOCHREALTIME; echo "${t/./}"; }
fmt_us() { # microseconds -> "12.3s" or "4m05s" or "1h02m03s"
  local s=$(( $1 / 1000000 )) d=$(( ($1 % 1000000) / 100000 ))
  if [ $s -lt 60 ]; then printf '%d.%ds' $s $d
  elif [ $s -lt 3600 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60))
  else printf '%dh%02dm%02ds' $((s / 3600)) $((s % 3600 / 60)) $((s % 60)); fi
}
T0=0
START_US=$(now_us)
begin() { T0=$(now_us); log "== $1"; }
record() { # NAME RESULT INFO  (time since the last begin)
  local us=$(( $(now_us) - T0 ))
  S_NAME+=("$1") S_SECS+=("$(fmt_us $us)") S_RES+=("$2") S_INFO+=("${3:-}")
  log "   $2 ($(fmt_us $us)) ${3:-}"
}
log() { printf '%s %s\n' "$(date +%H:%M:%S)" "$*" | tee -a "$OUT/check.log" >&2; }
die() { log "check.sh: $*"; exit 1; }

print_summary() {
  local i any_fail=0 f=$OUT/summary.txt
  {
    echo "fresh-machine check: $CMD ${ARGS[*]:-}"
    echo "  started $STAMP on $(hostname)${SHA:+; repo $REPO commit $SHA}${SHARED:+; --shared $SHARED}"
    [ "$CMD" = window ] || echo "  root: debootstrap $SUITE (default variant, --include=$INCLUDE) from $MIRROR"
    printf '  %-50s %9s  %-6s %s\n' step time result notes
    for i in "${!S_NAME[@]}"; do
      printf '  %-50s %9s  %-6s %s\n' "${S_NAME[$i]}" "${S_SECS[$i]}" "${S_RES[$i]}" "${S_INFO[$i]}"
      [ "${S_RES[$i]}" != FAIL ] || any_fail=1
    done
    echo "  total: $(fmt_us $(( $(now_us) - START_US )))"
    echo "  logs and screenshots: $OUT"
    [ $any_fail -eq 0 ] && echo "  result: PASS" || echo "  result: FAIL"
  } > "$f"
  cat "$f" >&2
  return $any_fail
}

# -------------------------------------------------------------------- processes and cleanup --
procs_in_root() { # pids of every process whose root directory is $ROOT (chroot'd by this run)
  [ -n "$ROOT" ] && [ -d "$ROOT" ] || return 0
  local want p r
  want=$(stat -c %d:%i "$ROOT")
  for p in /proc/[0-9]*; do
    r=$(stat -L -c %d:%i "$p/root" 2>/dev/null) || continue
    [ "$r" = "$want" ] && echo "${p#/proc/}"
  done
  return 0
}
kill_root_procs() { # SIGTERM, then SIGKILL after 10 s, every process left in the root
  local pids i
  pids=$(procs_in_root)
  [ -n "$pids" ] || return 0
  log "   stopping processes left in the root: $(echo $pids)"
  kill -TERM $pids 2>/dev/null || true
  for i in $(seq 1 20); do
    pids=$(procs_in_root); [ -n "$pids" ] || return 0
    sleep 0.5
  done
  kill -KILL $pids 2>/dev/null || true
  sleep 1
}
remove_root() {
  [ -n "$ROOT" ] && [ -d "$ROOT" ] || return 0
  if grep -q " ${ROOT}[/ ]" /proc/self/mountinfo; then
    log "   NOT removing $ROOT: something is mounted under it"; return 1
  fi
  if [ $KEEP -eq 1 ]; then log "   kept the root: $ROOT (check.sh clean removes it)"; return 0; fi
  log "   removing the root copy $ROOT"
  rm -rf --one-file-system "$ROOT"
}
stop_xvfb() {
  [ -n "$XVFB_PID" ] || return 0
  kill "$XVFB_PID" 2>/dev/null || true
  wait "$XVFB_PID" 2>/dev/null || true
  XVFB_PID=""
}
cleanup() {
  local rc=$?
  set +e
  trap - EXIT INT TERM
  kill_root_procs
  [ -z "$BG_PID" ] || wait "$BG_PID" 2>/dev/null
  stop_xvfb
  remove_root
  if [ "$CMD" != clean ]; then print_summary || [ $rc -ne 0 ] || rc=1; fi
  exit $rc
}
mkdir -p "$OUT"
# the roots are entered through a copy of this script: editing it during a run changes nothing
ENTER=$OUT/check.sh.used
cp "$SELF" "$ENTER"
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ------------------------------------------------------------------------ running in a root --
# in_root [--x11] [--bg] LOG SCRIPT: SCRIPT in a root login shell in $ROOT, with a clean
# environment (what a root shell on the machine would have), stdin from /dev/null, its output
# timestamped ("[  12s] ...") into LOG; returns SCRIPT's exit status (--bg: starts it, sets BG_PID).
in_root() {
  local x11="" bg=0
  while :; do case "$1" in --x11) x11=X${DISP#:}; shift ;; --bg) bg=1; shift ;; *) break ;; esac; done
  local logf=$1 script=$2 env=(HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=xterm
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin)
  [ -z "$x11" ] || env+=(DISPLAY="$DISP")
  local cmd=(unshare --mount --propagation private -- "$ENTER" __enter "$ROOT" "$x11" "$SHARED" "$(dirname "$CLONE_IN")/shared"
             /usr/bin/nice -n "$NICE" /usr/bin/env -i "${env[@]}" /bin/bash -l -c "$script")
  printf '# in the root (%s): %s\n' "$ROOT" "$script" >> "$logf"
  if [ $bg -eq 1 ]; then
    setsid "${cmd[@]}" < /dev/null > >(stamp >> "$logf") 2>&1 &
    BG_PID=$!
    return 0
  fi
  local rc
  set +e
  "${cmd[@]}" < /dev/null 2>&1 | stamp >> "$logf"
  rc=${PIPESTATUS[0]}
  set -e
  return $rc
}
stamp() { local t0=$EPOCHSECONDS line; while IFS= read -r line || [ -n "$line" ]; do
  printf '[%5ds] %s\n' $((EPOCHSECONDS - t0)) "$line"; done; }

new_root() { # a fresh copy of the pristine root
  [ -f "$PRISTINE" ] || die "no pristine root at $PRISTINE: run 'check.sh root' first"
  begin "fresh copy of the pristine root"
  mkdir -p "$ROOTS"
  ROOT=$ROOTS/$STAMP-$CMD-$$
  mkdir "$ROOT"
  zstd -q -dc "$PRISTINE" | tar --numeric-owner --xattrs --acls -xpf - -C "$ROOT"
  cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf" # the network settings of this host
  # So are its own CAs: a network that inspects TLS (this sandbox's does, for the npm registry)
  # signs with one. Without it npm in the root fails with SELF_SIGNED_CERT_IN_CHAIN.
  local cas=""
  if compgen -G "/usr/local/share/ca-certificates/*.crt" > /dev/null; then
    mkdir -p "$ROOT/usr/local/share/ca-certificates"
    cp /usr/local/share/ca-certificates/*.crt "$ROOT/usr/local/share/ca-certificates/"
    chroot "$ROOT" update-ca-certificates > "$OUT/ca.log" 2>&1 || die "update-ca-certificates failed: $OUT/ca.log"
    cas="; this host's CAs: $(cd /usr/local/share/ca-certificates && echo *.crt)"
  fi
  record "fresh copy of the pristine root" PASS "$ROOT$cas"
}

clone_repo() { # a clean clone (committed files only) of $REPO at $COMMIT into $CLONE_IN
  begin "git clone"
  SHA=$(git -C "$REPO" rev-parse --verify "$COMMIT^{commit}")
  local dest=$ROOT$CLONE_IN
  mkdir -p "$(dirname "$dest")"
  git clone --quiet --no-hardlinks --no-checkout "$REPO" "$dest" >> "$OUT/clone.log" 2>&1
  if ! git -C "$dest" cat-file -e "$SHA^{commit}" 2>/dev/null; then # not on a branch of $REPO
    git -C "$dest" fetch --quiet --upload-pack="git -c uploadpack.allowAnySHA1InWant=true upload-pack" \
      "$REPO" "$SHA" >> "$OUT/clone.log" 2>&1
  fi
  git -C "$dest" checkout --quiet --detach "$SHA" >> "$OUT/clone.log" 2>&1
  local dirty=""
  [ -z "$(git -C "$REPO" status --porcelain --untracked-files=no 2>/dev/null)" ] ||
    dirty=" (uncommitted changes in $REPO are not in the clone)"
  record "git clone $(basename "$REPO") into $CLONE_IN" PASS "$(git -C "$dest" log -1 --format='%h %s' | cut -c1-60)$dirty"
}

readme_commands() { # the one-line fenced blocks of the README's "## Quick start" section
  awk '/^## /{ insec = ($0 ~ /^## Quick start/) }
       insec && /^```/ { if (inb) { inb = 0; print blk } else { inb = 1; blk = "" } next }
       insec && inb { blk = (blk == "" ? $0 : blk " \\n " $0) }' "$1"
}
check_readme_commands() {
  begin "README commands"
  local found
  found=$(readme_commands "$ROOT$CLONE_IN/README.md" | sort)
  local want
  want=$(printf '%s\n%s\n' "$README_RUN_CMD" "$README_TEST_CMD" | sort)
  if [ "$found" != "$want" ]; then
    record "README's Quick start commands" FAIL "found: $(echo "$found" | paste -sd ';' -) (update check.sh)"
    exit 1
  fi
  record "README's Quick start commands" PASS "test: $README_TEST_CMD; run: $README_RUN_CMD"
}

start_xvfb() {
  local n
  for n in $(seq 91 199); do
    [ -e /tmp/.X$n-lock ] || [ -e /tmp/.X11-unix/X$n ] || break
  done
  DISP=:$n
  Xvfb "$DISP" -screen 0 1280x800x24 -nolisten tcp -noreset > "$OUT/xvfb.log" 2>&1 &
  XVFB_PID=$!
  for n in $(seq 1 100); do
    xdpyinfo -display "$DISP" > /dev/null 2>&1 && return 0
    kill -0 "$XVFB_PID" 2>/dev/null || break
    sleep 0.2
  done
  die "Xvfb $DISP did not start (see $OUT/xvfb.log)"
}

# wait_window LOG NAME: waits until a visible window titled like $WINDOW_NAME is on $DISP while
# BG_PID runs; screenshots it to NAME.png (whole screen) and NAME-window.png; prints the window id.
# Returns 1 when the command exited first, 2 on timeout.
wait_window() {
  local logf=$1 name=$2 wid="" deadline=$((EPOCHSECONDS + WINDOW_TIMEOUT))
  while :; do
    wid=$(DISPLAY=$DISP xdotool search --onlyvisible --name "$WINDOW_NAME" 2>/dev/null | head -1) || wid=""
    [ -z "$wid" ] || break
    kill -0 "$BG_PID" 2>/dev/null || return 1
    [ $EPOCHSECONDS -lt $deadline ] || return 2
    sleep 1
  done
  sleep "$SETTLE" # let it paint
  { echo "# window $wid on $DISP"; xwininfo -display "$DISP" -id "$wid"; } >> "$logf" 2>&1 || true
  import -display "$DISP" -window root "$OUT/$name.png"
  import -display "$DISP" -window "$wid" "$OUT/$name-window.png" 2>> "$logf" || true
  echo "$wid"
}
said() { # LOG: what a command said last: its run.sh line if any, else its last non-empty line
  local l
  l=$(grep -E '^\[ *[0-9]+s\] run\.sh: ' "$1" | tail -1 || true)
  [ -n "$l" ] || l=$(grep -v -E '^# |^\[ *[0-9]+s\] *$' "$1" | tail -1 || true)
  echo "${l#*] }" | cut -c1-110
}
window_title() { DISPLAY=$DISP xdotool getwindowname "$1" 2>/dev/null || true; }

# close_bg: stops the background command (SIGTERM to everything in the root); its exit status
close_bg() {
  local rc
  kill_root_procs
  if kill -0 "$BG_PID" 2>/dev/null; then # `window` (host) mode: its own process group (setsid)
    kill -TERM -- "-$BG_PID" 2>/dev/null || true
  fi
  set +e; wait "$BG_PID"; rc=$?; set -e
  BG_PID=""
  return $rc
}

# test_phases LOG: where the time of the test command went (install-deps / build / ctest)
test_phases() {
  awk 'match($0, /^\[ *[0-9]+s\]/) { t = substr($0, 2, RLENGTH - 3) + 0; last = t
         line = substr($0, RLENGTH + 2)
         if (b == "" && line ~ /^-- (The C|Configuring|Build files)/) b = t
         if (c == "" && line ~ /^Test project /) c = t }
       END { if (b == "") b = last; if (c == "") c = last
             printf "install-deps %ds, build %ds, ctest %ds", b, c - b, last - c }' "$1"
}
ctest_result() { grep -E 'tests passed|No tests were found' "$1" | tail -1 | sed 's/^\[ *[0-9]*s\] //' || true; }

run_test_command() { # LOG -> exit status of the README's test command
  local logf=$1 rc=0
  in_root "$logf" "cd $CLONE_IN && $README_TEST_CMD" || rc=$?
  return $rc
}

# ---------------------------------------------------------------------------------- commands --
cmd_root() {
  if [ -f "$PRISTINE" ] && [ $FORCE -eq 0 ]; then
    begin "pristine root"
    record "pristine root (cached)" PASS "$PRISTINE ($(du -h "$PRISTINE" | cut -f1)); --force remakes it"
    return 0
  fi
  mkdir -p "$WORK"
  exec 9> "$WORK/.root.lock"
  flock -n 9 || die "another 'check.sh root' is running"
  ROOT=$WORK/building-$SUITE-$$
  rm -rf --one-file-system "$ROOT"
  begin "debootstrap"
  local rc=0
  debootstrap --include="$INCLUDE" "$SUITE" "$ROOT" "$MIRROR" > "$OUT/debootstrap.log" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    record "debootstrap $SUITE" FAIL "rc $rc, $OUT/debootstrap.log"; exit 1
  fi
  record "debootstrap $SUITE (--include=$INCLUDE)" PASS "$OUT/debootstrap.log"

  # What the Debian installer configures on a new machine: the release, its updates and security
  # archives, the updates installed, a host name.
  begin "apt sources, upgrade"
  cat > "$ROOT/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb http://security.debian.org/debian-security $SUITE-security main
EOF
  echo fresh-debian12 > "$ROOT/etc/hostname"
  rc=0
  in_root "$OUT/upgrade.log" 'apt-get update && DEBIAN_FRONTEND=noninteractive apt-get -y upgrade && apt-get clean' || rc=$?
  [ $rc -eq 0 ] || { record "apt-get update, upgrade" FAIL "rc $rc, $OUT/upgrade.log"; exit 1; }
  kill_root_procs
  record "apt sources (+updates, security), upgrade" PASS "$OUT/upgrade.log"

  begin "pristine tarball"
  chroot "$ROOT" dpkg-query -W -f='${Package} ${Version}\n' > "$OUT/packages.txt"
  cp "$OUT/packages.txt" "${PRISTINE%.tar.zst}.packages.txt"
  tar --numeric-owner --xattrs --acls -cpf - -C "$ROOT" . | zstd -q -T0 -3 > "$PRISTINE.tmp"
  mv "$PRISTINE.tmp" "$PRISTINE"
  record "pristine tarball" PASS "$PRISTINE ($(du -h "$PRISTINE" | cut -f1), $(wc -l < "$OUT/packages.txt") packages)"
  # the EXIT trap removes $ROOT (KEEP does not apply to the build folder)
  KEEP=0
}

cmd_readme() {
  new_root
  clone_repo
  check_readme_commands

  # 1. the README's test command, to the end
  begin "test command"
  local rc=0
  run_test_command "$OUT/test.log" || rc=$?
  kill_root_procs
  local res=PASS; [ $rc -eq 0 ] || res=FAIL
  record "test command: $README_TEST_CMD" $res "rc $rc; $(test_phases "$OUT/test.log"); $(ctest_result "$OUT/test.log"); $OUT/test.log"

  # what the test command built (informational: not a README command)
  begin "what was built"
  in_root "$OUT/built.log" "cd $CLONE_IN && ls -l build/gui/inferdesk build/apps/cli/inferdesk-cli; ctest --test-dir build -N -L gui | tail -1; ctest --test-dir build -N | tail -1" || true
  local gui=no; [ -x "$ROOT$CLONE_IN/build/gui/inferdesk" ] && gui=yes
  local guitests; guitests=$(grep -E 'Total Tests' "$OUT/built.log" | head -1 | sed 's/^.*Total Tests: //' || true)
  local alltests; alltests=$(grep -E 'Total Tests' "$OUT/built.log" | tail -1 | sed 's/^.*Total Tests: //' || true)
  local why; why=$(grep -E 'without the GUI|without the CUDA|nvcc not found' "$OUT/test.log" | head -2 | sed 's/^\[ *[0-9]*s\] -- //' | paste -sd '|' - || true)
  record "built: build/gui/inferdesk" "$([ $gui = yes ] && echo PASS || echo FAIL)" "GUI built: $gui; tests: ${alltests:-?}, gui: ${guitests:-?}; cmake: ${why:-}"

  # 2. the README's run command, under Xvfb on the host, until the main window is up
  start_xvfb
  begin "run command"
  in_root --x11 --bg "$OUT/run.log" "cd $CLONE_IN && $README_RUN_CMD"
  local wr=0 wid=""
  wid=$(wait_window "$OUT/run.log" screenshot) || wr=$?
  if [ $wr -eq 0 ]; then
    local title; title=$(window_title "$wid")
    record "run command: $README_RUN_CMD (window up)" PASS "window \"$title\" on $DISP; $OUT/screenshot.png"
    begin "close the app"
    rc=0; close_bg || rc=$?
    record "close the app (SIGTERM)" PASS "exit status $rc"
  elif [ $wr -eq 1 ]; then
    rc=0; close_bg || rc=$?
    import -display "$DISP" -window root "$OUT/screenshot-no-window.png" 2>/dev/null || true
    record "run command: $README_RUN_CMD (window up)" FAIL "exited (rc $rc) with no window: $(said "$OUT/run.log"); $OUT/run.log"
  else
    import -display "$DISP" -window root "$OUT/screenshot-timeout.png" 2>/dev/null || true
    rc=0; close_bg || rc=$?
    record "run command: $README_RUN_CMD (window up)" FAIL "no window after ${WINDOW_TIMEOUT}s; $OUT/run.log"
  fi
}

cmd_hide_package() {
  local pkg=${ARGS[0]} expect=${EXPECT:-${ARGS[0]}}
  new_root
  clone_repo
  check_readme_commands

  begin "hide $pkg"
  local how_info="apt pin Pin-Priority -1"
  if [ "$HOW" = files ]; then
    # install-deps.sh first (a setup step, not a README command), then PKG's files go while dpkg
    # still lists it as installed: install-deps.sh will not notice, only the build can
    local rc=0
    in_root "$OUT/hide.log" "cd $CLONE_IN && bash scripts/install-deps.sh" || rc=$?
    [ $rc -eq 0 ] || { record "hide $pkg: install-deps.sh first" FAIL "rc $rc, $OUT/hide.log"; exit 1; }
    local n=0
    in_root "$OUT/hide.log" "if dpkg-query -W -f='\${Status}' $pkg 2>/dev/null | grep -q 'install ok installed'; then
        dpkg -L $pkg | while read -r f; do [ -d \"\$f\" ] && [ ! -L \"\$f\" ] || { rm -f \"\$f\"; echo \"removed \$f\"; }; done
      else echo '$pkg is not installed: nothing to remove'; fi" || true
    n=$(grep -c '] removed ' "$OUT/hide.log" || true)
    how_info="install-deps.sh, then $n files of $pkg deleted (dpkg still lists it), and the pin"
  fi
  printf 'Explanation: fresh-machine check: %s made unavailable on purpose\nPackage: %s\nPin: version *\nPin-Priority: -1\n' \
    "$pkg" "$pkg" > "$ROOT/etc/apt/preferences.d/99-fresh-check-hide"
  in_root "$OUT/hide.log" "apt-get update -qq; apt-cache policy $pkg" || true
  if grep -q 'Candidate: (none)' "$OUT/hide.log"; then
    record "hide $pkg ($HOW)" PASS "$how_info; apt-cache policy: Candidate: (none)"
  else
    record "hide $pkg ($HOW)" FAIL "apt still offers it: $OUT/hide.log"; exit 1
  fi

  begin "test command with $pkg hidden"
  local rc=0
  run_test_command "$OUT/test.log" || rc=$?
  kill_root_procs
  # the lines naming it, error-like ones first ("E: ...", "... not found", CMake errors)
  local lines named
  lines=$(grep -F -e "$expect" "$OUT/test.log" | grep -v '^# in the root' | sed 's/^\[ *[0-9]*s\] //' || true)
  named=$(grep -i -E '^E:|error|not found|missing|could not|unable|required' <<< "$lines" | head -3 | cut -c1-140 | paste -sd '|' - || true)
  [ -n "$named" ] || named=$(head -3 <<< "$lines" | cut -c1-140 | paste -sd '|' -)
  if [ $rc -ne 0 ] && [ -n "$named" ]; then
    record "test command fails with $pkg hidden" PASS "rc $rc; names '$expect': $named"
  elif [ $rc -ne 0 ]; then
    record "test command fails with $pkg hidden" FAIL "rc $rc but '$expect' is not in its output; last: $(tail -1 "$OUT/test.log" | cut -c1-120)"
  else
    record "test command fails with $pkg hidden" FAIL "it PASSED (rc 0) although $pkg is hidden; $(ctest_result "$OUT/test.log")"
  fi
  # the last lines of what it printed, for the report
  tail -25 "$OUT/test.log" > "$OUT/test-tail.txt"
}

cmd_package() {
  local d main=() cuda=() other=()
  for d in "${ARGS[@]}"; do
    [ -f "$d" ] || die "no such file: $d"
    case "$(basename "$d")" in
      inferdesk-cuda_*.deb) cuda+=("$(readlink -f "$d")") ;;
      inferdesk_*.deb) main+=("$(readlink -f "$d")") ;;
      *.deb) other+=("$(readlink -f "$d")") ;;
      *) die "not a .deb: $d" ;;
    esac
  done
  [ ${#main[@]} -eq 1 ] || die "give exactly one inferdesk_*.deb (got ${#main[@]})"
  new_root
  mkdir -p "$ROOT/root/debs"
  cp "${main[@]}" "${cuda[@]}" "${other[@]}" "$ROOT/root/debs/"
  local m; m=$(basename "${main[0]}")
  local extra=""; for d in "${other[@]}"; do extra+=" ./$(basename "$d")"; done
  local L=$OUT/package.log rc

  begin "install"
  rc=0
  in_root "$L" "cd /root/debs && apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y ./$m$extra && dpkg -s inferdesk" || rc=$?
  if [ $rc -ne 0 ]; then record "apt-get install -y ./$m" FAIL "rc $rc; $L"; exit 1; fi
  local deps; deps=$(grep -E '^\[ *[0-9]+s\] Depends:' "$L" | tail -1 | sed 's/^\[ *[0-9]*s\] Depends: //' | cut -c1-90 || true)
  local newpk; newpk=$(grep -E 'newly installed' "$L" | tail -1 | sed 's/^\[ *[0-9]*s\] //' || true)
  record "apt-get install -y ./$m" PASS "$newpk; Depends: ${deps:-(none)}"
  in_root "$OUT/package-files.txt" "dpkg -L inferdesk" || true

  begin "desktop entry"
  local desk; desk=$(grep -l -i inferdesk "$ROOT"/usr/share/applications/*.desktop 2>/dev/null | head -1 || true)
  local icon_name="" exec_bin=""
  if [ -n "$desk" ]; then
    cp "$desk" "$OUT/"
    icon_name=$(sed -n 's/^Icon=//p' "$desk" | head -1)
    exec_bin=$(sed -n 's/^Exec=//p' "$desk" | head -1 | awk '{print $1}')
    local v=""; if command -v desktop-file-validate > /dev/null; then
      desktop-file-validate "$desk" > "$OUT/desktop-file-validate.txt" 2>&1 && v="; desktop-file-validate clean" || v="; desktop-file-validate: $(head -1 "$OUT/desktop-file-validate.txt" | cut -c1-60)"
    fi
    local ex=FAIL; [ -n "$exec_bin" ] && { [ -x "$ROOT/usr/bin/$exec_bin" ] || [ -x "$ROOT$exec_bin" ]; } && ex=PASS
    record "desktop entry in /usr/share/applications" $ex "${desk#$ROOT}: Exec=$exec_bin Icon=$icon_name$v"
  else
    record "desktop entry in /usr/share/applications" FAIL "no .desktop file naming inferdesk"
  fi

  begin "icon"
  local icons; icons=$(cd "$ROOT" && find usr/share/icons usr/share/pixmaps -iname "${icon_name:-*inferdesk*}.*" 2>/dev/null | head -3 | paste -sd ' ' - || true)
  [ -n "$icon_name" ] || icons=$(cd "$ROOT" && find usr/share/icons usr/share/pixmaps -iname '*inferdesk*' 2>/dev/null | head -3 | paste -sd ' ' - || true)
  record "icon in /usr/share/icons" "$([ -n "$icons" ] && echo PASS || echo FAIL)" "${icons:-none named ${icon_name:-*inferdesk*}}"

  begin "man page"
  rc=0
  # a Debian install with the standard system utilities has man-db; the bare root may not
  local mandb=""; [ -x "$ROOT/usr/bin/man" ] || mandb="man-db installed first; "
  in_root "$OUT/man.log" "command -v man >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq man-db >/dev/null; man -w inferdesk-cli && MANPAGER=cat MANWIDTH=80 man inferdesk-cli | head -20" || rc=$?
  record "man inferdesk-cli" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "${mandb}rc $rc; $(grep -v '^#' "$OUT/man.log" | grep -v 'debconf: ' | head -1 | sed 's/^\[ *[0-9]*s\] //' | cut -c1-80)"

  begin "inferdesk-cli --help"
  rc=0
  in_root "$OUT/cli-help.log" "cd / && inferdesk-cli --help" || rc=$?
  record "inferdesk-cli --help" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $OUT/cli-help.log"

  local bench="inferdesk-cli bench --dummy llama-3.2-1b --backend cpu --batch 1 --input-len 16 --output-len 4 --json"
  begin "bench"
  rc=0
  in_root "$OUT/bench-cpu.log" "cd / && $bench" || rc=$?
  record "inferdesk-cli bench --dummy llama-3.2-1b (cpu)" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $(grep -v '^#' "$OUT/bench-cpu.log" | tail -1 | sed 's/^\[ *[0-9]*s\] //' | cut -c1-100)"

  begin "desktop app"
  if [ -x "$ROOT/usr/bin/inferdesk" ]; then
    rc=0
    in_root "$OUT/gui-help.log" "cd / && inferdesk --help" || rc=$?
    record "inferdesk --help" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $OUT/gui-help.log"
    start_xvfb
    begin "desktop app window"
    in_root --x11 --bg "$OUT/gui-run.log" "cd ~ && inferdesk"
    local wr=0 wid
    wid=$(wait_window "$OUT/gui-run.log" package-screenshot) || wr=$?
    if [ $wr -eq 0 ]; then
      record "inferdesk (installed) window up" PASS "\"$(window_title "$wid")\"; $OUT/package-screenshot.png"
      rc=0; close_bg || rc=$?
    else
      rc=0; close_bg || rc=$?
      record "inferdesk (installed) window up" FAIL "rc $rc: $(said "$OUT/gui-run.log")"
    fi
    stop_xvfb
  else
    record "desktop app /usr/bin/inferdesk" FAIL "not in the package"
  fi

  if [ ${#cuda[@]} -gt 0 ]; then
    local c; c=$(basename "${cuda[0]}")
    begin "install cuda"
    rc=0
    in_root "$OUT/package-cuda.log" "cd /root/debs && DEBIAN_FRONTEND=noninteractive apt-get install -y ./$c" || rc=$?
    record "apt-get install -y ./$c" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $OUT/package-cuda.log"
    if [ $rc -eq 0 ]; then
      begin "bench cpu with cuda installed"
      rc=0
      in_root "$OUT/bench-cpu-2.log" "cd / && $bench" || rc=$?
      record "bench --backend cpu, inferdesk-cuda installed" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $OUT/bench-cpu-2.log"
      begin "bench cuda without a driver"
      rc=0
      in_root "$OUT/bench-cuda.log" "cd / && ${bench/--backend cpu/--backend cuda}" || rc=$?
      local why; why=$(grep -v '^#' "$OUT/bench-cuda.log" | grep -i -E 'cuda|driver|gpu' | tail -1 | sed 's/^\[ *[0-9]*s\] //' | cut -c1-110 || true)
      if [ $rc -ne 0 ] && [ -n "$why" ]; then
        record "bench --backend cuda says why not" PASS "rc $rc: $why"
      else
        record "bench --backend cuda says why not" FAIL "rc $rc: ${why:-no reason given}; $OUT/bench-cuda.log"
      fi
    fi
  fi

  begin "purge"
  rc=0
  in_root "$OUT/purge.log" "DEBIAN_FRONTEND=noninteractive apt-get purge -y 'inferdesk*' && ! ls /usr/bin/inferdesk-cli /usr/share/inferdesk 2>/dev/null" || rc=$?
  record "apt-get purge, files gone" "$([ $rc -eq 0 ] && echo PASS || echo FAIL)" "rc $rc; $OUT/purge.log"
}

cmd_window() { # the Xvfb + window + screenshot machinery on a host command (no root)
  start_xvfb
  begin "window"
  printf '# on the host: %s\n' "${ARGS[*]}" > "$OUT/window.log"
  DISPLAY=$DISP setsid "${ARGS[@]}" < /dev/null > >(stamp >> "$OUT/window.log") 2>&1 &
  BG_PID=$!
  local wr=0 wid rc=0
  wid=$(wait_window "$OUT/window.log" screenshot) || wr=$?
  if [ $wr -eq 0 ]; then
    record "window up: ${ARGS[*]}" PASS "\"$(window_title "$wid")\" on $DISP; $OUT/screenshot.png"
    begin "close"
    close_bg || rc=$?
    record "close (SIGTERM)" PASS "exit status $rc"
  else
    close_bg || rc=$?
    record "window up: ${ARGS[*]}" FAIL "$([ $wr -eq 1 ] && echo "exited (rc $rc)" || echo timeout); $OUT/window.log"
  fi
}

cmd_clean() {
  local d
  for d in "$ROOTS"/*/; do
    [ -d "$d" ] || continue
    d=${d%/}
    if grep -q " ${d}[/ ]" /proc/self/mountinfo; then echo "skipping $d: mounted"; continue; fi
    ROOT=$d kill_root_procs
    echo "removing $d"; rm -rf --one-file-system "$d"
  done
}

log "check.sh $CMD ${ARGS[*]:-} (output: $OUT)"
if [ "$CMD" = readme ] || [ "$CMD" = hide-package ]; then
  [ -n "$REPO" ] || REPO=$(git -C "$HERE" rev-parse --show-toplevel)
  REPO=$(readlink -f "$REPO")
fi
# one compound command, parsed whole before it runs (an edit of this file during a run cannot
# change what the rest of the run does)
main() {
case "$CMD" in
  root) cmd_root ;;
  readme) cmd_readme ;;
  package) cmd_package ;;
  hide-package) cmd_hide_package ;;
  clean) cmd_clean ;;
  window) cmd_window ;;
esac
}
main; exit

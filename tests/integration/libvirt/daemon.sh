# Sourced by tests that need libvirt (after lib.sh): a private libvirtd of their own, and
# a guest made from Debian packages (build-guest.sh).
#
#   libvirt_skip_unless_usable   skip (lib.sh) when the machine cannot run it; picks the mode
#   libvirt_start                start libvirtd; sets LIBVIRT_URI, LIBVIRT_DIR
#   libvirt_give PATH...         let the daemon's user read and write PATH (session mode)
#   libvirt_domain_type          kvm when the daemon can use KVM here, else qemu (software
#                                emulation)
#
# Two modes (LIBVIRT_MODE; FRUGAL_TEST_LIBVIRT_MODE=system|session forces one):
# * system, where the test runs as root and may unshare a mount namespace: the daemon
#   runs as root in a namespace of its own in which /etc/libvirt, /var/lib/libvirt,
#   /var/log/libvirt and /run are private directories under $TMP, so nothing it defines
#   or writes touches the host's libvirt.
# * session, everywhere else (a container without CAP_SYS_ADMIN, a non-root user): an
#   unprivileged daemon (qemu:///session) whose home is under $TMP, run as this user, or
#   as nobody when this is root. It needs no privilege at all; its guests use software
#   emulation unless its user may open /dev/kvm.
# Clients reach the daemon through the socket path in LIBVIRT_URI. Its configuration
# avoids what a container lacks and what made start-up slow: no virtlogd (qemu writes its
# own logs), no cgroups (no systemd-machined), no security driver, no per-domain mount
# namespace. The qemu capabilities it probes at first start (about 7 s: four qemu
# processes) are kept in $FRUGAL_BUILD_DIR/libvirt-cache; libvirtd is pinned to one CPU
# because libvirt drops that cache whenever the CPUID it reads differs, and the vCPUs of
# a cloud VM may differ (qemu itself runs on every CPU: libvirt resets its affinity).

LIBVIRT_DIR=""
LIBVIRT_PID=""
LIBVIRT_URI=""
LIBVIRT_MODE=""
LIBVIRT_RUN_AS=() # session mode as root: the command prefix that runs as nobody
LIBVIRT_PIDS=""   # the directory of the daemon's qemu pid files

libvirt_skip_unless_usable() {
    local missing=() tool
    for tool in libvirtd virsh qemu-system-x86_64 qemu-img busybox cpio unshare taskset; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
    done
    command -v genisoimage >/dev/null 2>&1 || command -v xorriso >/dev/null 2>&1 ||
        missing+=(genisoimage)
    compgen -G "/boot/vmlinuz-*-cloud-amd64" >/dev/null || missing+=(linux-image-cloud-amd64)
    if [ ${#missing[@]} -gt 0 ]; then
        skip "missing ${missing[*]} (scripts/install-deps.sh --libvirt)"
    fi
    LIBVIRT_MODE=${FRUGAL_TEST_LIBVIRT_MODE:-}
    if [ -z "$LIBVIRT_MODE" ]; then
        if [ "$(id -u)" -eq 0 ] && unshare -m true 2>/dev/null; then
            LIBVIRT_MODE=system
        else
            LIBVIRT_MODE=session
        fi
    fi
    if [ "$LIBVIRT_MODE" = session ] && [ "$(id -u)" -eq 0 ]; then
        command -v setpriv >/dev/null 2>&1 || skip "missing setpriv (util-linux) for a session libvirtd as nobody"
        LIBVIRT_RUN_AS=(setpriv --reuid=65534 --regid=65534 --clear-groups)
    fi
}

libvirt_give() {
    [ ${#LIBVIRT_RUN_AS[@]} -gt 0 ] || return 0
    chown -R 65534:65534 "$@"
}

# KVM when /dev/kvm opens and the CPU shows virtualisation: a nested VM may have the
# device without the extensions, and its guests then hang in the kernel's decompressor.
libvirt_domain_type() {
    if [ ${#LIBVIRT_RUN_AS[@]} -eq 0 ] && [ -r /dev/kvm ] && [ -w /dev/kvm ] &&
        grep -qw -e vmx -e svm /proc/cpuinfo; then
        echo kvm
    else
        echo qemu
    fi
}

libvirt_stop() {
    local d pid i
    [ -n "$LIBVIRT_PID" ] || return 0
    for d in $(virsh -q -c "$LIBVIRT_URI" list --uuid 2>/dev/null); do
        virsh -q -c "$LIBVIRT_URI" destroy "$d" >/dev/null 2>&1
    done
    # A qemu the daemon could not stop (it would outlive the daemon): by its pid file.
    for pid in "$LIBVIRT_PIDS"/*.pid; do
        [ -f "$pid" ] && kill -KILL "$(cat "$pid")" 2>/dev/null
    done
    kill -TERM "$LIBVIRT_PID" 2>/dev/null
    for i in $(seq 1 50); do
        kill -0 "$LIBVIRT_PID" 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL "$LIBVIRT_PID" 2>/dev/null
    wait "$LIBVIRT_PID" 2>/dev/null
    LIBVIRT_PID=""
}

libvirt_cleanup() {
    libvirt_stop
    lib_cleanup
}

libvirt_start() {
    LIBVIRT_DIR=$TMP/libvirt
    mkdir -p "$LIBVIRT_DIR"
    if [ "$LIBVIRT_MODE" = system ]; then
        libvirt_start_system
    else
        libvirt_start_session
    fi
    trap libvirt_cleanup EXIT
    local i sock=${LIBVIRT_URI#*socket=}
    for i in $(seq 1 300); do
        if ! kill -0 "$LIBVIRT_PID" 2>/dev/null; then
            cat "$LIBVIRT_DIR/libvirtd.log" >&2
            fatal "libvirtd ($LIBVIRT_MODE mode) exited during start-up"
        fi
        [ -S "$sock" ] && virsh -q -c "$LIBVIRT_URI" version >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    cat "$LIBVIRT_DIR/libvirtd.log" >&2
    fatal "libvirtd ($LIBVIRT_MODE mode) not ready after 30 s"
}

libvirt_qemu_conf() {
    cat <<'CONF'
stdio_handler = "file"
CONF
    [ "$LIBVIRT_MODE" = session ] && return 0
    cat <<'CONF'
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
CONF
}

libvirt_start_system() {
    local d=$LIBVIRT_DIR cache=${FRUGAL_BUILD_DIR:-$TMP}/libvirt-cache
    mkdir -p "$d/etc" "$d/lib" "$d/log" "$d/run" "$cache"
    cat >"$d/etc/libvirtd.conf" <<'CONF'
auth_unix_ro = "none"
auth_unix_rw = "none"
unix_sock_rw_perms = "0700"
log_outputs = "3:stderr"
CONF
    libvirt_qemu_conf >"$d/etc/qemu.conf"
    cat >"$d/start.sh" <<'START'
set -e
d=$1
mount --make-rprivate /
mount --bind "$d/etc" /etc/libvirt
mount --bind "$d/lib" /var/lib/libvirt
mount --bind "$d/log" /var/log/libvirt
mount --bind "$2" /var/cache/libvirt
mount --bind "$d/run" /run
exec taskset -c 0 libvirtd --config /etc/libvirt/libvirtd.conf
START
    unshare -m sh "$d/start.sh" "$d" "$cache" >"$d/libvirtd.log" 2>&1 &
    LIBVIRT_PID=$!
    LIBVIRT_URI="qemu:///system?socket=$d/run/libvirt/libvirt-sock"
    LIBVIRT_PIDS=$d/run/libvirt/qemu
}

# The session daemon reads $XDG_CONFIG_HOME/libvirt/{libvirtd,qemu}.conf and keeps its
# socket and qemu pid files under $XDG_RUNTIME_DIR/libvirt.
libvirt_start_session() {
    local h=$LIBVIRT_DIR/home
    mkdir -p "$h/config/libvirt" "$h/run" "$h/cache"
    echo 'log_outputs = "3:stderr"' >"$h/config/libvirt/libvirtd.conf"
    libvirt_qemu_conf >"$h/config/libvirt/qemu.conf"
    if [ ${#LIBVIRT_RUN_AS[@]} -gt 0 ]; then
        chmod 711 "$TMP" # nobody reaches the guest, the pool and its home through it
        libvirt_give "$h"
    fi
    (cd "$h" && exec "${LIBVIRT_RUN_AS[@]}" env -i PATH="$PATH" HOME="$h" XDG_CONFIG_HOME="$h/config" \
        XDG_RUNTIME_DIR="$h/run" XDG_CACHE_HOME="$h/cache" taskset -c 0 libvirtd) \
        >"$LIBVIRT_DIR/libvirtd.log" 2>&1 &
    LIBVIRT_PID=$!
    LIBVIRT_URI="qemu:///session?socket=$h/run/libvirt/libvirt-sock"
    LIBVIRT_PIDS=$h/run/libvirt/qemu/run
}

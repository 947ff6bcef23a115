# Sourced by tests that need libvirt (after lib.sh): a private libvirtd of their own, and
# a guest made from Debian packages (build-guest.sh).
#
#   libvirt_skip_unless_usable   skip (lib.sh) when the machine cannot run it
#   libvirt_start                start libvirtd; sets LIBVIRT_URI, LIBVIRT_DIR
#   libvirt_domain_type          kvm when KVM works here, else qemu (software emulation)
#
# The daemon runs as root in a mount namespace of its own in which /etc/libvirt,
# /var/lib/libvirt, /var/log/libvirt and /run are private directories under $TMP, so
# nothing it defines or writes touches the host's libvirt; clients reach it through the
# socket path in LIBVIRT_URI. Its configuration avoids what a container lacks and what
# made start-up slow: no virtlogd (qemu writes its own logs), no cgroups (no
# systemd-machined), no security driver, no per-domain mount namespace. The qemu
# capabilities it probes at first start (about 7 s: four qemu processes) are kept in
# $FRUGAL_BUILD_DIR/libvirt-cache; libvirtd is pinned to one CPU because libvirt drops that
# cache whenever the CPUID it reads differs, and the vCPUs of a cloud VM may differ (qemu
# itself runs on every CPU: libvirt resets its affinity).

LIBVIRT_DIR=""
LIBVIRT_PID=""
LIBVIRT_URI=""

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
    if [ "$(id -u)" -ne 0 ] || ! unshare -m true 2>/dev/null; then
        skip "runs libvirtd in a private mount namespace, which needs root (CAP_SYS_ADMIN)"
    fi
}

# KVM when /dev/kvm opens and the CPU shows virtualisation: a nested VM may have the
# device without the extensions, and its guests then hang in the kernel's decompressor.
libvirt_domain_type() {
    if [ -r /dev/kvm ] && [ -w /dev/kvm ] && grep -qw -e vmx -e svm /proc/cpuinfo; then
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
    for pid in "$LIBVIRT_DIR"/run/libvirt/qemu/*.pid; do
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
    local d=$TMP/libvirt cache=${FRUGAL_BUILD_DIR:-$TMP}/libvirt-cache i
    LIBVIRT_DIR=$d
    mkdir -p "$d/etc" "$d/lib" "$d/log" "$d/run" "$cache"
    cat >"$d/etc/libvirtd.conf" <<'CONF'
auth_unix_ro = "none"
auth_unix_rw = "none"
unix_sock_rw_perms = "0700"
log_outputs = "3:stderr"
CONF
    cat >"$d/etc/qemu.conf" <<'CONF'
user = "root"
group = "root"
dynamic_ownership = 0
remember_owner = 0
security_driver = "none"
cgroup_controllers = [ ]
namespaces = [ ]
stdio_handler = "file"
CONF
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
    trap libvirt_cleanup EXIT
    LIBVIRT_URI="qemu:///system?socket=$d/run/libvirt/libvirt-sock"
    for i in $(seq 1 300); do
        if ! kill -0 "$LIBVIRT_PID" 2>/dev/null; then
            cat "$d/libvirtd.log" >&2
            fatal "libvirtd exited during start-up"
        fi
        [ -S "$d/run/libvirt/libvirt-sock" ] && virsh -q -c "$LIBVIRT_URI" version >/dev/null 2>&1 &&
            return 0
        sleep 0.1
    done
    cat "$d/libvirtd.log" >&2
    fatal "libvirtd not ready after 30 s"
}

#!/bin/sh
# build-guest.sh OUT_DIR: the test guest, from Debian packages only. OUT_DIR/vmlinuz is
# the cloud kernel (linux-image-cloud-amd64); OUT_DIR/initrd.img a busybox-static
# initramfs whose /init (guest-init) mounts the NoCloud seed and runs its user-data.
# The cloud kernel builds the virtio, SCSI cdrom and iso9660 drivers as modules: they
# and their dependencies (modules.dep) go into the initramfs, in load order.
set -eu
out=$1
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck disable=SC2012 # kernel file names have no spaces
kernel=$(ls /boot/vmlinuz-*-cloud-amd64 2>/dev/null | sort -V | tail -n 1)
[ -n "$kernel" ] || { echo "build-guest: no /boot/vmlinuz-*-cloud-amd64 (linux-image-cloud-amd64)" >&2; exit 1; }
release=${kernel#/boot/vmlinuz-}
mods=/lib/modules/$release
[ -x /bin/busybox ] || { echo "build-guest: no /bin/busybox (busybox-static)" >&2; exit 1; }
root=$out/initramfs
rm -rf "$root"
mkdir -p "$root/bin" "$root/lib/modules"
cp /bin/busybox "$root/bin/busybox"
cp "$here/guest-init" "$root/init"
chmod 755 "$root/init"

# Dependencies first: each module after everything modules.dep says it needs.
: >"$root/modules.order"
module_path() {
    awk -F: -v m="/$1.ko" '{ i = index($1, m) } i > 0 && i == length($1) - length(m) + 1 { print $1; exit }' "$mods/modules.dep"
}
add_module() {
    path=$(module_path "$1")
    [ -n "$path" ] || { echo "build-guest: module $1 not in $mods" >&2; exit 1; }
    grep -qx "$path" "$root/modules.order" && return 0
    # shellcheck disable=SC2013 # modules.dep lists them space-separated
    for dep in $(awk -F: -v p="$path" '$1 == p { print $2 }' "$mods/modules.dep"); do
        add_module "$(basename "$dep" .ko)"
    done
    path=$(module_path "$1") # the recursion reused the variable
    mkdir -p "$root/lib/modules/$(dirname "$path")"
    cp "$mods/$path" "$root/lib/modules/$path"
    echo "$path" >>"$root/modules.order"
}
for m in virtio_pci virtio_blk virtio_scsi sr_mod isofs; do
    add_module "$m"
done
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$out/initrd.img"
cp "$kernel" "$out/vmlinuz"
rm -rf "$root"

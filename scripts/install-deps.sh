#!/usr/bin/env bash
# Install frugal's build and test dependencies on Debian 12 (apt-get update first).
#   scripts/install-deps.sh        what `scripts/test.sh` needs: compiler, CMake, libraries
#   scripts/install-deps.sh --ci   also what the CI checks need: clang and its sanitizer
#                                  runtimes (TSan, libFuzzer), clang-format, valgrind, and
#                                  what --libvirt installs
#   scripts/install-deps.sh --libvirt  what tests/integration/test_libvirt.sh needs: libvirtd
#                                  with its QEMU driver, virsh, QEMU, an ISO builder, and the
#                                  cloud kernel and busybox its guest is made of
set -euo pipefail
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
# libmicrohttpd-dev: the ops endpoint; libssl-dev: certificate expiry metrics;
# prometheus (promtool too) and curl: tests/integration/test_ops.sh scrapes frugal;
# libglpk-dev: replay's lower bound (linear programs); libcurl4-openssl-dev: replay
# --from-prometheus (tests/integration/test_replay_prometheus.sh backfills a TSDB with
# promtool and serves it with prometheus).
PACKAGES=(build-essential cmake pkg-config libgrpc-dev protobuf-c-compiler libprotobuf-c-dev
          libyaml-dev libcmocka-dev openssl libmicrohttpd-dev libssl-dev prometheus curl
          python3 python3-yaml etcd-server libglpk-dev libcurl4-openssl-dev)
LIBVIRT=(libvirt-daemon libvirt-daemon-driver-qemu libvirt-clients qemu-system-x86 qemu-utils
         genisoimage busybox-static linux-image-cloud-amd64 cpio)
if [ "${1:-}" = "--ci" ]; then
    PACKAGES+=(clang clang-format libclang-rt-14-dev valgrind git "${LIBVIRT[@]}")
elif [ "${1:-}" = "--libvirt" ]; then
    PACKAGES+=("${LIBVIRT[@]}")
fi
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
# Without libvirt-daemon-system (which needs systemd), nothing creates the directories
# and the user the qemu driver of libvirtd expects: make them, so test_libvirt can start it.
if [ "${1:-}" = "--ci" ] || [ "${1:-}" = "--libvirt" ]; then
    $SUDO mkdir -p /var/lib/libvirt /var/log/libvirt /var/cache/libvirt
    getent passwd libvirt-qemu >/dev/null || $SUDO useradd --system --no-create-home libvirt-qemu
fi

#!/usr/bin/env bash
# Install dependencies, build, and run frugal with the demo config (plaintext on 127.0.0.1:8086).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)"
# --init-state: the demo starts from a fresh state file when there is none yet.
exec build/frugal serve -c examples/frugal.yaml --init-state

#!/usr/bin/env bash
# Install dependencies, build, and run frugal with the demo config (plaintext on 127.0.0.1:8086).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build >/dev/null
cmake --build build -j"$(nproc)"
# examples/frugal.yaml keeps the state in memory (no state_file), so --init-state changes
# nothing until its state_file line is uncommented: then the first run creates the file.
exec build/frugal serve -c examples/frugal.yaml --init-state

#!/usr/bin/env bash
# The whole test suite: unit tests, the clean matrix and injected corruptions
# compared with e2fsck, robustness (random byte flips) and, when
# ../shared/conformance exists, e2fsprogs' own corrupted images.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/sbin:/usr/sbin"
cargo build --release --locked
cargo test --release --locked -- --test-threads=2

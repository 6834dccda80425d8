#!/usr/bin/env bash
# The whole test suite: unit tests, the clean matrix and injected corruptions
# compared with e2fsck, robustness (random byte flips), determinism across
# thread counts and, when ../shared/conformance exists, e2fsprogs' own
# corrupted images. First cargo fmt --check, clippy with -D warnings (which
# fails a function in src/ over 150 lines: Cargo.toml [lints], clippy.toml),
# cargo doc, that bench/mkimage still compiles, and whether
# link/hot-text.ld still names the functions a check runs. Ends with one "tests: N passed, N failed" line.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/sbin:/usr/sbin"
cargo fmt --all -- --check
cargo clippy --release --locked --all-targets -- -D warnings
RUSTDOCFLAGS="-D warnings" cargo doc --release --locked --no-deps --quiet
cargo build --release --locked
# bench/mkimage is its own crate on pfsck's fs/ API: nothing else builds it,
# and a change of a type there once broke it unnoticed.
(cd bench/mkimage && CARGO_TARGET_DIR=../../target/mkimage cargo check --release --locked --quiet)
python3 scripts/hot-text.py --check
# In target/, not /tmp: nothing else cleans it up while the tests run.
log=$(mktemp -p target test-log.XXXXXX)
trap 'rm -f "$log"' EXIT
set +e
cargo test --release --locked --no-fail-fast -- --test-threads=2 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
if [ -f target/conformance-report.json ]; then
    python3 - <<'PY' || true
import json
r = json.load(open("target/conformance-report.json"))
print(f"conformance: {r['agreed']}/{r['compared']} images agree with e2fsck -fn "
      f"({r['agreement_percent']}%), crashes {r['crashes']}, hangs {r['hangs']}, "
      f"modified {r['modified']}")
PY
fi
awk '/^test result:/ { for (i = 1; i <= NF; i++) { if ($(i+1) ~ /^passed/) p += $i; if ($(i+1) ~ /^failed/) f += $i } }
     END { printf "tests: %d passed, %d failed\n", p, f }' "$log"
exit "$status"

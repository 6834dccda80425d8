#!/usr/bin/env bash
# Parity: how far pfsck's output is from e2fsck 1.47.4's on the public
# conformance images.
#
#   scripts/parity.sh OUT [IMAGE...]
#
# For every image of ../shared/conformance/e2fsprogs (or the ones named),
# decompressed to OUT/work/test.img so that both checkers print the same
# device name, with a fixed clock: `-fn` on the image, then `-fy` on a
# fresh copy, once with e2fsck 1.47.4 and once with pfsck. Standard output
# and the exit code are compared in shape (scripts/report-shape.py: which
# lines state, which ask what, the numbers they name; pfsck's words are
# its own). OUT/<image>.{fn,fy}.diff holds the diff
# (e2fsck's lines `<`, pfsck's `>`) where they differ; OUT/summary.tsv has
# one line per image: identical (1/0) and diff lines for -fn and -fy. The
# totals are printed at the end.
#
# PFSCK=path picks the binary (default target/release/pfsck, not rebuilt);
# PFSCK_ARGS adds options (e.g. "-m 1"); E2FSCK the oracle (default
# $PFSCK_E2FSCK_ORACLE, as the tests, else ../shared/tools/e2fsck-1.47.4);
# the images are $PFSCK_CONFORMANCE_DIR/e2fsprogs (default
# ../shared/conformance), so that it runs from a worktree too.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/parity.sh OUT [IMAGE...]}
shift
conf=$(realpath "${PFSCK_CONFORMANCE_DIR:-../shared/conformance}/e2fsprogs")
PFSCK=$(realpath "${PFSCK:-target/release/pfsck}")
E2FSCK=$(realpath "${E2FSCK:-${PFSCK_E2FSCK_ORACLE:-../shared/tools/e2fsck-1.47.4}}")
read -r -a extra <<<"${PFSCK_ARGS:-}"
# The same "now" for both: e2fsck takes it from E2FSCK_TIME (the fake
# time of e2fsprogs' libraries alone leaves its own clock real, and
# superblock times then look in the future to one checker only). Later
# than every image's own times, so that neither finds them in the future.
export PFSCK_TIME=1800000000
export E2FSCK_TIME=1800000000
export E2FSPROGS_FAKE_TIME=1800000000
mkdir -p "$out/work"
out=$(realpath "$out")
work=$out/work
trap 'rm -rf "$work"' EXIT

if [ $# -gt 0 ]; then
    names=("$@")
else
    mapfile -t names < <(ls "$conf")
fi

unpack() { # NAME -> $work/test.img
    local d=$conf/$1
    rm -f "$work"/test.img*
    if [ -f "$d/image.gz" ]; then
        gzip -dc "$d/image.gz" >"$work/test.img"
    elif [ -f "$d/image.bz2" ]; then
        bzip2 -dc "$d/image.bz2" >"$work/test.img"
    else
        cp "$d/image" "$work/test.img"
    fi
}

run() { # OUTFILE CMD... : stdout and a final "Exit status is N" line
    local f=$1 rc=0
    shift
    (cd "$work" && timeout -k 5 60 "$@" test.img </dev/null >"$f" 2>/dev/null) || rc=$?
    echo "Exit status is $rc" >>"$f"
}

printf 'image\tfn_same\tfn_lines\tfy_same\tfy_lines\n' >"$out/summary.tsv"
for name in "${names[@]}"; do
    row=$name
    for mode in fn fy; do
        unpack "$name"
        run "$work/e2.$mode" "$E2FSCK" "-$mode"
        unpack "$name"
        run "$work/pf.$mode" "$PFSCK" "${extra[@]}" "-$mode"
        # pfsck's words are its own: the shapes are compared.
        scripts/report-shape.py <"$work/e2.$mode" >"$work/e2.$mode.shape"
        scripts/report-shape.py <"$work/pf.$mode" >"$work/pf.$mode.shape"
        if diff "$work/e2.$mode.shape" "$work/pf.$mode.shape" >"$out/$name.$mode.diff"; then
            rm -f "$out/$name.$mode.diff"
            row+=$'\t1\t0'
        else
            row+=$'\t0\t'$(grep -c '^[<>]' "$out/$name.$mode.diff" || true)
        fi
    done
    printf '%s\n' "$row" >>"$out/summary.tsv"
done
rm -f "$work"/test.img*
awk -F'\t' 'NR > 1 { n++; fs += $2; fl += $3; ys += $4; yl += $5 }
    END { printf "-fn: %d/%d the same shape, %d diff lines\n-fy: %d/%d the same shape, %d diff lines\n", fs, n, fl, ys, n, yl }' \
    "$out/summary.tsv"

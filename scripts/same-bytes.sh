#!/usr/bin/env bash
# Same bytes: records what pfsck does on a fixed set of damaged images, to
# show that a change of structure changes no behaviour.
#
#   scripts/same-bytes.sh OUT [BASELINE]
#
# For every image of $PFSCK_CONFORMANCE_DIR/e2fsprogs (the directory, or
# its conformance/ child; default ../shared/conformance) decompressed, and a
# few images damaged here with debugfs, at --threads 1 and 2: the -fn
# report and exit code, the -fy report and exit code, and the md5 of the
# repaired image. OUT/summary.tsv has one line per image and thread count,
# OUT/<image>.t<N>.{fn,fy} the reports. With BASELINE (an earlier OUT) the
# two summaries are compared and the script fails on any difference.
#
# The generated images are built once into target/same-bytes/gen (their
# md5 is in the summary, so a rebuilt image shows up as a difference);
# PFSCK=path picks the binary (default target/release/pfsck, built first).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PATH:/sbin:/usr/sbin"
out=${1:?usage: scripts/same-bytes.sh OUT [BASELINE]}
base=${2:-}
if [ -z "${PFSCK:-}" ]; then
    cargo build --release -q
    PFSCK=target/release/pfsck
fi
PFSCK=$(realpath "$PFSCK")
# The conformance images: as the test suite finds them, so that the script
# works in a worktree too.
conf=
for c in "${PFSCK_CONFORMANCE_DIR:-../shared/conformance}" \
    "${PFSCK_CONFORMANCE_DIR:-../shared/conformance}/conformance"; do
    if [ -d "$c/e2fsprogs" ]; then
        conf=$(realpath "$c/e2fsprogs")
        break
    fi
done
if [ -z "$conf" ]; then
    echo "same-bytes: no conformance images (set PFSCK_CONFORMANCE_DIR)" >&2
    exit 2
fi
gen=target/same-bytes/gen
# A fixed place: reports name the image and the undo log.
work=$(realpath -m target/same-bytes/work)
rm -rf "$work"
mkdir -p "$out" "$gen" "$work"
trap 'rm -rf "$work"' EXIT
out=$(realpath "$out")
# Time stamps a repair writes come from PFSCK_TIME.
export PFSCK_TIME=1700000000
export E2FSPROGS_FAKE_TIME=1700000000

# mkfs with a fixed UUID and hash seed, from a tree with fixed times.
mk() { # IMG SIZE MKFS-ARGS...
    local img=$1 size=$2
    shift 2
    mkfs.ext4 -q -F -U 6b33f2a8-1c3e-4b7a-9d2e-5f0a1b2c3d4e \
        -E hash_seed=0d7a7c8e-2b1f-4e6a-8c3d-9e0f1a2b3c4d "$@" "$img" "$size" >/dev/null
    # mkfs -d copies each file's ctime, which touch cannot set: fix it, so
    # that the image is the same whenever it is built.
    local prev= a
    for a in "$@"; do
        if [ "$prev" = -d ]; then
            (cd "$a" && find . -mindepth 1 | sed 's|^\.||') |
                awk '{print "sif \"" $0 "\" ctime 1690000000"}' | dfs "$img"
            echo 'sif / ctime 1690000000' | dfs "$img"
        fi
        prev=$a
    done
}
tree() {
    local t=$work/tree
    rm -rf "$t"
    mkdir -p "$t/docs" "$t/src/deep/er" "$t/big"
    for i in $(seq 1 120); do echo "file $i" >"$t/docs/note-$i.txt"; done
    for i in $(seq 1 6); do
        # Deterministic contents: no /dev/urandom.
        yes "block $i of the data file" | head -c $((i * 300000)) >"$t/big/data-$i.bin"
    done
    ln -s docs/note-1.txt "$t/link"
    find "$t" -exec touch -h -d @1690000000 {} +
    echo "$t"
}
bsize() { dumpe2fs -h "$1" 2>/dev/null | awk '/^Block size:/{print $3}'; }
dfs() { debugfs -w -f - "$1" >/dev/null 2>&1; }
blk_of() { debugfs -R "blocks $2" "$1" 2>/dev/null | awk '{print $'"${3:-1}"'}'; }

generate() {
    local name=$1 img=$gen/$1.img t
    [ -f "$img" ] && return
    t=$(tree)
    case $name in
    g_fields) # link count, i_blocks, a freed block, a group count
        mk "$img" 32M -d "$t"
        dfs "$img" <<EOF
sif /docs/note-7.txt links_count 5
sif /big/data-3.bin blocks 8
freeb $(blk_of "$img" /big/data-2.bin)
set_bg 1 free_inodes_count 3
EOF
        ;;
    g_dup) # two files sharing blocks, one entry gone, lost+found gone
        mk "$img" 32M -t ext3 -d "$t"
        dfs "$img" <<EOF
sif /big/data-4.bin block[2] $(blk_of "$img" /big/data-1.bin)
unlink /docs/note-3.txt
rmdir /lost+found
EOF
        ;;
    g_bigalloc) # bigalloc: shared cluster, unattached inode, counts
        mk "$img" 64M -O bigalloc -C 16384 -d "$t"
        dfs "$img" <<EOF
sif /big/data-5.bin block[2] $(blk_of "$img" /big/data-1.bin)
unlink /docs/note-9.txt
sif /docs/note-11.txt links_count 3
EOF
        ;;
    g_ext2) # indirect maps: a bad pointer, a directory entry to a free inode
        mk "$img" 16M -t ext2 -b 1024 -d "$t"
        dfs "$img" <<EOF
sif /big/data-2.bin block[3] 99999999
sif /big/data-6.bin block[IND] 5
clri /docs/note-20.txt
EOF
        ;;
    g_dirblock) # a directory block overwritten, the journal inode cleared
        mk "$img" 32M -d "$t"
        local b
        b=$(blk_of "$img" /src/deep)
        printf 'garbage in a directory block' |
            dd of="$img" bs=1 seek=$((b * $(bsize "$img") + 30)) conv=notrunc status=none
        dfs "$img" <<EOF
clri <8>
EOF
        ;;
    g_orphan) # an orphan list and a wrong dtime
        mk "$img" 32M -d "$t"
        dfs "$img" <<EOF
set_super_value last_orphan $(debugfs -R "stat /docs/note-40.txt" "$img" 2>/dev/null | awk '/^Inode:/{print $2; exit}')
unlink /docs/note-40.txt
sif /docs/note-41.txt dtime 12345
EOF
        ;;
    g_quota) # quota usage off, a directory's link count
        mk "$img" 32M -O quota -d "$t"
        dfs "$img" <<EOF
sif /docs/note-50.txt uid 4242
sif /src links_count 9
EOF
        ;;
    g_lostfound) # lost+found full on bigalloc, many unattached inodes
        mk "$img" 64M -O bigalloc -C 16384 -N 2048
        {
            echo "cd /lost+found"
            for i in $(seq 1 1100); do echo "mknod n$(printf %04d "$i") p"; done
            echo "cd /"
            echo "mkdir orphans"
            for i in $(seq 1 40); do echo "write $t/docs/note-$i.txt orphans/f$i"; done
            for i in $(seq 1 40); do echo "unlink orphans/f$i"; done
        } | dfs "$img"
        ;;
    esac
}

run() { # LABEL IMG
    local label=$1 img=$2 t fnx fyx
    for t in 1 2; do
        cp --sparse=always "$img" "$work/img"
        fnx=0
        timeout 120 "$PFSCK" -fn --threads "$t" "$work/img" >"$out/$label.t$t.fn" 2>&1 || fnx=$?
        fyx=0
        rm -f "$work/undo"
        timeout 120 "$PFSCK" -fy --threads "$t" -z "$work/undo" "$work/img" \
            >"$out/$label.t$t.fy" 2>&1 </dev/null || fyx=$?
        # The work path differs between worktrees; reports name it.
        sed -i "s|$work|WORK|g" "$out/$label.t$t.fn" "$out/$label.t$t.fy"
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$label" "$t" "$(md5sum <"$img" | cut -c1-32)" \
            "$fnx" "$fyx" "$(md5sum <"$work/img" | cut -c1-32)" \
            "$(cat "$out/$label.t$t.fn" "$out/$label.t$t.fy" | md5sum | cut -c1-32)" \
            >>"$out/summary.tsv"
    done
}

printf 'image\tthreads\timage_md5\tfn_exit\tfy_exit\trepaired_md5\treports_md5\n' >"$out/summary.tsv"
for d in "$conf"/*/; do
    name=$(basename "$d")
    if [ -f "$d/image.gz" ]; then
        gzip -dc "$d/image.gz" >"$work/src"
    elif [ -f "$d/image.bz2" ]; then
        bzip2 -dc "$d/image.bz2" >"$work/src"
    elif [ -f "$d/image" ]; then
        cp "$d/image" "$work/src"
    else
        continue
    fi
    run "$name" "$work/src"
done
for g in g_fields g_dup g_bigalloc g_ext2 g_dirblock g_orphan g_quota g_lostfound; do
    generate "$g"
    run "$g" "$gen/$g.img"
done
n=$(($(wc -l <"$out/summary.tsv") - 1))
echo "same-bytes: $n runs recorded in $out"
if [ -n "$base" ]; then
    if diff -u "$base/summary.tsv" "$out/summary.tsv"; then
        echo "same-bytes: identical to $base"
    else
        echo "same-bytes: DIFFERENT from $base" >&2
        exit 1
    fi
fi

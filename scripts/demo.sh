#!/usr/bin/env bash
# Builds pfsck and runs it on IMAGE, or, with no argument, on a generated
# ext4 image: checks it, damages it with debugfs, checks, repairs, verifies
# the repair with e2fsck, and rolls it back.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/deps.sh
export PATH="$PATH:/sbin:/usr/sbin"
cargo build --release --locked -q
bin=target/release/pfsck
if [ $# -gt 0 ]; then
    exec "$bin" -fn "$@"
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/tree/docs" "$work/tree/src/deep/er"
for i in $(seq 1 200); do echo "file $i" > "$work/tree/docs/note-$i.txt"; done
head -c 3000000 /dev/urandom > "$work/tree/src/blob.bin"
ln -s docs/note-1.txt "$work/tree/link"
mkfs.ext4 -q -F -L demo -d "$work/tree" "$work/demo.img" 32M
echo "== pfsck -fn on a freshly made image"
"$bin" -fn "$work/demo.img" && echo "exit status 0"
echo
echo "== damaging it: wrong link count, wrong block count, a block freed in the bitmap, a wrong group count"
blk=$(debugfs -R "blocks /src/blob.bin" "$work/demo.img" 2>/dev/null | awk '{print $1}')
debugfs -w -f - "$work/demo.img" >/dev/null 2>&1 <<CMDS
sif /docs/note-7.txt links_count 5
sif /src/blob.bin blocks 8
freeb $blk
set_bg 1 free_inodes_count 3
CMDS
cp "$work/demo.img" "$work/damaged.img"
set +e
echo
echo "== pfsck -fn (read-only)"
"$bin" -fn "$work/demo.img"
echo "exit status $? (4 = errors left uncorrected)"
echo
echo "== pfsck -fy (repair; an undo log is written first)"
"$bin" -fy "$work/demo.img"
echo "exit status $? (1 = errors corrected)"
echo
echo "== e2fsck -fn on the repaired image"
e2fsck -fn "$work/demo.img" >/dev/null 2>&1
echo "e2fsck exit status $? (0 = clean)"
echo
echo "== pfsck --rollback: back to the damaged image, byte for byte"
"$bin" --rollback "$work/demo.img.pfsck-undo" "$work/demo.img"
cmp "$work/demo.img" "$work/damaged.img" && echo "identical to the damaged image"

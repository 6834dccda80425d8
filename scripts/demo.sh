#!/usr/bin/env bash
# Builds pfsck and runs it on IMAGE, or, with no argument, on a generated
# ext4 image: first clean, then after damaging it with debugfs.
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
echo "== damaging it: wrong link count, bogus block count, a cleared directory inode"
debugfs -w -f - "$work/demo.img" >/dev/null 2>&1 <<CMDS
sif /docs/note-7.txt links_count 5
sif /src/blob.bin blocks 8
clri /src/deep
CMDS
set +e
"$bin" -fn "$work/demo.img"
echo "exit status $? (4 = errors left uncorrected)"
echo
echo "== e2fsck -fn on the same image, for comparison"
e2fsck -fn "$work/demo.img" >/dev/null 2>&1
echo "e2fsck exit status $?"

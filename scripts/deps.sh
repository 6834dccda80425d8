#!/usr/bin/env bash
# Installs what building and testing pfsck needs on a fresh Debian machine:
# the Rust toolchain is expected (rustup); e2fsprogs is the reference the
# tests compare against; attr gives setfattr for xattr fixtures; xfsprogs
# and btrfs-progs make the reflink-capable backing file systems of the
# online check's tests.
set -euo pipefail
need=()
command -v mkfs.ext4 >/dev/null 2>&1 || [ -x /sbin/mkfs.ext4 ] || need+=(e2fsprogs)
command -v setfattr >/dev/null 2>&1 || need+=(attr)
command -v bzip2 >/dev/null 2>&1 || need+=(bzip2)
command -v gzip >/dev/null 2>&1 || need+=(gzip)
command -v mkfs.xfs >/dev/null 2>&1 || [ -x /sbin/mkfs.xfs ] || need+=(xfsprogs)
command -v mkfs.btrfs >/dev/null 2>&1 || [ -x /sbin/mkfs.btrfs ] || need+=(btrfs-progs)
if [ ${#need[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}"
fi
if ! command -v cargo >/dev/null 2>&1; then
    echo "cargo not found: install Rust with rustup first" >&2
    exit 1
fi

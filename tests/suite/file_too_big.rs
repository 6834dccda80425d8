//! 0x010045 (issue 13): a block that brings a block-mapped regular file's
//! count to 2^(31 - s_log_block_size). e2fsck counts every block its walk
//! meets, as often as the map names it: a few indirect blocks named many
//! times reach the limit. pfsck counts a subtree met again by the count
//! of its first walk, without walking it again.

use crate::common::*;
use std::time::{Duration, Instant};

const MIB: u64 = 1 << 20;

/// A 4 KiB ext2 image whose file /f has, besides its one data block, a
/// triple indirect block naming one double indirect block 512 times; the
/// double indirect block names one indirect block 1024 times, which names
/// one data block 1024 times: 537,395,714 references, past the 2^29 a
/// file may count. Returns the image and the blocks (TIND, DIND, IND,
/// data).
fn shared_tind_image(tmp: &TempDir) -> (std::path::PathBuf, [u64; 4]) {
    let img = tmp.join("image");
    mkfs(&img, 8 * MIB, &MkfsOpts::ext2().block_size(4096), None);
    let small = tmp.join("small");
    std::fs::write(&small, b"hello").unwrap();
    debugfs_w(&img, &[format!("write {} f", small.display())]);
    let b = crate::common::journal::free_blocks(&img, 4, 1000);
    let (tind, dind, ind, data) = (b[0], b[1], b[2], b[3]);
    let ptrs = |target: u64, n: usize| -> Vec<u8> {
        let mut v: Vec<u8> = std::iter::repeat_n(target as u32, n)
            .flat_map(u32::to_le_bytes)
            .collect();
        v.resize(4096, 0);
        v
    };
    write_at(&img, tind * 4096, &ptrs(dind, 512));
    write_at(&img, dind * 4096, &ptrs(ind, 1024));
    write_at(&img, ind * 4096, &ptrs(data, 1024));
    let mut cmds = vec![
        format!("sif f block[TIND] {tind}"),
        "sif f size 4398046511104".to_string(),
    ];
    cmds.extend(b.iter().map(|x| format!("setb {x}")));
    debugfs_w(&img, &cmds);
    (img, [tind, dind, ind, data])
}

/// The e2fsck codes of a `--json` report, in order.
fn codes_of(img: &std::path::Path, args: &[&str]) -> (Vec<u32>, serde_json::Value) {
    let mut all = args.to_vec();
    all.push("--json");
    all.push(img.to_str().unwrap());
    let out = pfsck(&all);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "pfsck {args:?} --json: {e}\n{}",
            String::from_utf8_lossy(&out.stdout)
        )
    });
    (report_e2fsck_codes(&json), json)
}

/// e2fsck -fy asks 0x010043 at the data block that reaches the limit,
/// clears it, the two after it and the next eight references to the
/// indirect block (their count no longer moves), then clears the inode
/// at the twelfth (0x010011) and starts over; its -fn lists every later
/// reference and then each of the 537M in pass 1B, without end. pfsck
/// names the same blocks in well under a second, and its repair leaves
/// e2fsck -fn clean.
#[test]
fn shared_triple_indirect_makes_the_file_too_big() {
    let tmp = TempDir::new("too-big-tind");
    let (img, [_, _, ind, data]) = shared_tind_image(&tmp);

    let start = Instant::now();
    let (codes, json) = codes_of(&img, &["-fn"]);
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "pfsck -fn took {:?}",
        start.elapsed()
    );
    // The limit falls on data entry 1021 of the indirect block reached
    // through triple indirect entry 511 and double indirect entry 511.
    let first = json["problems"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p.to_string().contains("0x010045"))
        .expect("no block makes the file too big");
    let detail = first["detail"].as_str().unwrap_or_default();
    assert!(detail.contains("logical 537396233"), "{first}");
    assert_eq!(first["block"].as_u64(), Some(data), "{first}");
    assert_eq!(codes.iter().filter(|&&c| c == 0x010043).count(), 1);
    assert!(codes.iter().filter(|&&c| c == 0x010045).count() > 12);

    // e2fsck -fy's pass 1 logs 0x010043, eleven 0x010045 and 0x010011
    // (20 s of CPU: its log is not made here).
    let copy = tmp.join("copy");
    copy_image(&img, &copy);
    let undo = tmp.join("undo");
    let (fy, _) = codes_of(&copy, &["-fy", "-z", undo.to_str().unwrap()]);
    let pass1: Vec<u32> = fy.into_iter().filter(|c| c >> 16 == 1).collect();
    let mut want = vec![0x010043];
    want.extend([0x010045; 11]);
    want.push(0x010011);
    assert_eq!(pass1, want, "{pass1:x?}");

    let undo = tmp.join("undo2");
    let start = Instant::now();
    let out = pfsck(&["-fy", "-z", undo.to_str().unwrap(), img.to_str().unwrap()]);
    assert!(start.elapsed() < Duration::from_secs(5));
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("Block #537396233 (")
            && text.contains("past the largest file size.  CLEARED."),
        "{text}"
    );
    let ind_line = format!("Indirect block ({ind}) lies past the largest file size.  CLEARED.");
    assert_eq!(text.matches(&ind_line).count(), 8, "{text}");
    assert!(text.contains("Clear inode? yes"), "{text}");
    if oracle().is_some() {
        let after = oracle_run(&img, &["-fn"]);
        assert_eq!(
            after.code(),
            Some(0),
            "e2fsck -fn after:\n{}\n{text}",
            after.stdout
        );
    }
}

/// The same map with the triple indirect block naming the double
/// indirect block 511 times stays below the limit: the file keeps its
/// blocks (counted by multiplicity in i_blocks) and nothing is too big.
#[test]
fn shared_triple_indirect_below_the_limit_is_not_too_big() {
    let tmp = TempDir::new("too-big-tind-511");
    let (img, [tind, ..]) = shared_tind_image(&tmp);
    // Entry 511 of the triple indirect block cleared.
    write_at(&img, tind * 4096 + 511 * 4, &[0; 4]);
    let (codes, _) = codes_of(&img, &["-fn"]);
    assert!(!codes.contains(&0x010045), "{codes:x?}");
    assert!(!codes.contains(&0x010043), "{codes:x?}");
    // 1 data block, the triple indirect block and 511 times the double
    // indirect block's 1 + 1024 x 1025 references, in 4 KiB blocks.
    let want: u64 = (2 + 511 * (1 + 1024 * 1025)) * 8;
    let out = pfsck(&["-fn", img.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(text.contains(&format!("expected {want}")), "{text}");
}

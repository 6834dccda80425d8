//! Name hashes used by ext3/ext4 indexed directories (htree).
//!
//! An htree directory sorts its leaf blocks by a 32-bit hash of each entry
//! name, so checking an index means recomputing that hash exactly as the
//! kernel does, bit for bit. The algorithms are fixed by the on-disk format:
//! the legacy "dx_hack" hash, a cut-down MD4 and TEA. Each comes in a
//! "signed" and an "unsigned" flavour because the original code widened name
//! bytes through the platform's `char`, which is signed on x86 and unsigned
//! on e.g. ARM; the superblock flags record which one a file system uses.
//!
//! Everything here is pure, total arithmetic on the input slice: no I/O, no
//! `unsafe`, and no panics whatever the name length or content.

/// Hash versions as stored in dx_root_info.hash_version / s_def_hash_version.
pub const DX_HASH_LEGACY: u8 = 0;
pub const DX_HASH_HALF_MD4: u8 = 1;
pub const DX_HASH_TEA: u8 = 2;
pub const DX_HASH_LEGACY_UNSIGNED: u8 = 3;
pub const DX_HASH_HALF_MD4_UNSIGNED: u8 = 4;
pub const DX_HASH_TEA_UNSIGNED: u8 = 5;
pub const DX_HASH_SIPHASH: u8 = 6;

/// The kernel hands out `EOF << 1` as the "end of directory" readdir cookie,
/// so it never lets a real name's major hash take that value.
const HTREE_EOF_32BIT: u32 = 0x7FFF_FFFF;

/// The MD4 initial state, used whenever the superblock seed is all zeros
/// (file systems made before seeds existed, or with the seed cleared).
const DEFAULT_SEED: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// Returns (major hash, minor hash) for `name` with `version` and the superblock's
/// s_hash_seed (4 u32 words; an all-zero seed means the default seed, as in the kernel).
/// Returns None for an unknown version (or SIPHASH, which needs casefold and is unsupported).
/// The major hash has its low bit cleared (as the kernel does: hash & ~1), and a major
/// hash that would equal `EXT2_HTREE_EOF_32BIT << 1` (0xFFFF_FFFE) is moved down to
/// `(EXT2_HTREE_EOF_32BIT - 1) << 1` (0xFFFF_FFFC), as the kernel does. (e2fsprogs 1.47
/// only clears bit 0; the kernel is what places entries, so its rule wins.)
pub fn dx_hash(name: &[u8], version: u8, seed: &[u32; 4]) -> Option<(u32, u32)> {
    let (major, minor) = match version {
        DX_HASH_LEGACY => (legacy_hash(name, Sign::Signed), 0),
        DX_HASH_LEGACY_UNSIGNED => (legacy_hash(name, Sign::Unsigned), 0),
        DX_HASH_HALF_MD4 => half_md4_hash(name, seed, Sign::Signed),
        DX_HASH_HALF_MD4_UNSIGNED => half_md4_hash(name, seed, Sign::Unsigned),
        DX_HASH_TEA => tea_hash(name, seed, Sign::Signed),
        DX_HASH_TEA_UNSIGNED => tea_hash(name, seed, Sign::Unsigned),
        _ => return None,
    };
    // Bit 0 is used by the index as a "hash collision continues in the next
    // block" flag, so it can never be part of a stored hash.
    let major = major & !1;
    let major = if major == HTREE_EOF_32BIT << 1 {
        (HTREE_EOF_32BIT - 1) << 1
    } else {
        major
    };
    Some((major, minor))
}

/// How a name byte is widened to 32 bits before it enters a hash.
#[derive(Clone, Copy)]
enum Sign {
    /// Sign-extend, as C on x86 does with a plain `char`.
    Signed,
    /// Zero-extend.
    Unsigned,
}

impl Sign {
    fn widen(self, byte: u8) -> u32 {
        match self {
            // Two's-complement reinterpretation is the point here.
            Sign::Signed => i32::from(byte as i8) as u32,
            Sign::Unsigned => u32::from(byte),
        }
    }
}

fn initial_state(seed: &[u32; 4]) -> [u32; 4] {
    if seed.iter().all(|&w| w == 0) {
        DEFAULT_SEED
    } else {
        *seed
    }
}

/// The original ext3 htree hash (minor hash is always 0).
fn legacy_hash(name: &[u8], sign: Sign) -> u32 {
    let (mut current, mut previous) = (0x12a3_fe2d_u32, 0x37ab_e8f9_u32);
    for &byte in name {
        let mut next = previous.wrapping_add(current ^ sign.widen(byte).wrapping_mul(7_152_373));
        // Part of the format's definition (it was meant to keep the value
        // within 31 bits); reproduced as-is because the result is on disk.
        if next & 0x8000_0000 != 0 {
            next = next.wrapping_sub(0x7fff_ffff);
        }
        previous = current;
        current = next;
    }
    current << 1
}

/// Packs up to `out.len() * 4` bytes of `rest` into `out`, earlier bytes in
/// more significant positions.
///
/// Unused positions (a short last word, and whole words past the end) are
/// filled from a pattern built from the number of bytes still left in the
/// name, so a short tail does not look like trailing zero bytes. `rest.len()` is
/// deliberately the length remaining from this block on, not the whole name:
/// that is what the on-disk format was defined with.
fn pack_block(rest: &[u8], sign: Sign, out: &mut [u32]) {
    // Truncation mirrors the C `int`-to-`u32` arithmetic for absurd lengths;
    // real names are at most 255 bytes.
    #[allow(clippy::cast_possible_truncation)]
    let len = rest.len() as u32;
    let pad = {
        let half = len | (len << 8);
        half | (half << 16)
    };
    out.fill(pad);
    let take = rest.len().min(out.len() * 4);
    let bytes = rest.get(..take).unwrap_or(rest);
    for (word, group) in out.iter_mut().zip(bytes.chunks(4)) {
        *word = group
            .iter()
            .fold(pad, |acc, &b| (acc << 8).wrapping_add(sign.widen(b)));
    }
}

/// Runs `transform` over the name in blocks of `WORDS * 4` bytes; an empty
/// name leaves the seed untouched (that is the format, not a shortcut).
fn absorb<const WORDS: usize>(
    name: &[u8],
    sign: Sign,
    state: &mut [u32; 4],
    transform: fn(&mut [u32; 4], &[u32; WORDS]),
) {
    let mut rest = name;
    let mut block = [0u32; WORDS];
    while !rest.is_empty() {
        pack_block(rest, sign, &mut block);
        transform(state, &block);
        rest = rest.get(WORDS * 4..).unwrap_or(&[]);
    }
}

fn half_md4_hash(name: &[u8], seed: &[u32; 4], sign: Sign) -> (u32, u32) {
    let mut state = initial_state(seed);
    absorb(name, sign, &mut state, half_md4_transform);
    (state[1], state[2])
}

fn tea_hash(name: &[u8], seed: &[u32; 4], sign: Sign) -> (u32, u32) {
    let mut state = initial_state(seed);
    absorb(name, sign, &mut state, tea_transform);
    (state[0], state[1])
}

/// MD4's three rounds, each cut from 16 steps to 8 over an 8-word block.
/// For every round: boolean function, additive constant, the order in which
/// the input words are consumed, and the rotation applied at each of the
/// four positions in the a/b/c/d cycle.
type Md4Round = (fn(u32, u32, u32) -> u32, u32, [usize; 8], [u32; 4]);

const HALF_MD4_ROUNDS: [Md4Round; 3] = [
    (md4_select, 0, [0, 1, 2, 3, 4, 5, 6, 7], [3, 7, 11, 19]),
    (
        md4_majority,
        0x5a82_7999,
        [1, 3, 5, 7, 0, 2, 4, 6],
        [3, 5, 9, 13],
    ),
    (
        md4_parity,
        0x6ed9_eba1,
        [3, 7, 2, 6, 1, 5, 0, 4],
        [3, 9, 11, 15],
    ),
];

fn md4_select(x: u32, y: u32, z: u32) -> u32 {
    (x & y) | (!x & z)
}

fn md4_majority(x: u32, y: u32, z: u32) -> u32 {
    (x & y) | (x & z) | (y & z)
}

fn md4_parity(x: u32, y: u32, z: u32) -> u32 {
    x ^ y ^ z
}

fn half_md4_transform(state: &mut [u32; 4], input: &[u32; 8]) {
    // `v[0]` is the register updated by the next step; the others are its
    // inputs in order. After each step the window rotates so the register
    // just written becomes the second input, which is MD4's a->d->c->b cycle.
    // 24 steps is a multiple of 4, so `v` ends back in a, b, c, d order.
    let mut v = *state;
    for (func, constant, order, shifts) in HALF_MD4_ROUNDS {
        for (step, &word) in order.iter().enumerate() {
            let updated = v[0]
                .wrapping_add(func(v[1], v[2], v[3]))
                .wrapping_add(input[word].wrapping_add(constant))
                .rotate_left(shifts[step % 4]);
            v = [v[3], updated, v[1], v[2]];
        }
    }
    for (s, x) in state.iter_mut().zip(v) {
        *s = s.wrapping_add(x);
    }
}

fn tea_transform(state: &mut [u32; 4], input: &[u32; 4]) {
    const DELTA: u32 = 0x9e37_79b9;
    let [k0, k1, k2, k3] = *input;
    let (mut y, mut z) = (state[0], state[1]);
    let mut sum = 0u32;
    for _ in 0..16 {
        sum = sum.wrapping_add(DELTA);
        y = y.wrapping_add(
            (z << 4).wrapping_add(k0) ^ z.wrapping_add(sum) ^ (z >> 5).wrapping_add(k1),
        );
        z = z.wrapping_add(
            (y << 4).wrapping_add(k2) ^ y.wrapping_add(sum) ^ (y >> 5).wrapping_add(k3),
        );
    }
    state[0] = state[0].wrapping_add(y);
    state[1] = state[1].wrapping_add(z);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names hashed by debugfs; row `i` of each expectation table below is
    /// for `sample_names()[i]`. The lengths cover the empty name, one byte,
    /// both sides of the 16-byte (TEA) and 32-byte (half-MD4) block edges,
    /// and the 255-byte maximum; the last three contain bytes >= 0x80, which
    /// is where the signed and unsigned variants part ways.
    fn sample_names() -> Vec<Vec<u8>> {
        let mut straddle = vec![b'x'; 14];
        straddle.extend_from_slice("é".as_bytes());
        straddle.extend_from_slice(&[b'y'; 17]);
        vec![
            b"".to_vec(),
            b"a".to_vec(),
            b"abcdefghijklmnopqrstuvwxyz01234".to_vec(),
            b"abcdefghijklmnopqrstuvwxyz012345".to_vec(),
            b"abcdefghijklmnopqrstuvwxyz0123456".to_vec(),
            (0..255u8).map(|i| b'a' + i % 26).collect(),
            b"file_1".to_vec(),
            "café".as_bytes().to_vec(),
            (0xdf..=0xffu8).collect(),
            straddle,
        ]
    }

    /// Seed debugfs was given as `-s ed25d13c-4e22-4141-a84f-e8987c226fd9`:
    /// the UUID's 16 bytes read as four little-endian words, which is how
    /// s_hash_seed sits on disk.
    const UUID_SEED: [u32; 4] = [0x3cd1_25ed, 0x4141_224e, 0x98e8_4fa8, 0xd96f_227c];

    // Expected (major, minor) per name, columns in hash version order 0..=5
    // (legacy, half_md4, tea, then the three unsigned variants).
    //
    // Produced with e2fsprogs 1.47.0 on this machine:
    //   mkfs.ext4 -q -F -O dir_index -b 1024 -d /tmp/dxh /tmp/dxh.img 4M
    //   debugfs -R 'dx_hash -h HASHALG_<version> [-s <uuid>] <name>' /tmp/dxh.img
    // (`HASHALG_<n>` is how debugfs accepts the unsigned versions 3..=5; with
    // no `-s` debugfs uses an all-zero seed, i.e. the default MD4 state.)

    const ZERO_SEED_EXPECTED: [[(u32, u32); 6]; 10] = [
        [
            (0x2547fc5a, 0x00000000),
            (0xefcdab88, 0x98badcfe),
            (0x67452300, 0xefcdab89),
            (0x2547fc5a, 0x00000000),
            (0xefcdab88, 0x98badcfe),
            (0x67452300, 0xefcdab89),
        ],
        [
            (0xe74b53e2, 0x00000000),
            (0xd5fa7d7a, 0xacb48187),
            (0x6d0ea4c0, 0xc18922df),
            (0xe74b53e2, 0x00000000),
            (0xd5fa7d7a, 0xacb48187),
            (0x6d0ea4c0, 0xc18922df),
        ],
        [
            (0x29d37198, 0x00000000),
            (0x7121f204, 0xadc56003),
            (0x22d2cdd4, 0x61b882ac),
            (0x29d37198, 0x00000000),
            (0x7121f204, 0xadc56003),
            (0x22d2cdd4, 0x61b882ac),
        ],
        [
            (0x8be22c02, 0x00000000),
            (0x19643b1a, 0xdde3a0bf),
            (0xe78c76dc, 0x94dd872b),
            (0x8be22c02, 0x00000000),
            (0x19643b1a, 0xdde3a0bf),
            (0xe78c76dc, 0x94dd872b),
        ],
        [
            (0xcfbc04f6, 0x00000000),
            (0x16ed9a9c, 0x2fb8454f),
            (0x521eac64, 0xffc99004),
            (0xcfbc04f6, 0x00000000),
            (0x16ed9a9c, 0x2fb8454f),
            (0x521eac64, 0xffc99004),
        ],
        [
            (0x6729895e, 0x00000000),
            (0xdecbfdee, 0xe3c08226),
            (0xbb476820, 0xe990b17f),
            (0x6729895e, 0x00000000),
            (0xdecbfdee, 0xe3c08226),
            (0xbb476820, 0xe990b17f),
        ],
        [
            (0x9fa9573a, 0x00000000),
            (0x52e394a6, 0x5f4d40d8),
            (0xd7302454, 0xd91d3e27),
            (0x9fa9573a, 0x00000000),
            (0x52e394a6, 0x5f4d40d8),
            (0xd7302454, 0xd91d3e27),
        ],
        [
            (0x96ca5a2c, 0x00000000),
            (0xfb9c5e5c, 0x0573e8b8),
            (0x105842ea, 0xfb9165ca),
            (0x6dde4230, 0x00000000),
            (0x9d72aed6, 0xf6138c6a),
            (0x6621f032, 0xf86699c6),
        ],
        [
            (0xa2db3e36, 0x00000000),
            (0x2e0e3ae8, 0xb5b1f77b),
            (0x23cdf78c, 0xeead62bc),
            (0xdc38b3c0, 0x00000000),
            (0x02d0d9e2, 0x2e947967),
            (0xd5ed3942, 0x6b9d077a),
        ],
        [
            (0xe6283174, 0x00000000),
            (0x58221938, 0xc6fe7912),
            (0x8b4fed0a, 0xbf03b98d),
            (0xf7b8eb6e, 0x00000000),
            (0x296dd284, 0xf08f9406),
            (0xc55e5b2c, 0xc34a157e),
        ],
    ];

    const UUID_SEED_EXPECTED: [[(u32, u32); 6]; 10] = [
        [
            (0x2547fc5a, 0x00000000),
            (0x4141224e, 0x98e84fa8),
            (0x3cd125ec, 0x4141224e),
            (0x2547fc5a, 0x00000000),
            (0x4141224e, 0x98e84fa8),
            (0x3cd125ec, 0x4141224e),
        ],
        [
            (0xe74b53e2, 0x00000000),
            (0x57dadac2, 0xf69d53c2),
            (0xaeee4460, 0x41a0335a),
            (0xe74b53e2, 0x00000000),
            (0x57dadac2, 0xf69d53c2),
            (0xaeee4460, 0x41a0335a),
        ],
        [
            (0x29d37198, 0x00000000),
            (0x73e99c42, 0xe3a559b8),
            (0x8151c886, 0xddbb0bba),
            (0x29d37198, 0x00000000),
            (0x73e99c42, 0xe3a559b8),
            (0x8151c886, 0xddbb0bba),
        ],
        [
            (0x8be22c02, 0x00000000),
            (0x8435125a, 0x52634233),
            (0xd4166ed0, 0x68621c0f),
            (0x8be22c02, 0x00000000),
            (0x8435125a, 0x52634233),
            (0xd4166ed0, 0x68621c0f),
        ],
        [
            (0xcfbc04f6, 0x00000000),
            (0xf3c5840a, 0xb8f8becc),
            (0xe8be07ca, 0x6c888bc1),
            (0xcfbc04f6, 0x00000000),
            (0xf3c5840a, 0xb8f8becc),
            (0xe8be07ca, 0x6c888bc1),
        ],
        [
            (0x6729895e, 0x00000000),
            (0xd73e9626, 0x25c4e52d),
            (0x4b8ef9fa, 0x8b3f18f6),
            (0x6729895e, 0x00000000),
            (0xd73e9626, 0x25c4e52d),
            (0x4b8ef9fa, 0x8b3f18f6),
        ],
        [
            (0x9fa9573a, 0x00000000),
            (0x1fe27c90, 0x3926232c),
            (0xfdee5e20, 0xd39b0c69),
            (0x9fa9573a, 0x00000000),
            (0x1fe27c90, 0x3926232c),
            (0xfdee5e20, 0xd39b0c69),
        ],
        [
            (0x96ca5a2c, 0x00000000),
            (0xc80d5836, 0x65f40b9c),
            (0x6a320742, 0xa0502acc),
            (0x6dde4230, 0x00000000),
            (0x47e4bfb0, 0x4acef721),
            (0x6cc9b4d6, 0x8d0a6d83),
        ],
        [
            (0xa2db3e36, 0x00000000),
            (0x9fcb96c8, 0x4c3dcf64),
            (0x441f344c, 0x8f8d584d),
            (0xdc38b3c0, 0x00000000),
            (0xd8b8d0d2, 0xa982a072),
            (0x8b0f298c, 0xeb8808e0),
        ],
        [
            (0xe6283174, 0x00000000),
            (0xc3d8834c, 0xaa50b54f),
            (0x82b6b50e, 0x88f37be0),
            (0xf7b8eb6e, 0x00000000),
            (0xd27de134, 0xe8e982b3),
            (0xcc3204a2, 0xc411fecc),
        ],
    ];

    fn check_table(seed: &[u32; 4], table: &[[(u32, u32); 6]; 10]) {
        let names = sample_names();
        assert_eq!(names.len(), table.len());
        for (name, row) in names.iter().zip(table) {
            for (version, &expected) in (0u8..).zip(row) {
                assert_eq!(
                    dx_hash(name, version, seed),
                    Some(expected),
                    "version {version}, name {name:02x?}"
                );
            }
        }
    }

    #[test]
    fn matches_debugfs_with_default_seed() {
        check_table(&[0; 4], &ZERO_SEED_EXPECTED);
    }

    #[test]
    fn matches_debugfs_with_uuid_seed() {
        check_table(&UUID_SEED, &UUID_SEED_EXPECTED);
    }

    #[test]
    fn sample_lengths_cover_block_edges() {
        let lengths: Vec<usize> = sample_names().iter().map(Vec::len).collect();
        for wanted in [0, 1, 31, 32, 33, 255] {
            assert!(lengths.contains(&wanted), "no sample of length {wanted}");
        }
    }

    /// Hashes e2fsck itself stored in a real index: `e2fsck -fyD` on the
    /// 400-file image above (signed half-MD4, s_hash_seed read from the
    /// superblock at byte 0xEC), then `debugfs -R 'htree_dump d'`.
    #[test]
    fn matches_index_built_by_e2fsck_half_md4_signed() {
        let seed = [0x3cd1_25ed, 0x4141_224e, 0x98e8_4fa8, 0xd96f_227c];
        let cases: [(&[u8], u32, u32); 4] = [
            (b"file_107", 0x000e_9aa8, 0xf667_6cc0),
            (b"file_337", 0x0017_7924, 0x00e6_0b0b),
            (b"file_90", 0x039c_6882, 0xda22_ecf0),
            (b"file_97", 0x0832_74e6, 0xbf76_7fb7),
        ];
        for (name, major, minor) in cases {
            assert_eq!(dx_hash(name, DX_HASH_HALF_MD4, &seed), Some((major, minor)));
        }
    }

    /// As above but TEA, unsigned, names with byte 0xE9: 300 files
    /// `n\xe9_<i>`, mkfs.ext4 -E hash_seed=00112233-4455-6677-8899-aabbccddeeff,
    /// then `debugfs -w -R 'ssv flags 2'` (unsigned hash) and
    /// `ssv def_hash_version tea`, `e2fsck -fyD`, `htree_dump d`.
    #[test]
    fn matches_index_built_by_e2fsck_tea_unsigned() {
        let seed = [0x3322_1100, 0x7766_5544, 0xbbaa_9988, 0xffee_ddcc];
        let cases: [(&[u8], u32, u32); 4] = [
            (b"n\xe9_240", 0x0179_f862, 0x7093_4826),
            (b"n\xe9_181", 0x0245_13f4, 0x4d47_144a),
            (b"n\xe9_8", 0x0476_11de, 0x95b1_028c),
            (b"n\xe9_91", 0x0ace_7466, 0xe776_a298),
        ];
        for (name, major, minor) in cases {
            assert_eq!(
                dx_hash(name, DX_HASH_TEA_UNSIGNED, &seed),
                Some((major, minor))
            );
        }
    }

    /// An empty name leaves the seed as the state, so a chosen seed forces a
    /// major hash of 0xFFFFFFFF / 0xFFFFFFFE. debugfs 1.47.0 (seed
    /// ffffffff-feff-ffff-0200-000003000000) reports 0xfffffffe there, because
    /// e2fsprogs only clears bit 0; the kernel additionally moves that value to
    /// 0xFFFFFFFC so it never equals its end-of-directory cookie, and the
    /// kernel is what places entries on disk, so we follow it. Minor hashes are
    /// debugfs's.
    #[test]
    fn eof_major_hash_is_moved_like_the_kernel() {
        let seed = [0xffff_ffff, 0xffff_fffe, 2, 3];
        assert_eq!(
            dx_hash(b"", DX_HASH_TEA, &seed),
            Some((0xffff_fffc, 0xffff_fffe))
        );
        assert_eq!(
            dx_hash(b"", DX_HASH_TEA_UNSIGNED, &seed),
            Some((0xffff_fffc, 0xffff_fffe))
        );
        assert_eq!(
            dx_hash(b"", DX_HASH_HALF_MD4, &seed),
            Some((0xffff_fffc, 2))
        );
        assert_eq!(
            dx_hash(b"", DX_HASH_HALF_MD4_UNSIGNED, &seed),
            Some((0xffff_fffc, 2))
        );
    }

    #[test]
    fn unknown_versions_and_siphash_are_rejected() {
        assert_eq!(dx_hash(b"x", DX_HASH_SIPHASH, &[0; 4]), None);
        for version in 7..=u8::MAX {
            assert_eq!(dx_hash(b"x", version, &[1, 2, 3, 4]), None);
        }
    }

    #[test]
    fn any_input_is_total() {
        let long: Vec<u8> = (0..70_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
            .collect();
        for len in (0..=300).chain([4095, 4096, 4097, long.len()]) {
            let name = &long[..len];
            for version in 0..=5 {
                let (major, _) = dx_hash(name, version, &[7, 0, 0, 0]).expect("known version");
                assert_eq!(major & 1, 0);
                assert_ne!(major, 0xffff_fffe);
            }
        }
    }
}

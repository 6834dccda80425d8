//! A compact, append-only list of problems.
//!
//! A check can find hundreds of thousands of problems (issue 4: one on
//! every other inode), and the report keeps them all to the end. As
//! 56-byte `Problem` values they were most of such a check's memory, so
//! the list keeps each problem as the bytes of its code, which numbers it
//! has and those numbers as varints — 5 to 8 bytes for the usual inode
//! problem — and its detail string inline (rare, and short: an entry's
//! name). Reading decodes: [`ProblemList::iter`] yields `Problem` values.
//!
//! Lists are joined by copying bytes, never by decoding, so per-worker and
//! per-unit lists merge in a fixed order at the cost of a `memcpy`. The
//! encoding is canonical (equal problems, equal bytes): comparing and
//! hashing work on the bytes ([`ProblemList::keys`]).
//!
//! Record: code (index in `Code::ALL`, its low 8 bits; the ninth is
//! `CODE_HIGH` of the next byte), a byte of `HAS_*` bits, then the
//! numbers present (ino, blk, group, num, num2) as LEB128, then, with
//! `HAS_E2`, the e2fsck code the check named as LEB128, then, with
//! `HAS_DETAIL`, the detail's length as LEB128 and its bytes.

use super::problem::{Code, Pass, Problem};
use crate::fs::num::{Blk, Group, Ino};
use crate::narrow;
use std::ops::Range;

const HAS_INO: u8 = 1;
const HAS_BLK: u8 = 2;
const HAS_GROUP: u8 = 4;
const HAS_NUM: u8 = 8;
const HAS_NUM2: u8 = 16;
const HAS_DETAIL: u8 = 32;
const HAS_E2: u8 = 64;
/// Bit 8 of the code's index: the table outgrew one byte, and this bit of
/// the flags byte was free (no record grew).
const CODE_HIGH: u8 = 128;

/// Every this many problems the list notes where one starts, so `get`
/// decodes at most this many to reach any problem.
const STRIDE: usize = 64;

// The code is kept in nine bits.
const _: () = assert!(Code::ALL.len() <= 512);

#[derive(Clone, Default, PartialEq, Eq)]
pub struct ProblemList {
    bytes: Vec<u8>,
    len: usize,
    /// Byte offset of problems 0, STRIDE, 2·STRIDE, ...
    starts: Vec<usize>,
}

impl ProblemList {
    pub fn new() -> ProblemList {
        ProblemList::default()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push(&mut self, p: Problem) {
        self.push_ref(&p);
    }

    pub fn push_ref(&mut self, p: &Problem) {
        if self.len.is_multiple_of(STRIDE) {
            self.starts.push(self.bytes.len());
        }
        encode(p, &mut self.bytes);
        self.len += 1;
    }

    /// Appends `other`'s problems after this list's, moving bytes only.
    pub fn append(&mut self, other: ProblemList) {
        if self.is_empty() {
            *self = other;
            return;
        }
        self.append_records(&other.bytes, other.len);
    }

    /// Where the next problem pushed will start: with a later `mark`, the
    /// range of what was pushed in between, for [`Self::append_range`].
    pub fn mark(&self) -> usize {
        self.bytes.len()
    }

    /// Appends the problems of `other` between two of its marks.
    pub fn append_range(&mut self, other: &ProblemList, range: Range<usize>) {
        let Some(bytes) = other.bytes.get(range) else {
            return;
        };
        let n = Records(bytes).count();
        self.append_records(bytes, n);
    }

    /// Splits the list at `mark` (one of its marks): it keeps what was
    /// pushed before, and the rest is returned.
    pub fn split_off(&mut self, mark: usize) -> ProblemList {
        let mut tail = ProblemList::new();
        tail.append_range(self, mark..self.bytes.len());
        self.bytes.truncate(mark);
        self.len -= tail.len;
        self.starts.retain(|&s| s < mark);
        tail
    }

    /// Appends `n` whole records.
    fn append_records(&mut self, bytes: &[u8], n: usize) {
        if n == 0 {
            return;
        }
        let base = self.bytes.len();
        self.bytes.reserve(bytes.len());
        // Offsets of the records that fall on a stride, found by skipping.
        let mut k = self.len;
        let mut at = 0;
        for rec in Records(bytes) {
            if k.is_multiple_of(STRIDE) {
                self.starts.push(base + at);
            }
            at += rec.len();
            k += 1;
        }
        self.bytes.extend_from_slice(&bytes[..at]);
        self.len = k;
    }

    pub fn iter(&self) -> Iter<'_> {
        Iter {
            recs: Records(&self.bytes),
            left: self.len,
        }
    }

    /// Each problem's code, read without decoding the rest.
    pub fn codes(&self) -> impl Iterator<Item = Code> + '_ {
        Records(&self.bytes).filter_map(code_of)
    }

    /// The problems whose code `want` says yes to, with their index; the
    /// others are skipped without being decoded.
    pub fn iter_where<'a>(
        &'a self,
        want: impl Fn(Code) -> bool + 'a,
    ) -> impl Iterator<Item = (usize, Problem)> + 'a {
        Records(&self.bytes)
            .enumerate()
            .filter(move |(_, r)| code_of(r).is_some_and(&want))
            .filter_map(|(k, r)| Some((k, decode(r)?)))
    }

    /// The problems in the order a report prints them, pass by pass (a
    /// check that ended early may not have sorted them), with their
    /// indices in the list.
    pub fn in_print_order(&self) -> impl Iterator<Item = (usize, Problem)> + '_ {
        use super::problem::Pass;
        [
            Pass::Super,
            Pass::P1,
            Pass::P1B,
            Pass::P2,
            Pass::P3,
            Pass::P4,
            Pass::P5,
        ]
        .into_iter()
        .flat_map(|pass| self.iter_where(move |c| c.spec().pass == pass))
    }

    /// Each problem's encoded bytes: equal for equal problems, so they
    /// can be hashed and compared without decoding.
    pub fn keys(&self) -> impl Iterator<Item = &[u8]> {
        Records(&self.bytes)
    }

    /// The `k`-th problem.
    pub fn get(&self, k: usize) -> Option<Problem> {
        self.key(k).and_then(decode)
    }

    /// The `k`-th problem's key (see [`Self::keys`]).
    pub fn key(&self, k: usize) -> Option<&[u8]> {
        if k >= self.len {
            return None;
        }
        let start = *self.starts.get(k / STRIDE)?;
        Records(self.bytes.get(start..)?).nth(k % STRIDE)
    }

    /// Appends the problem whose key (from [`Self::keys`] of any list)
    /// is `key`; anything that is not one key is ignored.
    pub fn push_key(&mut self, key: &[u8]) {
        if record_len(key) == Some(key.len()) {
            self.append_records(key, 1);
        }
    }

    pub fn contains(&self, p: &Problem) -> bool {
        let mut key = Vec::new();
        encode(p, &mut key);
        self.keys().any(|k| k == key.as_slice())
    }

    /// Keeps the problems `keep` says yes to, in order.
    pub fn retain(&mut self, mut keep: impl FnMut(&Problem) -> bool) {
        let old = std::mem::take(self);
        for (rec, p) in Records(&old.bytes).zip(old.iter()) {
            if keep(&p) {
                self.append_records(rec, 1);
            }
        }
    }

    /// Keeps the first `n` problems: where a check stops, e2fsck's report
    /// ends.
    pub fn truncate(&mut self, n: usize) {
        let mut k = 0;
        self.retain(|_| {
            k += 1;
            k <= n
        });
    }

    /// Each problem's pass, in order; cheap (the code byte only).
    fn passes(&self) -> impl Iterator<Item = Pass> + '_ {
        self.codes().map(|c| c.spec().pass)
    }

    pub fn is_sorted_by_pass(&self) -> bool {
        self.passes().is_sorted()
    }

    /// Orders the problems by pass, keeping their order within a pass.
    pub fn sort_by_pass(&mut self) {
        if self.is_sorted_by_pass() {
            return;
        }
        let all = vec![true; self.len];
        *self = self.select_by_pass(&all, |_| {});
    }

    /// The problems `keep` (parallel to the list) says yes to, ordered by
    /// pass and within a pass as they are here; `picked` is told each
    /// one's index here, in the new order.
    pub fn select_by_pass(&self, keep: &[bool], mut picked: impl FnMut(usize)) -> ProblemList {
        // One walk, a list per pass, joined in pass order.
        let mut by_pass: std::collections::BTreeMap<Pass, (ProblemList, Vec<usize>)> =
            Default::default();
        for (k, rec) in Records(&self.bytes).enumerate() {
            if !keep.get(k).copied().unwrap_or(false) {
                continue;
            }
            let Some(code) = code_of(rec) else {
                continue;
            };
            let (list, picks) = by_pass.entry(code.spec().pass).or_default();
            list.append_records(rec, 1);
            picks.push(k);
        }
        let mut out = ProblemList::new();
        for (list, picks) in by_pass.into_values() {
            out.append(list);
            picks.into_iter().for_each(&mut picked);
        }
        out
    }

    /// Each problem's key with its offset (for [`Self::key_at`]), in order.
    pub fn keys_at(&self) -> impl Iterator<Item = (usize, &[u8])> {
        Records(&self.bytes).scan(0, |at, rec| {
            let here = *at;
            *at += rec.len();
            Some((here, rec))
        })
    }

    /// The key of the problem at `offset` (from [`Self::keys_at`]).
    pub fn key_at(&self, offset: usize) -> Option<&[u8]> {
        Records(self.bytes.get(offset..)?).next()
    }

    /// Bytes held (for tests and measurements).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.starts.capacity() * std::mem::size_of::<usize>()
    }
}

impl std::fmt::Debug for ProblemList {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl Extend<Problem> for ProblemList {
    fn extend<I: IntoIterator<Item = Problem>>(&mut self, iter: I) {
        for p in iter {
            self.push(p);
        }
    }
}

impl FromIterator<Problem> for ProblemList {
    fn from_iter<I: IntoIterator<Item = Problem>>(iter: I) -> ProblemList {
        let mut l = ProblemList::new();
        l.extend(iter);
        l
    }
}

impl From<Vec<Problem>> for ProblemList {
    fn from(v: Vec<Problem>) -> ProblemList {
        v.into_iter().collect()
    }
}

impl<'a> IntoIterator for &'a ProblemList {
    type Item = Problem;
    type IntoIter = Iter<'a>;
    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

/// The problems of a list, decoded one by one.
#[derive(Clone)]
pub struct Iter<'a> {
    recs: Records<'a>,
    left: usize,
}

impl Iterator for Iter<'_> {
    type Item = Problem;
    fn next(&mut self) -> Option<Problem> {
        // Decoding finds the record's end: no separate measuring.
        let (p, n) = decode_len(self.recs.0)?;
        self.recs.0 = self.recs.0.get(n..)?;
        self.left = self.left.saturating_sub(1);
        Some(p)
    }
    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
    fn nth(&mut self, n: usize) -> Option<Problem> {
        // Skipped records are measured, not decoded.
        for _ in 0..n {
            self.recs.next()?;
            self.left = self.left.saturating_sub(1);
        }
        self.next()
    }
}

impl ExactSizeIterator for Iter<'_> {}

/// The records of an encoded list, each as its bytes. Stops at the first
/// malformed one (none are: the list writes them itself).
#[derive(Clone)]
struct Records<'a>(&'a [u8]);

impl<'a> Iterator for Records<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        let n = record_len(self.0)?;
        let (rec, rest) = self.0.split_at_checked(n)?;
        self.0 = rest;
        Some(rec)
    }
}

fn code_of(rec: &[u8]) -> Option<Code> {
    let high = usize::from(*rec.get(1)? & CODE_HIGH != 0) << 8;
    Code::ALL.get(high | usize::from(*rec.first()?)).copied()
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push(narrow::sat8(v & 0x7F) | 0x80);
        v >>= 7;
    }
    out.push(narrow::sat8(v));
}

/// A varint at the start of `b`: its value and length.
fn get_varint(b: &[u8]) -> Option<(u64, usize)> {
    // Most numbers of most problems fit in one byte.
    if let Some(&x) = b.first()
        && x < 0x80
    {
        return Some((u64::from(x), 1));
    }
    let mut v = 0u64;
    for (i, &byte) in b.iter().enumerate().take(10) {
        v |= u64::from(byte & 0x7F).checked_shl(7 * narrow::sat32(i))?;
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

fn encode(p: &Problem, out: &mut Vec<u8>) {
    let a = p.args();
    let mut has = 0;
    for (bit, set) in [
        (HAS_INO, a.ino.is_some()),
        (HAS_BLK, a.blk.is_some()),
        (HAS_GROUP, a.group.is_some()),
        (HAS_NUM, a.num.is_some()),
        (HAS_NUM2, a.num2.is_some()),
        (HAS_DETAIL, !a.detail.is_empty()),
        (HAS_E2, p.e2fsck_override().is_some()),
    ] {
        if set {
            has |= bit;
        }
    }
    let index = p.code as usize;
    if index >= 256 {
        has |= CODE_HIGH;
    }
    out.push(narrow::sat8(index as u64 & 0xFF));
    out.push(has);
    let nums = [
        a.ino.map(|i| u64::from(i.get())),
        a.blk.map(Blk::get),
        a.group.map(|g| u64::from(g.get())),
        a.num,
        a.num2,
    ];
    for v in nums
        .into_iter()
        .chain([p.e2fsck_override().map(u64::from)])
        .flatten()
    {
        put_varint(out, v);
    }
    if !a.detail.is_empty() {
        put_varint(out, a.detail.len() as u64);
        out.extend_from_slice(a.detail.as_bytes());
    }
}

/// The length of the record at the start of `b`.
fn record_len(b: &[u8]) -> Option<usize> {
    let has = *b.get(1)?;
    // The numbers are skipped, not read: one varint ends at each byte
    // without its top bit.
    let numbers =
        (has & (HAS_INO | HAS_BLK | HAS_GROUP | HAS_NUM | HAS_NUM2 | HAS_E2)).count_ones() as usize;
    let mut at = 2;
    for _ in 0..numbers {
        at += b.get(at..)?.iter().take(10).position(|&x| x & 0x80 == 0)? + 1;
    }
    if has & HAS_DETAIL != 0 {
        let (n, l) = get_varint(b.get(at..)?)?;
        at = at.checked_add(l)?.checked_add(usize::try_from(n).ok()?)?;
    }
    (at <= b.len()).then_some(at)
}

fn decode(rec: &[u8]) -> Option<Problem> {
    decode_len(rec).map(|(p, _)| p)
}

/// The problem at the start of `rec`, and its record's length.
fn decode_len(rec: &[u8]) -> Option<(Problem, usize)> {
    let mut p = Problem::new(code_of(rec)?);
    let has = *rec.get(1)?;
    let mut at = 2;
    let next = |at: &mut usize| -> Option<u64> {
        let (v, l) = get_varint(rec.get(*at..)?)?;
        *at += l;
        Some(v)
    };
    if has & HAS_INO != 0 {
        p = p.ino(Ino(u32::try_from(next(&mut at)?).ok()?));
    }
    if has & HAS_BLK != 0 {
        p = p.blk(Blk(next(&mut at)?));
    }
    if has & HAS_GROUP != 0 {
        p = p.group(Group(u32::try_from(next(&mut at)?).ok()?));
    }
    if has & HAS_NUM != 0 {
        p = p.num(next(&mut at)?);
    }
    if has & HAS_NUM2 != 0 {
        p = p.num2(next(&mut at)?);
    }
    if has & HAS_E2 != 0 {
        p = p.e2fsck(u32::try_from(next(&mut at)?).ok()?);
    }
    if has & HAS_DETAIL != 0 {
        let n = usize::try_from(next(&mut at)?).ok()?;
        let text = rec.get(at..at.checked_add(n)?)?;
        p = p.detail(std::str::from_utf8(text).ok()?);
        at += n;
    }
    Some((p, at))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<Problem> {
        vec![
            Problem::new(Code::InodeDtimeSet).ino(Ino(13)),
            Problem::new(Code::InodeIBlocks)
                .ino(Ino(17))
                .num(16)
                .num2(8),
            Problem::new(Code::SuperFreeBlocks).num(u64::MAX).num2(0),
            Problem::new(Code::DirEntryFileType)
                .ino(Ino(u32::MAX))
                .num(1)
                .num2(2)
                .detail("naïve name"),
            Problem::new(Code::RootMissing),
            Problem::new(Code::InodeBitmapDiff).detail("-(12--40)".repeat(100)),
            Problem::new(Code::GdChecksum)
                .group(Group(7))
                .blk(Blk(1 << 40)),
            Problem::new(Code::SbExtraIsize).num(0).detail(""),
            Problem::new(Code::InodeBadFlags)
                .ino(Ino(9))
                .e2fsck(0x01005C)
                .detail("x"),
            // Past the first 256 codes, the flags byte holds the ninth bit.
            Problem::new(Code::ALL[Code::ALL.len() - 1]).ino(Ino(3)),
        ]
    }

    #[test]
    fn codes_index_their_table() {
        for (k, c) in Code::ALL.iter().enumerate() {
            assert_eq!(*c as usize, k);
        }
    }

    #[test]
    fn round_trips_every_field() {
        let v = sample();
        let l: ProblemList = v.clone().into();
        assert_eq!(l.len(), v.len());
        assert_eq!(l.iter().collect::<Vec<_>>(), v);
        for (k, p) in v.iter().enumerate() {
            assert_eq!(l.get(k).as_ref(), Some(p));
            assert!(l.contains(p));
        }
        assert_eq!(l.get(v.len()), None);
        assert!(!l.contains(&Problem::new(Code::InodeDtimeSet).ino(Ino(14))));
        // The common inode problems take a few bytes each.
        let small: ProblemList = (0..1000u32)
            .map(|i| {
                Problem::new(Code::InodeLinkCount)
                    .ino(Ino(200_000 + i))
                    .num(2)
                    .num2(1)
            })
            .collect();
        assert!(small.heap_bytes() < 1000 * 10, "{}", small.heap_bytes());
    }

    #[test]
    fn get_and_append_across_strides() {
        let v: Vec<Problem> = (0..1000u32)
            .map(|i| {
                let p = Problem::new(Code::InodeISize)
                    .ino(Ino(i))
                    .num(u64::from(i) * 77);
                if i % 7 == 0 {
                    p.detail(format!("d{i}"))
                } else {
                    p
                }
            })
            .collect();
        let mut a = ProblemList::new();
        let mut b = ProblemList::new();
        for (i, p) in v.iter().enumerate() {
            if i < 333 {
                a.push_ref(p)
            } else {
                b.push_ref(p)
            }
        }
        a.append(b);
        for k in (0..1000).step_by(13).chain([999, 64, 63, 128]) {
            assert_eq!(a.get(k).as_ref(), Some(&v[k]), "{k}");
        }
        assert_eq!(a.iter().collect::<Vec<_>>(), v);
        assert_eq!(a.iter().nth(500).as_ref(), Some(&v[500]));
        // Ranges between marks.
        let mut src = ProblemList::new();
        let mut marks = Vec::new();
        for chunk in v.chunks(100) {
            let s = src.mark();
            chunk.iter().for_each(|p| src.push_ref(p));
            marks.push(s..src.mark());
        }
        let mut back = ProblemList::new();
        for r in marks.into_iter().rev() {
            back.append_range(&src, r);
        }
        let want: Vec<Problem> = v.chunks(100).rev().flatten().cloned().collect();
        assert_eq!(back.iter().collect::<Vec<_>>(), want);
        assert_eq!(back.get(250).as_ref(), Some(&want[250]));
    }

    #[test]
    fn retain_and_sort_by_pass_keep_order() {
        let v = vec![
            Problem::new(Code::InodeLinkCount)
                .ino(Ino(1))
                .num(1)
                .num2(2),
            Problem::new(Code::InodeDtimeSet).ino(Ino(2)),
            Problem::new(Code::SbChecksum),
            Problem::new(Code::InodeDtimeSet).ino(Ino(3)),
            Problem::new(Code::InodeLinkCount)
                .ino(Ino(4))
                .num(1)
                .num2(2),
        ];
        let mut l: ProblemList = v.clone().into();
        assert!(!l.is_sorted_by_pass());
        l.sort_by_pass();
        assert!(l.is_sorted_by_pass());
        let order: Vec<u32> = l.iter().map(|p| p.args().ino.map_or(0, Ino::get)).collect();
        assert_eq!(order, vec![0, 2, 3, 1, 4]);
        let mut picked = Vec::new();
        let keep = [true, false, true, true, true];
        let s: ProblemList = ProblemList::from(v.clone()).select_by_pass(&keep, |k| picked.push(k));
        assert_eq!(picked, vec![2, 3, 0, 4]);
        assert_eq!(s.len(), 4);
        l.retain(|p| p.code == Code::InodeDtimeSet);
        assert_eq!(
            l.iter().collect::<Vec<_>>(),
            vec![v[1].clone(), v[3].clone()]
        );
        assert_eq!(l.get(1).as_ref(), Some(&v[3]));
    }

    #[test]
    fn keys_are_equal_for_equal_problems() {
        let a: ProblemList = sample().into();
        let b: ProblemList = sample().into();
        assert!(a.keys().eq(b.keys()));
        assert_eq!(a.keys().count(), a.len());
        for (k, (at, key)) in a.keys_at().enumerate() {
            assert_eq!(a.key_at(at), Some(key));
            assert_eq!(a.key(k), Some(key));
        }
        let mut c = ProblemList::new();
        b.keys().for_each(|k| c.push_key(k));
        c.push_key(&[0, 1]);
        assert_eq!(c, a);
    }
}

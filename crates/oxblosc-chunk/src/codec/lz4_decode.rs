//! Our own decoder of raw LZ4 blocks (no dictionary; decision 0015).
//!
//! Why: liblz4's `LZ4_decompress_safe` was most of the time of an LZ4 + shuffle decode (69%
//! of the samples on a float32 field), and it copies bytes it has not written for a match at
//! offset 0. One loop decodes a sequence per turn: the block's rules are checked exactly,
//! copies go in whole pieces (writing past their end) only where a `room` check shows space
//! on both sides, else exactly. Short literal runs and matches take one fixed-size copy (small
//! pieces: a later load that overlaps a recent wider store waits for it); long ones go in
//! 32-byte pieces; matches with a period below 8 are written from a register.
//!
//! It accepts what liblz4's safe decoder accepts (minus offset 0) and gives the same bytes:
//! the tests and the `lz4` fuzz target compare it with the plain [`decode_reference`] and
//! with liblz4. It never reads outside `src`, never writes outside the `cap` output bytes,
//! and reads only output bytes it has written, so the output may be uninitialised memory.
#![allow(unsafe_code)]

/// Matches are at least this long.
const MIN_MATCH: usize = 4;
/// The last 5 bytes of a block are literals.
const LAST_LITERALS: usize = 5;
/// The last match starts at least 12 bytes before the end of the block.
const MF_LIMIT: usize = 12;
/// Copies go in pieces of this many bytes when there is room for one more past their end.
const WIDE: usize = 32;

/// A decoding error: what went wrong and at which input byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub at: usize,
    pub what: &'static str,
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "malformed lz4 block ({} at input byte {})", self.what, self.at)
    }
}

/// Copy 16 bytes; the ranges may overlap only as a forward copy with a distance >= 16.
#[inline(always)]
unsafe fn copy16(dst: *mut u8, src: *const u8) {
    std::ptr::copy_nonoverlapping(src, dst, 16);
}

/// Copy 8 bytes; the ranges may overlap only as a forward copy with a distance >= 8.
#[inline(always)]
unsafe fn copy8(dst: *mut u8, src: *const u8) {
    std::ptr::copy_nonoverlapping(src, dst, 8);
}

/// Copy 32 bytes from a distinct buffer (or from at least 32 bytes back).
#[inline(always)]
unsafe fn copy32(dst: *mut u8, src: *const u8) {
    std::ptr::copy_nonoverlapping(src, dst, 32);
}

/// Copy `len` bytes in 32-byte pieces, the first two whatever `len` (writes up to 63 bytes
/// past the end, at least 64 in all). `src` is another buffer or at least 64 bytes back.
#[inline(always)]
unsafe fn copy_pieces(dst: *mut u8, src: *const u8, len: usize) {
    copy32(dst, src);
    copy32(dst.add(WIDE), src.add(WIDE));
    let mut k = 2 * WIDE;
    while k < len {
        copy32(dst.add(k), src.add(k));
        k += WIDE;
    }
}

/// Read an LZ4 length continuation (bytes added until one is below 255) from `*p`: None
/// when a byte would be read at or past `limit`, or one is read that ends past it. The
/// limits are the block's (and liblz4's): a literal length must end 15 bytes before the
/// input does (its literals follow), a match length 4 bytes before (a token and the last
/// literals follow). `limit <= end of input`, so nothing past the input is read.
#[inline(always)]
unsafe fn read_more(p: &mut *const u8, limit: *const u8) -> Option<usize> {
    let mut n = 0usize;
    loop {
        if *p >= limit {
            return None;
        }
        let b = **p;
        *p = p.add(1);
        // Saturating: a length this large fails every room check below (also on 32-bit).
        n = n.saturating_add(usize::from(b));
        if b != 255 {
            return Some(n);
        }
    }
}

/// Whether `n` bytes and `extra` more fit in `left` (no overflow for any `n`).
#[inline(always)]
fn room(n: usize, extra: usize, left: usize) -> bool {
    n <= left && left - n >= extra
}

/// Decode the LZ4 block `src` into `dst`; returns the decoded length (at most `dst.len()`).
pub fn decode_into(src: &[u8], dst: &mut [u8]) -> Result<usize, DecodeError> {
    decode_into_with_dict(src, dst, &[])
}

/// [`decode_into`] for a block compressed as if `dict` came right before it (chunk
/// dictionaries, format spec 1.11): matches may reach back into `dict`.
pub fn decode_into_with_dict(src: &[u8], dst: &mut [u8], dict: &[u8]) -> Result<usize, DecodeError> {
    // SAFETY: `dst` is `dst.len()` writable bytes, borrowed apart from `src` and `dict`.
    unsafe { decode(src, dst.as_mut_ptr(), dst.len(), dict) }
}

/// Decode the LZ4 block `src` into the `cap` bytes at `dst`; returns the decoded length.
///
/// # Safety
/// `dst` must be valid for writes of `cap` bytes and must not overlap `src`. Bytes of `dst`
/// are read only after this call wrote them.
pub(crate) unsafe fn decode(src: &[u8], dst: *mut u8, cap: usize, dict: &[u8]) -> Result<usize, DecodeError> {
    #[cfg(target_arch = "x86_64")]
    if crate::filter::avx2_allowed() {
        // SAFETY: the CPU has AVX2 (checked by `avx2_allowed`); the caller's contract holds.
        return decode_avx2(src, dst, cap, dict);
    }
    decode_body(src, dst, cap, dict)
}

/// The same loop compiled with AVX2 (32-byte copies are one load and one store).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn decode_avx2(src: &[u8], dst: *mut u8, cap: usize, dict: &[u8]) -> Result<usize, DecodeError> {
    decode_body(src, dst, cap, dict)
}

#[inline(always)]
unsafe fn decode_body(src: &[u8], dst: *mut u8, cap: usize, dict: &[u8]) -> Result<usize, DecodeError> {
    let start = src.as_ptr();
    let iend = start.add(src.len());
    let oend = dst.add(cap);
    let mut ip = start;
    let mut op = dst;
    // Where literal / match length bytes must end (see `read_more`); the input's start when
    // it is too short for any.
    let lit_limit = if src.len() > 15 { iend.sub(15) } else { start };
    let match_limit = if src.len() > 4 { iend.sub(4) } else { start };
    let err = |p: *const u8, what| Err(DecodeError { at: p as usize - start as usize, what });
    if cap == 0 {
        // An empty block is exactly one zero token (liblz4's rule too).
        return if src == [0] { Ok(0) } else { err(start, "an empty block must be one zero byte") };
    }

    // One sequence per turn. The block's rules are checked exactly. Copies go in whole
    // pieces (writing past their end) whenever there is room on both sides, else exactly.
    // Short literal runs and matches (no length bytes) take one fixed copy each, so the
    // common sequences cost no branch on their length.
    // Inside these bounds a token with a short literal run needs no other check: at least
    // 33 input bytes and 64 output bytes are left (0 when the block is smaller).
    let ifast = (iend as usize).saturating_sub(WIDE + 1).max(start as usize);
    let ofast = (oend as usize).saturating_sub(2 * WIDE).max(dst as usize);
    loop {
        if ip >= iend {
            return err(ip, "block ends without its last literals");
        }
        let token = *ip;
        let mut p = ip.add(1);
        let mut lit = usize::from(token >> 4);
        let out_left = oend as usize - op as usize;
        if lit < 15 && (ip as usize) < ifast && (op as usize) < ofast {
            // At most 14 literals with more than 32 input and 64 output bytes left: not the
            // last sequence, and 16 bytes can be copied.
            copy16(op, p);
        } else {
            if lit == 15 {
                match read_more(&mut p, lit_limit) {
                    Some(n) => lit = lit.saturating_add(n),
                    None => return err(p, "literal length runs into the last 15 bytes"),
                }
            }
            let in_left = iend as usize - p as usize;
            if room(lit, 2 * WIDE, in_left) && room(lit, 2 * WIDE, out_left) {
                copy_pieces(op, p, lit);
            } else {
                if lit > in_left {
                    return err(p, "literals run past the end of the input");
                }
                if lit > out_left {
                    return err(p, "literals run past the end of the output");
                }
                // The last sequence: its literals end the input (and so the block).
                if !room(lit, MF_LIMIT, out_left) || !room(lit, 2 + 1 + LAST_LITERALS, in_left) {
                    if lit != in_left {
                        return err(p, "last literals do not end the block");
                    }
                    std::ptr::copy_nonoverlapping(p, op, lit);
                    return Ok(op as usize + lit - dst as usize);
                }
                std::ptr::copy_nonoverlapping(p, op, lit);
            }
        }
        op = op.add(lit);
        p = p.add(lit);
        let offset = usize::from(u16::from_le_bytes([*p, *p.add(1)]));
        p = p.add(2);
        // 1 <= offset <= bytes written, in one comparison (offset 0 wraps to the largest).
        let written = op as usize - dst as usize;
        if offset.wrapping_sub(1) >= written {
            // Only a match reaching back into the dictionary is left (exact copy; it happens
            // only in a block's first 64 KiB).
            if offset == 0 || offset - written > dict.len() {
                return err(p.sub(2), "match offset outside the decoded data");
            }
            let mut len = usize::from(token & 15) + MIN_MATCH;
            if len == 15 + MIN_MATCH {
                match read_more(&mut p, match_limit) {
                    Some(n) => len = len.saturating_add(n),
                    None => return err(p, "match length runs into the last 4 bytes"),
                }
            }
            if !room(len, LAST_LITERALS, oend as usize - op as usize) {
                return err(p, "match runs into the last literals");
            }
            let back = offset - written;
            for k in 0..len {
                *op.add(k) = if k < back { dict[dict.len() - back + k] } else { *dst.add(k - back) };
            }
            op = op.add(len);
            ip = p;
            continue;
        }
        let m = op.sub(offset);
        let out_left = oend as usize - op as usize;
        let mut len = usize::from(token & 15) + MIN_MATCH;
        if len < 15 + MIN_MATCH && offset >= 8 && out_left >= WIDE {
            // At most 18 bytes from at least 8 back: 8-byte pieces, each reading only bytes
            // written before it.
            copy8(op, m);
            copy8(op.add(8), m.add(8));
            if len > 16 {
                copy8(op.add(16), m.add(16));
            }
        } else {
            if len == 15 + MIN_MATCH {
                match read_more(&mut p, match_limit) {
                    Some(n) => len = len.saturating_add(n),
                    None => return err(p, "match length runs into the last 4 bytes"),
                }
            }
            if !room(len, LAST_LITERALS, out_left) {
                return err(p, "match runs into the last literals");
            }
            if offset >= 2 * WIDE && room(len, 2 * WIDE, out_left) {
                // The second piece does not read what the first just wrote (a load that
                // overlaps a pending store waits for it).
                copy_pieces(op, m, len);
            } else if room(len, WIDE, out_left) {
                copy_match_wide(op, offset, len, op as usize - dst as usize);
            } else {
                // Near the end of the output: whole pieces up to 32 bytes before the match's
                // end (they write at most to its end), the rest exactly.
                let wide = len.saturating_sub(WIDE);
                if wide > 0 {
                    copy_match_wide(op, offset, wide, op as usize - dst as usize);
                }
                copy_match_exact(op.add(wide), offset, len - wide);
            }
        }
        op = op.add(len);
        ip = p;
    }
}

/// Copy a match in whole pieces: writes up to 31 bytes past `op + len`.
#[inline(always)]
unsafe fn copy_match_wide(op: *mut u8, offset: usize, len: usize, written: usize) {
    let m = op.sub(offset);
    if offset >= WIDE {
        copy32(op, m);
        let mut k = WIDE;
        while k < len {
            copy32(op.add(k), m.add(k));
            k += WIDE;
        }
    } else if offset >= 16 {
        let mut k = 0;
        while k < len {
            copy16(op.add(k), m.add(k));
            k += 16;
        }
    } else if offset > 8 {
        let mut k = 0;
        while k < len {
            copy8(op.add(k), m.add(k));
            k += 8;
        }
    } else {
        copy_short_offset(op, offset, len, written);
    }
}

/// Copy a match of `len` bytes from `offset` back, writing nothing past `op + len`.
#[inline]
unsafe fn copy_match_exact(op: *mut u8, offset: usize, len: usize) {
    let m = op.sub(offset);
    if offset >= len {
        std::ptr::copy_nonoverlapping(m, op, len);
    } else {
        for k in 0..len {
            *op.add(k) = *m.add(k);
        }
    }
}

/// A match with an offset of 1-8 bytes, written with up to 31 bytes of over-write from a
/// register (no load waits on the bytes just stored): periods 1, 2, 4 and 8 as an 8-byte
/// pattern in 32-byte pieces; the others repeated into 16 bytes once, stored every whole
/// number of periods. `written` = bytes before `op`.
#[inline(always)]
unsafe fn copy_short_offset(op: *mut u8, offset: usize, len: usize, written: usize) {
    let m = op.sub(offset);
    let pattern = match offset {
        1 => Some(u64::from(*m) * 0x0101_0101_0101_0101),
        2 => Some(u64::from(m.cast::<u16>().read_unaligned()) * 0x0001_0001_0001_0001),
        4 => Some(u64::from(m.cast::<u32>().read_unaligned()) * 0x0000_0001_0000_0001),
        8 => Some(m.cast::<u64>().read_unaligned()),
        _ => None,
    };
    if let Some(pattern) = pattern {
        fill(op, len, pattern);
        return;
    }
    let unit: u64 = if written >= 8 {
        // The 8 bytes before `op` end with the period; shift it down.
        op.sub(8).cast::<u64>().read_unaligned().to_le() >> (8 * (8 - offset))
    } else {
        let mut u = 0u64;
        for i in 0..offset {
            u |= u64::from(*m.add(i)) << (8 * i);
        }
        u
    };
    let mut r = u128::from(unit);
    // Double the repeated part until it covers 16 bytes (offsets 5, 6, 7: twice; 3: three
    // times; a shift of 128 bits or more is never made).
    r |= r << (8 * offset);
    r |= r << (16 * offset);
    if offset < 4 {
        r |= r << (32 * offset);
    }
    // 16 - 16 % offset, from a table (a division costs more than the copy).
    const STEP: [usize; 8] = [16, 16, 16, 15, 16, 15, 12, 14];
    let step = STEP[offset];
    let mut k = 0;
    loop {
        store16(op.add(k), r);
        k += step;
        if k >= len {
            return;
        }
    }
}

/// Repeat the 8 bytes `pattern` (as stored in memory) over `op..op + len`, in 32-byte pieces.
#[inline(always)]
unsafe fn fill(op: *mut u8, len: usize, pattern: u64) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_set1_epi64x, _mm_storeu_si128};
        let v = _mm_set1_epi64x(i64::from_ne_bytes(pattern.to_ne_bytes()));
        // One store for short matches (fewer bytes written ahead), then 32 bytes per step.
        _mm_storeu_si128(op.cast(), v);
        let mut k = 16;
        while k < len {
            _mm_storeu_si128(op.add(k).cast(), v);
            _mm_storeu_si128(op.add(k + 16).cast(), v);
            k += 32;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let mut k = 0;
        while k < len {
            op.add(k).cast::<u64>().write_unaligned(pattern);
            k += 8;
        }
    }
}

/// Store the 16 bytes of `v` (little-endian) at `p` in one store.
#[inline(always)]
unsafe fn store16(p: *mut u8, v: u128) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_set_epi64x, _mm_storeu_si128};
        let (lo, hi) = (v as u64, (v >> 64) as u64);
        _mm_storeu_si128(p.cast(), _mm_set_epi64x(hi as i64, lo as i64));
    }
    #[cfg(not(target_arch = "x86_64"))]
    p.cast::<u128>().write_unaligned(v.to_le());
}

/// The same block rules, stated plainly and slowly (one byte at a time, no unsafe, its own
/// numbers): the oracle of the differential tests and the fuzz target. liblz4 accepts everything this
/// accepts, with the same bytes; it also accepts some blocks this rejects: a match at offset
/// 0 (it copies bytes it has not written), and, when 64 or more output bytes are left, a
/// literal run that is not the last one ending within 8 bytes of the input's end.
#[doc(hidden)]
pub fn decode_reference(src: &[u8], cap: usize) -> Result<Vec<u8>, &'static str> {
    decode_reference_with_dict(src, cap, &[])
}

/// [`decode_reference`] with a dictionary before the output (matches may reach into it).
#[doc(hidden)]
pub fn decode_reference_with_dict(src: &[u8], cap: usize, dict: &[u8]) -> Result<Vec<u8>, &'static str> {
    if cap == 0 {
        return if src == [0] { Ok(Vec::new()) } else { Err("empty block") };
    }
    let end = src.len();
    let mut out = Vec::new();
    let mut i = 0;
    // A length continuation; every byte of it must lie before `limit`.
    let more = |i: &mut usize, limit: usize| -> Result<usize, &'static str> {
        let mut n = 0usize;
        loop {
            if *i >= limit {
                return Err("length bytes");
            }
            let b = src[*i];
            *i += 1;
            n = n.saturating_add(usize::from(b));
            if b != 255 {
                return Ok(n);
            }
        }
    };
    loop {
        let token = *src.get(i).ok_or("no token")?;
        i += 1;
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            lit = lit.saturating_add(more(&mut i, end.saturating_sub(15))?);
        }
        if lit > end - i || lit > cap - out.len() {
            return Err("literals");
        }
        let last = out.len() + lit + 12 > cap || i + lit + 8 > end;
        out.extend_from_slice(&src[i..i + lit]);
        i += lit;
        if last {
            return if i == end { Ok(out) } else { Err("last literals") };
        }
        let offset = usize::from(src[i]) | usize::from(src[i + 1]) << 8;
        i += 2;
        let mut len = usize::from(token & 15);
        if len == 15 {
            len = len.saturating_add(more(&mut i, end.saturating_sub(4))?);
        }
        len = len.saturating_add(4);
        if offset == 0 || offset > out.len() + dict.len() {
            return Err("offset");
        }
        if len.saturating_add(5) > cap - out.len() {
            return Err("match end");
        }
        for _ in 0..len {
            // Position of the byte to copy in dict ++ out.
            let at = dict.len() + out.len() - offset;
            let b = if at < dict.len() { dict[at] } else { out[at - dict.len()] };
            out.push(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::lz4;
    use super::*;

    fn ours(src: &[u8], cap: usize, wide: bool) -> Result<Vec<u8>, DecodeError> {
        let mut out = vec![0xA5u8; cap];
        // SAFETY: `out` has `cap` writable bytes and does not overlap `src`.
        let n = unsafe {
            if wide {
                decode(src, out.as_mut_ptr(), cap, &[])
            } else {
                decode_body(src, out.as_mut_ptr(), cap, &[])
            }
        }?;
        out.truncate(n);
        Ok(out)
    }

    fn reference(src: &[u8], cap: usize) -> Option<Vec<u8>> {
        let mut out = vec![0u8; cap];
        let n = lz4::decompress_liblz4(src, &mut out).ok()?;
        out.truncate(n);
        Some(out)
    }

    /// Both variants (AVX2 if present, baseline) agree with liblz4: the same bytes when it
    /// accepts, an error when it rejects.
    /// Ours equals the plain reference exactly (bytes or error); whatever the reference
    /// accepts, liblz4 accepts with the same bytes.
    fn agree(src: &[u8], cap: usize) {
        let want = decode_reference(src, cap).ok();
        for wide in [true, false] {
            let got = ours(src, cap, wide);
            assert_eq!(got.as_ref().ok(), want.as_ref(), "stream of {} bytes into {cap}: {got:?}", src.len());
        }
        if let Some(w) = want {
            assert_eq!(reference(src, cap).as_ref(), Some(&w), "liblz4 differs on {} bytes into {cap}", src.len());
        }
    }

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    /// Data with every kind of sequence: long and short literal runs, matches at offsets
    /// 1-70 and far, long runs of one byte, patterns of period 1-15.
    fn mixed(rng: &mut Rng, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        while v.len() < len {
            match rng.below(5) {
                0 => (0..rng.below(200)).for_each(|_| v.push(rng.next() as u8)),
                1 => {
                    let b = rng.next() as u8;
                    let n = rng.below(300);
                    v.extend(std::iter::repeat_n(b, n));
                }
                2 if !v.is_empty() => {
                    let back = 1 + rng.below(v.len().min(70));
                    for _ in 0..rng.below(120) {
                        v.push(v[v.len() - back]);
                    }
                }
                3 => {
                    let period = 1 + rng.below(15);
                    let pat: Vec<u8> = (0..period).map(|_| rng.next() as u8).collect();
                    v.extend(pat.iter().cycle().take(rng.below(400)));
                }
                _ if v.len() > 1000 => {
                    let from = rng.below(v.len() - 500);
                    let n = rng.below(500);
                    v.extend_from_within(from..from + n);
                }
                _ => v.push(0),
            }
        }
        v.truncate(len);
        v
    }

    fn encode(data: &[u8], how: usize) -> Vec<u8> {
        let mut enc = vec![0u8; data.len() + data.len() / 200 + 64];
        let n = match how % 4 {
            0 => lz4::compress(1, data, &mut enc),
            1 => lz4::compress(9, data, &mut enc),
            2 => lz4::compress_hc(4, data, &mut enc),
            _ => lz4::compress_hc(9, data, &mut enc),
        };
        assert!(n > 0 || data.is_empty());
        enc.truncate(n);
        enc
    }

    #[test]
    fn valid_streams_decode_like_liblz4_at_every_length_and_capacity() {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
        for len in (0..200).chain([255, 256, 1000, 4096, 65_536, 262_144, 300_001]) {
            let data = mixed(&mut rng, len);
            for how in 0..4 {
                let enc = encode(&data, how);
                if enc.is_empty() {
                    continue;
                }
                assert_eq!(ours(&enc, data.len(), true).unwrap(), data, "len {len} how {how}");
                assert_eq!(ours(&enc, data.len(), false).unwrap(), data, "len {len} how {how}");
                for cap in [data.len() + 1, data.len() + 100, data.len().saturating_sub(1), data.len() / 2] {
                    agree(&enc, cap);
                }
            }
        }
    }

    #[test]
    fn damaged_streams_are_rejected_like_liblz4() {
        let mut rng = Rng(42);
        let mut cases = 0;
        for round in 0..3000 {
            let len = 1 + rng.below(5000);
            let data = mixed(&mut rng, len);
            let mut enc = encode(&data, round);
            match round % 4 {
                0 => {
                    // Flip up to 4 bytes.
                    for _ in 0..1 + rng.below(4) {
                        let i = rng.below(enc.len());
                        enc[i] ^= 1 << rng.below(8);
                    }
                }
                1 => enc.truncate(rng.below(enc.len())),
                2 => {
                    let i = rng.below(enc.len());
                    enc[i] = rng.next() as u8;
                }
                _ => enc = (0..rng.below(300)).map(|_| rng.next() as u8).collect(),
            }
            agree(&enc, data.len());
            agree(&enc, data.len() + rng.below(64));
            cases += 2;
        }
        assert_eq!(cases, 6000);
    }

    /// Append one sequence: `lit` literal bytes, then (if any) a match of `m.1` bytes at
    /// offset `m.0`.
    fn sequence(out: &mut Vec<u8>, lit: &[u8], m: Option<(u16, usize)>) {
        let ml = m.map_or(0, |(_, l)| l - MIN_MATCH);
        out.push(((lit.len().min(15) as u8) << 4) | ml.min(15) as u8);
        if lit.len() >= 15 {
            let mut r = lit.len() - 15;
            while r >= 255 {
                out.push(255);
                r -= 255;
            }
            out.push(r as u8);
        }
        out.extend_from_slice(lit);
        if let Some((off, _)) = m {
            out.extend_from_slice(&off.to_le_bytes());
            if ml >= 15 {
                let mut r = ml - 15;
                while r >= 255 {
                    out.push(255);
                    r -= 255;
                }
                out.push(r as u8);
            }
        }
    }

    /// Hand-made streams around the block's end rules (last literals, where the last match
    /// may end, literals that must end the block), for every capacity around the exact one.
    #[test]
    fn end_of_block_rules_match_liblz4() {
        let text: Vec<u8> = (0..200u8).map(|i| i.wrapping_mul(37)).collect();
        for lit1 in [1usize, 2, 7, 15, 16, 40, 70] {
            for ml in [4usize, 5, 11, 12, 18, 19, 30, 33, 60, 70, 274, 600, 1300, 2000] {
                for off in [1u16, 2, 3, 7, 8, 16, 31, 32, 33] {
                    if usize::from(off) > lit1 {
                        continue;
                    }
                    for lit2 in [0usize, 1, 2, 3, 4, 5, 6, 11, 12, 13, 20, 40, 80] {
                        let mut s = Vec::new();
                        sequence(&mut s, &text[..lit1], Some((off, ml)));
                        sequence(&mut s, &text[100..100 + lit2], None);
                        let n = lit1 + ml + lit2;
                        for cap in (n.saturating_sub(2)..n + 3).chain([n + 5, n + 40]) {
                            agree(&s, cap);
                        }
                        // A second match after the first (the last sequence is then a match).
                        let mut t = s.clone();
                        t.pop();
                        sequence(&mut t, &text[..0], Some((off, ml)));
                        agree(&t, n + ml);
                    }
                }
            }
        }
    }

    /// With a dictionary: ours (both builds) equals the reference exactly, and liblz4's
    /// `usingDict` wherever the reference accepts.
    fn agree_dict(src: &[u8], cap: usize, dict: &[u8]) {
        let want = decode_reference_with_dict(src, cap, dict).ok();
        for wide in [true, false] {
            let mut out = vec![0xA5u8; cap];
            // SAFETY: `out` has `cap` writable bytes apart from `src` and `dict`.
            let got = unsafe {
                if wide {
                    decode(src, out.as_mut_ptr(), cap, dict)
                } else {
                    decode_body(src, out.as_mut_ptr(), cap, dict)
                }
            };
            let got = got.ok().map(|n| out[..n].to_vec());
            assert_eq!(got, want, "stream of {} bytes into {cap}, dict {}", src.len(), dict.len());
        }
        if let Some(w) = want {
            let mut lib = vec![0u8; cap];
            let n = lz4::decompress_liblz4_with_dict(src, &mut lib, dict).expect("liblz4 accepts it too");
            assert_eq!(&lib[..n], &w[..], "liblz4 differs with a dictionary");
        }
    }

    #[test]
    fn dictionary_blocks_decode_like_liblz4() {
        let mut rng = Rng(7);
        for round in 0..400 {
            let dict_len = 1 + rng.below(3000);
            let dict = mixed(&mut rng, dict_len);
            // Data that repeats parts of the dictionary, so matches reach into it.
            let mut data = Vec::new();
            let len = 1 + rng.below(6000);
            while data.len() < len {
                if rng.below(2) == 0 {
                    let from = rng.below(dict.len());
                    let n = rng.below(dict.len() - from + 1);
                    data.extend_from_slice(&dict[from..from + n]);
                } else {
                    let n = rng.below(50);
                    data.extend((0..n).map(|_| rng.next() as u8));
                }
            }
            data.truncate(len);
            let mut enc = vec![0u8; data.len() + data.len() / 200 + 64];
            let n = if round % 2 == 0 {
                lz4::compress_with_dict(1 + (round % 9) as u8, &data, &mut enc, &dict)
            } else {
                lz4::compress_hc_with_dict(1 + (round % 12) as u8, &data, &mut enc, &dict)
            };
            assert!(n > 0);
            enc.truncate(n);
            let mut back = vec![0u8; data.len()];
            assert_eq!(decode_into_with_dict(&enc, &mut back, &dict).unwrap(), data.len());
            assert_eq!(back, data, "round {round}");
            agree_dict(&enc, data.len(), &dict);
            agree_dict(&enc, data.len() + 9, &dict);
            // The same stream without its dictionary, and damaged.
            agree_dict(&enc, data.len(), &dict[dict.len() / 2..]);
            let i = rng.below(enc.len());
            enc[i] ^= 1 << rng.below(8);
            agree_dict(&enc, data.len(), &dict);
        }
        // A match reaching exactly to the dictionary's first byte, and one byte further.
        let dict = b"0123456789";
        let ok = [0x10, b'a', 11, 0, 0x50, 1, 2, 3, 4, 5];
        assert_eq!(ours_dict(&ok, 100, dict).unwrap(), b"a0123\x01\x02\x03\x04\x05");
        let far = [0x10, b'a', 12, 0, 0x50, 1, 2, 3, 4, 5];
        assert!(ours_dict(&far, 100, dict).is_err());
        let zero = [0x10, b'a', 0, 0, 0x50, 1, 2, 3, 4, 5];
        assert!(ours_dict(&zero, 100, dict).is_err());
    }

    fn ours_dict(src: &[u8], cap: usize, dict: &[u8]) -> Result<Vec<u8>, DecodeError> {
        let mut out = vec![0u8; cap];
        let n = decode_into_with_dict(src, &mut out, dict)?;
        out.truncate(n);
        Ok(out)
    }

    #[test]
    fn offsets_into_nothing_and_empty_outputs_are_errors() {
        // Token 0x10: one literal, then a match at offset 2 with only 1 byte decoded.
        let bad = [0x10, b'a', 2, 0, 0x50, 1, 2, 3, 4, 5];
        assert!(ours(&bad, 100, true).is_err());
        // Offset 0 would copy the bytes being written (liblz4 1.10 accepts it and returns
        // whatever the output held before: uninitialised memory for a new buffer).
        let zero = [0x10, b'a', 0, 0, 0x50, 1, 2, 3, 4, 5];
        let e = ours(&zero, 100, true).unwrap_err();
        assert_eq!((e.at, e.what), (2, "match offset outside the decoded data"));
        // The empty block is one token with no literals.
        assert_eq!(ours(&[0], 0, true).unwrap(), Vec::<u8>::new());
        assert!(ours(&[], 0, true).is_err());
        // Found by fuzzing: a lone token with match bits is not an empty block.
        assert!(ours(&[0x09], 0, true).is_err());
        assert!(ours(&[0, 0], 0, true).is_err());
        let e = ours(&[0xF0, 255, 255], 10, true).unwrap_err();
        assert_eq!(e.to_string(), "malformed lz4 block (literal length runs into the last 15 bytes at input byte 1)");
    }
}

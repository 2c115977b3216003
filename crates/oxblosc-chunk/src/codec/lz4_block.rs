//! A raw LZ4 block decoder in safe Rust (no dictionary), for initialised outputs.
//!
//! Why: on byte-shuffled float fields the LZ4 streams are almost all matches of a few dozen
//! bytes, a third of them with offsets below 8 (runs and short patterns). liblz4's safe
//! decoder takes its slow, byte-exact path for those; this one copies in 16/32-byte steps
//! ("wild copies", only where the output has room for the overshoot, which later sequences
//! overwrite) and repeats short patterns from a 32-byte register. Every access is bounds
//! checked; the measurements behind using it are in docs/decisions/0003-own-lz4-decoder.md.
//!
//! It accepts every block liblz4's `LZ4_decompress_safe` accepts, with the same output. It is
//! a little more lenient at the end of a block (liblz4 also insists that the last 5 bytes
//! are literals and the last match starts 12 bytes before the end; C encoders always
//! respect that and decoding does not need it).

/// Decode one raw LZ4 block into exactly `dst.len()` bytes; `Err` names the input offset.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    let n = dst.len();
    let (mut ip, mut op) = (0usize, 0usize);
    loop {
        let token = *src.get(ip).ok_or_else(|| bad("missing token", ip))?;
        ip += 1;
        // Literals: 16-byte steps while both sides have room for the overshoot.
        let mut lit = usize::from(token >> 4);
        if lit == 15 {
            lit += extension(src, &mut ip)?;
        }
        if ip + lit + 32 <= src.len() && op + lit + 32 <= n {
            let v: [u8; 16] = src[ip..ip + 16].try_into().unwrap_or([0; 16]);
            dst[op..op + 16].copy_from_slice(&v);
            let mut k = 16;
            while k < lit {
                let v: [u8; 32] = src[ip + k..ip + k + 32].try_into().unwrap_or([0; 32]);
                dst[op + k..op + k + 32].copy_from_slice(&v);
                k += 32;
            }
        } else {
            let (Some(s), Some(d)) = (src.get(ip..ip + lit), dst.get_mut(op..op + lit)) else {
                return Err(bad("literals run past the input or the output", ip));
            };
            d.copy_from_slice(s);
        }
        ip += lit;
        op += lit;
        if ip == src.len() {
            // The last sequence has literals only.
            break;
        }
        // Match: 2-byte offset, then the length.
        let Some(o) = src.get(ip..ip + 2) else { return Err(bad("truncated match offset", ip)) };
        let off = usize::from(u16::from_le_bytes([o[0], o[1]]));
        if off == 0 || off > op {
            return Err(bad("match offset outside the decoded output", ip));
        }
        ip += 2;
        let mut ml = usize::from(token & 15);
        if ml == 15 {
            ml += extension(src, &mut ip)?;
        }
        ml += 4;
        if ml > n - op {
            return Err(bad("match runs past the output", ip));
        }
        copy_match(dst, op, off, ml);
        op += ml;
    }
    if op != n {
        return Err(format!("lz4 block decoded to {op} bytes, expected {n}"));
    }
    Ok(())
}

fn bad(what: &str, at: usize) -> String {
    format!("malformed lz4 block ({what}, input byte {at})")
}

/// A length extension: bytes of 255 continue it, the first other byte ends it.
#[inline(always)]
fn extension(src: &[u8], ip: &mut usize) -> Result<usize, String> {
    let mut total = 0usize;
    loop {
        let b = *src.get(*ip).ok_or_else(|| bad("truncated length", *ip))?;
        *ip += 1;
        total += usize::from(b);
        if b != 255 {
            return Ok(total);
        }
    }
}

/// Copy `ml` bytes from `op - off` to `op` (`1 <= off <= op`, `op + ml <= dst.len()`), the
/// LZ4 way: overlapping sources repeat the last `off` bytes.
#[inline(always)]
fn copy_match(dst: &mut [u8], op: usize, off: usize, ml: usize) {
    let room = dst.len() - op;
    let from = op - off;
    let mut k = 0;
    // Whole 16-byte steps while the overshoot stays inside the output (later sequences
    // overwrite it); the rest byte by byte (a final match ends a few bytes before the end).
    if off >= 32 {
        // Each step reads only bytes written before it.
        while k < ml && k + 32 <= room {
            let v: [u8; 32] = dst[from + k..from + k + 32].try_into().unwrap_or([0; 32]);
            dst[op + k..op + k + 32].copy_from_slice(&v);
            k += 32;
        }
    } else if off >= 16 {
        while k < ml && k + 16 <= room {
            let v: [u8; 16] = dst[from + k..from + k + 16].try_into().unwrap_or([0; 16]);
            dst[op + k..op + k + 16].copy_from_slice(&v);
            k += 16;
        }
    } else if from + 16 <= op + room {
        // Stores of the repeated pattern advance by a multiple of `off`: the phase stays right.
        let (pat, step) = pattern(dst, from, off);
        while k < ml && k + step + 16 <= room {
            dst[op + k..op + k + 16].copy_from_slice(&pat);
            dst[op + k + step..op + k + step + 16].copy_from_slice(&pat);
            k += 2 * step;
        }
    }
    for x in op + k.min(ml)..op + ml {
        dst[x] = dst[x - off];
    }
}

/// The `off` (< 16) bytes at `from` repeated into 16 (the bytes after them, read but masked
/// off, may be stale), and the largest multiple of `off` that fits in 16. `from + 16 <= len`.
#[inline(always)]
fn pattern(dst: &[u8], from: usize, off: usize) -> ([u8; 16], usize) {
    let w = u128::from_le_bytes(dst[from..from + 16].try_into().unwrap_or([0; 16]));
    let mut pat = w & ((1u128 << (8 * off)) - 1);
    let mut have = off;
    while have < 16 {
        pat |= pat << (8 * have);
        have *= 2;
    }
    (pat.to_le_bytes(), usize::from(STEP[off]))
}

/// `STEP[off]`: the largest multiple of `off` (1..16) that fits in 16 bytes.
const STEP: [u8; 16] = [16, 16, 16, 15, 16, 15, 12, 14, 16, 9, 10, 11, 12, 13, 14, 15];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::filter::testutil::Rng;

    /// Ours and liblz4 agree on every block liblz4 writes, of many shapes.
    #[test]
    fn matches_liblz4_on_encoded_data() {
        let mut rng = Rng::new(11);
        let mut inputs: Vec<Vec<u8>> = vec![vec![], vec![7], vec![0; 100_000], rng.bytes(70_000)];
        // Short periods (offsets 1..40), runs, smooth shuffled-float-like bytes, text-like.
        for period in 1..40usize {
            let pat = rng.bytes(period);
            let len = 1000 + 97 * period;
            inputs.push((0..len).map(|i| pat[i % period] ^ u8::from(i % 500 == 0)).collect());
        }
        inputs.push((0..200_000u32).map(|i| ((i / 37) as u8).wrapping_mul(3)).collect());
        inputs.push((0..150_000u32).flat_map(|i| ((f64::from(i) * 0.001).sin() as f32).to_le_bytes()).collect());
        let words = [&b"lorem "[..], b"ipsum ", b"dolor ", b"sit ", b"amet, ", b"x"];
        inputs.push((0..40_000).flat_map(|i| words[(i * 7 + i / 3) % words.len()].to_vec()).collect());
        for (case, data) in inputs.iter().enumerate() {
            for clevel in [1u8, 5, 9] {
                for hc in [false, true] {
                    let mut c = vec![0u8; data.len() + data.len() / 255 + 16];
                    let m = if hc {
                        crate::codec::lz4::compress_hc(clevel, data, &mut c)
                    } else {
                        crate::codec::lz4::compress(clevel, data, &mut c)
                    };
                    let c = &c[..m];
                    // Ours into an exact buffer and into one with garbage around it.
                    let mut got = vec![0xA5u8; data.len()];
                    decompress(c, &mut got).unwrap_or_else(|e| panic!("case {case}: {e}"));
                    assert!(got == *data, "case {case} clevel {clevel} hc {hc}");
                    let mut buf = vec![0x5Au8; data.len() + 7];
                    decompress(c, &mut buf[3..3 + data.len()]).unwrap();
                    assert!(
                        buf[3..3 + data.len()] == data[..]
                            && buf[..3] == [0x5A; 3]
                            && buf[3 + data.len()..] == [0x5A; 4]
                    );
                    // Wrong output sizes are refused.
                    if !data.is_empty() {
                        assert!(decompress(c, &mut vec![0u8; data.len() - 1]).is_err());
                    }
                    assert!(decompress(c, &mut vec![0u8; data.len() + 1]).is_err());
                }
            }
        }
    }

    /// Hand-made blocks: overlapping matches of every short offset near the output's end
    /// (the exact-copy paths), and malformed blocks refused with an error.
    #[test]
    fn hand_made_blocks() {
        for off in 1..=40usize {
            for ml in [4usize, 5, 15, 16, 17, 19, 31, 33, 64, 300] {
                // `off` literals, one match of `ml` at offset `off`, then 0..40 trailing literals.
                for tail in [0usize, 1, 5, 12, 40] {
                    let lits: Vec<u8> = (0..off as u8).map(|b| b.wrapping_mul(31).wrapping_add(1)).collect();
                    let mut block = Vec::new();
                    push_seq(&mut block, &lits, Some((off, ml)));
                    let tail_lits = vec![9u8; tail];
                    push_seq(&mut block, &tail_lits, None);
                    let mut want = lits.clone();
                    for _ in 0..ml {
                        want.push(want[want.len() - off]);
                    }
                    want.extend_from_slice(&tail_lits);
                    let mut got = vec![0u8; want.len()];
                    decompress(&block, &mut got).unwrap();
                    assert_eq!(got, want, "off {off} ml {ml} tail {tail}");
                    // liblz4 refuses some of these end shapes; what it accepts, it decodes alike.
                    let mut theirs = vec![0u8; want.len()];
                    if crate::codec::lz4::decompress(&block, &mut theirs).is_ok() {
                        assert_eq!(theirs, want);
                    }
                }
            }
        }
        let mut out = [0u8; 64];
        for (block, why) in [
            (&[][..], "missing token"),
            (&[0x10][..], "literals run past"),
            (&[0x00, 0x01][..], "truncated match offset"),
            (&[0x10, 1, 0x00, 0x00][..], "match offset outside"),
            (&[0x10, 1, 0x02, 0x00][..], "match offset outside"),
            (&[0x1F, 1, 0x01, 0x00][..], "truncated length"),
            (&[0x1F, 1, 0x01, 0x00, 200][..], "match runs past"),
        ] {
            let e = decompress(block, &mut out).unwrap_err();
            assert!(e.contains(why), "{block:?}: {e}");
        }
    }

    fn push_seq(out: &mut Vec<u8>, lits: &[u8], m: Option<(usize, usize)>) {
        let l = lits.len();
        let ml = m.map_or(0, |(_, ml)| ml - 4);
        out.push(((l.min(15) as u8) << 4) | ml.min(15) as u8);
        if l >= 15 {
            push_len(out, l - 15);
        }
        out.extend_from_slice(lits);
        if let Some((off, _)) = m {
            out.extend_from_slice(&(off as u16).to_le_bytes());
            if ml >= 15 {
                push_len(out, ml - 15);
            }
        }
    }

    fn push_len(out: &mut Vec<u8>, mut v: usize) {
        while v >= 255 {
            out.push(255);
            v -= 255;
        }
        out.push(v as u8);
    }
}

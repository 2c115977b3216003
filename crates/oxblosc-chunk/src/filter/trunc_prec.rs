//! TRUNC_PREC, filter id 4 (format spec 2.6): lossy float mantissa truncation, forward only.
//!
//! typesize 4 (f32, M = 23) or 8 (f64, M = 52). filters_meta is a signed byte `p`: `p > 0`
//! keeps `p` mantissa bits, `p < 0` zeroes `-p` bits; `p = 0`, `|p| > M` or nothing left to
//! keep is an error. No rounding. Decoding is the identity (the pipeline skips it).

use crate::error::{Error, Result};

fn err(reason: String) -> Error {
    Error::Filter { name: "TRUNC_PREC", reason }
}

/// Number of low bits to zero, or the parameter error.
fn zeroed_bits(meta: i8, typesize: usize) -> Result<u32> {
    let m: i32 = match typesize {
        4 => 23,
        8 => 52,
        _ => return Err(err(format!("typesize {typesize} is not 4 or 8"))),
    };
    let p = meta as i32;
    if p.abs() > m {
        return Err(err(format!("precision {p} exceeds the {m} mantissa bits")));
    }
    let z = if p >= 0 { m - p } else { -p };
    if z >= m {
        return Err(err(format!("precision {p} would zero all {m} mantissa bits")));
    }
    Ok(z as u32)
}

/// Check the parameters without touching data.
pub fn validate(meta: i8, typesize: usize) -> Result<()> {
    zeroed_bits(meta, typesize).map(|_| ())
}

/// Truncate every whole element of `src` into `dst`; trailing bytes are copied.
pub fn forward(meta: i8, typesize: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    assert_eq!(src.len(), dst.len(), "trunc_prec: length mismatch");
    let z = zeroed_bits(meta, typesize)?;
    let body = src.len() / typesize * typesize;
    if typesize == 4 {
        let mask = !((1u32 << z) - 1);
        for (s, d) in src[..body].chunks_exact(4).zip(dst[..body].chunks_exact_mut(4)) {
            let v = u32::from_le_bytes(s.try_into().unwrap()) & mask;
            d.copy_from_slice(&v.to_le_bytes());
        }
    } else {
        let mask = !((1u64 << z) - 1);
        for (s, d) in src[..body].chunks_exact(8).zip(dst[..body].chunks_exact_mut(8)) {
            let v = u64::from_le_bytes(s.try_into().unwrap()) & mask;
            d.copy_from_slice(&v.to_le_bytes());
        }
    }
    dst[body..].copy_from_slice(&src[body..]);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        assert!(validate(10, 4).is_ok());
        assert!(validate(23, 4).is_ok());
        assert!(validate(-22, 4).is_ok());
        assert!(validate(0, 4).is_err());
        assert!(validate(24, 4).is_err());
        assert!(validate(-23, 4).is_err());
        assert!(validate(10, 2).is_err());
        assert!(validate(52, 8).is_ok());
        assert!(validate(53, 8).is_err());
        assert!(validate(-51, 8).is_ok());
        assert!(matches!(validate(0, 8), Err(Error::Filter { name: "TRUNC_PREC", .. })));
    }

    #[test]
    fn truncates() {
        let vals = [1.0f32 + f32::EPSILON, 1.234_567_9, -0.002_5];
        let src: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).chain([9u8, 8]).collect();
        let mut dst = vec![0u8; src.len()];
        forward(10, 4, &src, &mut dst).unwrap();
        for (i, v) in vals.iter().enumerate() {
            let got = u32::from_le_bytes(dst[4 * i..4 * i + 4].try_into().unwrap());
            assert_eq!(got, v.to_bits() & !((1 << 13) - 1));
        }
        assert_eq!(&dst[12..], &[9, 8]);
        let src: Vec<u8> = [1.5f64, -0.1].iter().flat_map(|v| v.to_le_bytes()).collect();
        let mut dst = vec![0u8; 16];
        forward(-20, 8, &src, &mut dst).unwrap();
        let got = u64::from_le_bytes(dst[8..].try_into().unwrap());
        assert_eq!(got, (-0.1f64).to_bits() & !((1 << 20) - 1));
    }
}

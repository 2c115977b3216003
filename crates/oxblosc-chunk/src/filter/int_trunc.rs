//! INT_TRUNC, filter id 36 (format spec 2.8): lossy integer truncation, forward only.
//!
//! typesize 1, 2, 4 or 8 (little-endian integers). filters_meta is a signed byte `p`:
//! `p >= 0` keeps the top `p` bits (zeroes `8T - p`), `p < 0` zeroes `-p` low bits. Zeroing
//! every bit (or more) is an error. Decoding is the identity.

use crate::error::{Error, Result};

fn err(reason: String) -> Error {
    Error::Filter { name: "INT_TRUNC", reason }
}

fn zeroed_bits(meta: i8, typesize: usize) -> Result<u32> {
    if !matches!(typesize, 1 | 2 | 4 | 8) {
        return Err(err(format!("typesize {typesize} is not 1, 2, 4 or 8")));
    }
    let bits = 8 * typesize as i32;
    let p = meta as i32;
    if p.abs() > bits {
        return Err(err(format!("precision {p} exceeds the {bits} bits of the type")));
    }
    let z = if p >= 0 { bits - p } else { -p };
    if z >= bits {
        return Err(err(format!("precision {p} would zero all {bits} bits")));
    }
    Ok(z as u32)
}

/// Check the parameters without touching data.
pub fn validate(meta: i8, typesize: usize) -> Result<()> {
    zeroed_bits(meta, typesize).map(|_| ())
}

/// Truncate every whole element of `src` into `dst`; trailing bytes are copied.
pub fn forward(meta: i8, typesize: usize, src: &[u8], dst: &mut [u8]) -> Result<()> {
    assert_eq!(src.len(), dst.len(), "int_trunc: length mismatch");
    let z = zeroed_bits(meta, typesize)?;
    let mask = !((1u64 << z) - 1);
    let body = src.len() / typesize * typesize;
    let (sb, st) = src.split_at(body);
    let (db, dt) = dst.split_at_mut(body);
    match typesize {
        1 => {
            for (d, s) in db.iter_mut().zip(sb) {
                *d = s & mask as u8;
            }
        }
        2 => {
            for (s, d) in sb.chunks_exact(2).zip(db.chunks_exact_mut(2)) {
                let v = u16::from_le_bytes(s.try_into().unwrap()) & mask as u16;
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
        4 => {
            for (s, d) in sb.chunks_exact(4).zip(db.chunks_exact_mut(4)) {
                let v = u32::from_le_bytes(s.try_into().unwrap()) & mask as u32;
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
        _ => {
            for (s, d) in sb.chunks_exact(8).zip(db.chunks_exact_mut(8)) {
                let v = u64::from_le_bytes(s.try_into().unwrap()) & mask;
                d.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
    dt.copy_from_slice(st);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn params() {
        assert!(validate(1, 1).is_ok());
        assert!(validate(8, 1).is_ok());
        assert!(validate(-7, 1).is_ok());
        assert!(validate(0, 1).is_err());
        assert!(validate(-8, 1).is_err());
        assert!(validate(9, 1).is_err());
        assert!(validate(5, 3).is_err());
        assert!(validate(64, 8).is_ok());
        assert!(validate(-63, 8).is_ok());
        assert!(validate(-64, 8).is_err());
    }

    #[test]
    fn truncates() {
        let src: Vec<u8> = [0x1234_5678u32, 0xFFFF_FFFF].iter().flat_map(|v| v.to_le_bytes()).chain([7]).collect();
        let mut dst = vec![0u8; src.len()];
        forward(-8, 4, &src, &mut dst).unwrap();
        assert_eq!(&dst[..4], &0x1234_5600u32.to_le_bytes());
        assert_eq!(&dst[4..8], &0xFFFF_FF00u32.to_le_bytes());
        assert_eq!(dst[8], 7);
        forward(4, 4, &src, &mut dst).unwrap();
        assert_eq!(&dst[..4], &0x1000_0000u32.to_le_bytes());
        let src = [0xABu8, 0xCD, 0xEF];
        let mut dst = [0u8; 3];
        forward(3, 2, &src, &mut dst).unwrap();
        assert_eq!(dst, [0x00, 0xC0, 0xEF]);
        let mut d1 = [0u8; 2];
        forward(-1, 1, &[0xFF, 0x01], &mut d1).unwrap();
        assert_eq!(d1, [0xFE, 0x00]);
    }
}

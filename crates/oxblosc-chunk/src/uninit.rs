//! Output buffers whose bytes need not be initialised (a fresh Python `bytes`, a `Vec`'s
//! spare capacity): the one place in the decoder that turns them into `&mut [u8]`.
//!
//! Zero-filling a whole fresh output before decoding costs a full extra pass over memory
//! that is not yet in cache (and takes its page faults there). Zeroing each block right
//! before it is decoded makes that pass hit the cache the decoder writes next.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

/// A byte of decoder output: `u8` (already initialised) or `MaybeUninit<u8>`.
pub(crate) trait OutByte: Sized + Send + Sync {
    /// `s` as initialised bytes, zero-filling it first when its contents are unknown.
    fn init(s: &mut [Self]) -> &mut [u8];
}

impl OutByte for u8 {
    fn init(s: &mut [u8]) -> &mut [u8] {
        s
    }
}

impl OutByte for MaybeUninit<u8> {
    fn init(s: &mut [MaybeUninit<u8>]) -> &mut [u8] {
        let (ptr, len) = (s.as_mut_ptr(), s.len());
        // SAFETY: `ptr` is valid for writes of `len` elements (it comes from the slice), and
        // after write_bytes every element is initialised, so viewing them as `u8` is sound;
        // the returned slice borrows `s` exclusively for its lifetime.
        unsafe {
            std::ptr::write_bytes(ptr, 0, len);
            std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len)
        }
    }
}

/// Zero `s` and view it as initialised bytes: for callers that fill a fresh buffer piece by
/// piece and want each piece zeroed right before it is written (while it is in cache).
pub fn zero_init(s: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    OutByte::init(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninit_bytes_are_zeroed() {
        let mut v: Vec<MaybeUninit<u8>> = Vec::with_capacity(100);
        v.resize_with(100, MaybeUninit::uninit);
        let s = OutByte::init(&mut v[..]);
        assert!(s.iter().all(|&b| b == 0));
        s[3] = 7;
        let mut w = [1u8, 2, 3];
        assert_eq!(OutByte::init(&mut w[..]), &[1, 2, 3]);
    }
}

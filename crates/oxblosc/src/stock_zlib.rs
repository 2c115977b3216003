//! Stock zlib (Mark Adler's library, built from source by `libz-sys`) for the zlib streams of
//! Blosc1 chunks.
//!
//! numcodecs' `Blosc` (c-blosc 1.x) deflates with the stock library. The engine's zlib is
//! zlib-rs, whose streams are byte-identical to C-Blosc2's zlib-ng but not to stock zlib's
//! (equally valid, different matches). [`install`] hands the engine this deflate for Blosc1
//! chunks only, so a Zarr v2 zlib chunk is the very bytes numcodecs writes, while Blosc2
//! chunks keep their C-Blosc2 identity. Decoding is unchanged (any inflate reads both).
//!
//! One deflate state per thread and level, reset per stream (as the engine's zlib does):
//! `compress2` builds and frees ~270 KiB of state per call. A reset state at the same level,
//! window and memory level writes the same bytes as a fresh one.

#![allow(unsafe_code)]

use std::cell::RefCell;
use std::os::raw::c_int;

use crate::chunk::codec::zlib::{zalloc, zfree};
use libz_sys as z;

/// Make the engine use stock zlib for Blosc1 zlib streams (idempotent).
pub fn install() {
    crate::chunk::codec::zlib::set_blosc1_deflate(deflate);
}

/// A deflate state with its level; boxed because zlib keeps a pointer back to the stream.
struct Stream {
    level: u8,
    z: Box<z::z_stream>,
}

impl Stream {
    fn new(level: u8) -> Option<Stream> {
        let mut s = Box::new(z::z_stream {
            next_in: std::ptr::null_mut(),
            avail_in: 0,
            total_in: 0,
            next_out: std::ptr::null_mut(),
            avail_out: 0,
            total_out: 0,
            msg: std::ptr::null_mut(),
            state: std::ptr::null_mut(),
            zalloc,
            zfree,
            opaque: std::ptr::null_mut(),
            data_type: 0,
            adler: 0,
            reserved: 0,
        });
        let size = std::mem::size_of::<z::z_stream>() as c_int;
        // SAFETY: `s` is a valid, boxed (never moved) stream with allocation callbacks;
        // the version string is the library's own, NUL-terminated.
        let r = unsafe { z::deflateInit_(&mut *s, c_int::from(level), z::zlibVersion(), size) };
        (r == z::Z_OK).then_some(Stream { level, z: s })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: the stream was initialised by `deflateInit_` and is ended once.
        unsafe { z::deflateEnd(&mut *self.z) };
    }
}

thread_local! {
    static STATE: RefCell<Option<Stream>> = const { RefCell::new(None) };
}

/// Deflate `src` into `dst` as one zlib (RFC 1950) stream at `clevel`, what `compress2`
/// writes; 0 when it does not fit `dst` (the caller stores the block raw) or on any error.
pub fn deflate(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    let (Ok(avail_in), Ok(avail_out)) = (u32::try_from(src.len()), u32::try_from(dst.len())) else {
        return 0;
    };
    STATE.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else { return 0 };
        let reuse = matches!(slot.as_ref(), Some(s) if s.level == clevel);
        if !reuse {
            *slot = None;
            *slot = Stream::new(clevel);
        }
        let Some(s) = slot.as_mut() else { return 0 };
        let zs = &mut *s.z;
        // SAFETY: `zs` is an initialised deflate stream; `next_in`/`next_out` point into
        // `src`/`dst`, which outlive the call, with their lengths as the available counts
        // (zlib only reads through `next_in`, though its type is `*mut`).
        unsafe {
            if reuse && z::deflateReset(zs) != z::Z_OK {
                *slot = None;
                return 0;
            }
            zs.next_in = src.as_ptr().cast_mut();
            zs.avail_in = avail_in;
            zs.next_out = dst.as_mut_ptr();
            zs.avail_out = avail_out;
            let r = z::deflate(zs, z::Z_FINISH);
            let n = zs.total_out as usize;
            // No pointers into the caller's buffers stay behind.
            (zs.next_in, zs.next_out) = (std::ptr::null_mut(), std::ptr::null_mut());
            if r == z::Z_STREAM_END {
                n
            } else {
                0 // output full (or an error): the state is reset before its next use
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(n: usize) -> Vec<u8> {
        (0..n as u32).flat_map(|i| ((i / 7) ^ (i % 13)).to_le_bytes()).collect()
    }

    /// Streams decode to the input at every level, states are reused across levels and
    /// calls, and a too-small output gives 0 then leaves the next call correct.
    #[test]
    fn streams_round_trip_and_full_outputs_give_zero() {
        let src = data(40_000);
        for level in [1u8, 5, 9, 5, 5, 1] {
            let mut dst = vec![0u8; src.len() + 1000];
            let n = deflate(level, &src, &mut dst);
            assert!(n > 0 && n < src.len());
            let mut back = vec![0u8; src.len()];
            crate::chunk::codec::zlib::decompress(&dst[..n], &mut back).unwrap();
            assert_eq!(back, src);
            assert_eq!(&dst[..2], &[0x78, [0x01, 0x5e, 0x9c, 0xda][usize::from(level.min(9) / 3).min(3)]][..]);
        }
        assert_eq!(deflate(5, &src, &mut [0u8; 100]), 0);
        let mut dst = vec![0u8; src.len() + 1000];
        let a = deflate(5, &src, &mut dst);
        let mut fresh = vec![0u8; src.len() + 1000];
        let b = std::thread::spawn(move || {
            let n = deflate(5, &data(40_000), &mut fresh);
            fresh.truncate(n);
            fresh
        })
        .join()
        .unwrap();
        assert_eq!(&dst[..a], &b[..], "a reused state writes what a fresh one does");
    }
}

//! LZ4 and LZ4HC (compcodes 1 and 2, chunk format code 1): raw LZ4 blocks, no framing.
//!
//! FFI to the reference liblz4 1.10 (bundled by `lz4-sys`, the same version C-Blosc2 3.3
//! bundles, so payloads are byte-identical). Acceleration = 10 - clevel; HC level = clevel
//! (format spec 3.3). State buffers are kept per thread so no call allocates.
#![allow(unsafe_code)]

// Links the static liblz4 that lz4-sys builds (we declare the symbols we need below).
use crate::uninit::Out;
use lz4_sys as _;
use std::cell::RefCell;
use std::os::raw::{c_char, c_int, c_void};

// Symbols of liblz4 that lz4-sys links but does not declare.
extern "C" {
    fn LZ4_sizeofState() -> c_int;
    fn LZ4_compress_fast_extState(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_sizeofStateHC() -> c_int;
    fn LZ4_compress_HC_extStateHC(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        level: c_int,
    ) -> c_int;
    fn LZ4_decompress_safe(src: *const c_char, dst: *mut c_char, csize: c_int, cap: c_int) -> c_int;
    fn LZ4_decompress_safe_usingDict(
        src: *const c_char,
        dst: *mut c_char,
        csize: c_int,
        cap: c_int,
        dict: *const c_char,
        dict_size: c_int,
    ) -> c_int;
    fn LZ4_initStream(buffer: *mut c_void, size: usize) -> *mut c_void;
    fn LZ4_loadDict(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_compress_fast_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    fn LZ4_initStreamHC(buffer: *mut c_void, size: usize) -> *mut c_void;
    fn LZ4_setCompressionLevel(stream: *mut c_void, level: c_int);
    fn LZ4_loadDictHC(stream: *mut c_void, dict: *const c_char, dict_size: c_int) -> c_int;
    fn LZ4_compress_HC_continue(
        stream: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
    ) -> c_int;
}

/// An 8-byte aligned scratch area for liblz4 state structures.
struct State(Vec<u64>);

impl State {
    fn with_bytes(n: usize) -> Self {
        State(vec![0u64; n.div_ceil(8)])
    }
    fn ptr(&mut self) -> *mut c_void {
        self.0.as_mut_ptr().cast()
    }
    fn bytes(&self) -> usize {
        self.0.len() * 8
    }
}

thread_local! {
    // SAFETY: the size functions only return constants.
    static FAST: RefCell<State> = RefCell::new(State::with_bytes(unsafe { LZ4_sizeofState() } as usize));
    static HC: RefCell<State> = RefCell::new(State::with_bytes(unsafe { LZ4_sizeofStateHC() } as usize));
}

fn to_int(n: usize) -> Option<c_int> {
    c_int::try_from(n).ok()
}

fn accel(clevel: u8) -> c_int {
    10 - c_int::from(clevel.clamp(1, 9))
}

/// Compress with LZ4 at acceleration `10 - clevel`.
pub fn compress(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    let (Some(n), Some(cap)) = (to_int(src.len()), to_int(dst.len())) else { return 0 };
    FAST.with(|s| {
        let mut s = s.borrow_mut();
        // SAFETY: pointers and lengths come from live slices; the state has LZ4_sizeofState bytes
        // and 8-byte alignment; liblz4 writes at most `cap` bytes to dst.
        let r = unsafe {
            LZ4_compress_fast_extState(s.ptr(), src.as_ptr().cast(), dst.as_mut_ptr().cast(), n, cap, accel(clevel))
        };
        r.max(0) as usize
    })
}

/// Compress with LZ4HC at level `clevel`.
pub fn compress_hc(clevel: u8, src: &[u8], dst: &mut [u8]) -> usize {
    let (Some(n), Some(cap)) = (to_int(src.len()), to_int(dst.len())) else { return 0 };
    HC.with(|s| {
        let mut s = s.borrow_mut();
        // SAFETY: as in `compress`; the state has LZ4_sizeofStateHC bytes.
        let r = unsafe {
            LZ4_compress_HC_extStateHC(
                s.ptr(),
                src.as_ptr().cast(),
                dst.as_mut_ptr().cast(),
                n,
                cap,
                c_int::from(clevel),
            )
        };
        r.max(0) as usize
    })
}

/// Compress as if `dict` preceded `src` (chunk dictionaries, format spec 1.11).
pub fn compress_with_dict(clevel: u8, src: &[u8], dst: &mut [u8], dict: &[u8]) -> usize {
    let (Some(n), Some(cap), Some(dn)) = (to_int(src.len()), to_int(dst.len()), to_int(dict.len())) else {
        return 0;
    };
    FAST.with(|s| {
        let mut s = s.borrow_mut();
        let bytes = s.bytes();
        // SAFETY: the stream buffer is large and aligned enough (LZ4_sizeofState == stream size);
        // initStream returns NULL otherwise, which we check. The dict outlives the call.
        unsafe {
            let stream = LZ4_initStream(s.ptr(), bytes);
            if stream.is_null() {
                return 0;
            }
            LZ4_loadDict(stream, dict.as_ptr().cast(), dn);
            LZ4_compress_fast_continue(stream, src.as_ptr().cast(), dst.as_mut_ptr().cast(), n, cap, accel(clevel))
                .max(0) as usize
        }
    })
}

/// LZ4HC with a dictionary.
pub fn compress_hc_with_dict(clevel: u8, src: &[u8], dst: &mut [u8], dict: &[u8]) -> usize {
    let (Some(n), Some(cap), Some(dn)) = (to_int(src.len()), to_int(dst.len()), to_int(dict.len())) else {
        return 0;
    };
    HC.with(|s| {
        let mut s = s.borrow_mut();
        let bytes = s.bytes();
        // SAFETY: as in `compress_with_dict` with the HC stream state.
        unsafe {
            let stream = LZ4_initStreamHC(s.ptr(), bytes);
            if stream.is_null() {
                return 0;
            }
            LZ4_setCompressionLevel(stream, c_int::from(clevel));
            LZ4_loadDictHC(stream, dict.as_ptr().cast(), dn);
            LZ4_compress_HC_continue(stream, src.as_ptr().cast(), dst.as_mut_ptr().cast(), n, cap).max(0) as usize
        }
    })
}

fn check(r: c_int, want: usize) -> Result<(), String> {
    if r < 0 {
        Err(format!("malformed lz4 block (error at input byte {})", -r - 1))
    } else if r as usize != want {
        Err(format!("lz4 block decoded to {r} bytes, expected {want}"))
    } else {
        Ok(())
    }
}

/// Decode one raw LZ4 block into exactly `dst.len()` bytes.
pub fn decompress(src: &[u8], dst: &mut [u8]) -> Result<(), String> {
    decompress_out(src, &mut Out::init(dst), None)
}

/// liblz4's own decoder (the reference for ours): the decoded length, or an error.
pub fn decompress_liblz4(src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
    let (Some(n), Some(cap)) = (to_int(src.len()), to_int(dst.len())) else {
        return Err("stream larger than 2 GiB".into());
    };
    // SAFETY: as in `decompress`.
    let r = unsafe { LZ4_decompress_safe(src.as_ptr().cast(), dst.as_mut_ptr().cast(), n, cap) };
    if r < 0 {
        Err(format!("malformed lz4 block (error at input byte {})", -r - 1))
    } else {
        Ok(r as usize)
    }
}

/// Decode one raw LZ4 block (against `dict`, if any) into exactly `dst.len()` bytes of
/// possibly uninitialised output; on `Ok` every byte of `dst` was written. Our own decoder
/// (`lz4_decode`) runs, liblz4's with `OXBLOSC_LZ4_DECODER=liblz4`.
pub(crate) fn decompress_out(src: &[u8], dst: &mut Out, dict: Option<&[u8]>) -> Result<(), String> {
    let want = dst.len();
    if !crate::config::lz4_decoder_is_liblz4() {
        // SAFETY: `slots` gives `want` writable bytes that do not overlap `src` or `dict`
        // (shared borrows); our decoder reads only output bytes it wrote and writes none past
        // `want`.
        let r = unsafe { super::lz4_decode::decode(src, dst.slots().as_mut_ptr().cast(), want, dict.unwrap_or(&[])) };
        return match r {
            Ok(n) if n == want => Ok(()),
            Ok(n) => Err(format!("lz4 block decoded to {n} bytes, expected {want}")),
            Err(e) => Err(e.to_string()),
        };
    }
    let (Some(n), Some(cap), Some(dn)) = (to_int(src.len()), to_int(want), to_int(dict.map_or(0, <[u8]>::len))) else {
        return Err("stream larger than 2 GiB".into());
    };
    // SAFETY: liblz4 only stores decoded (initialised) bytes; it never reads past `n` input
    // bytes nor writes past `cap`, and the safe decoders only read output they wrote. `check`
    // accepts only a result of exactly `want` bytes, so on Ok the whole of `dst` was written.
    let r = unsafe {
        let out = dst.slots().as_mut_ptr().cast::<c_char>();
        match dict {
            Some(d) => LZ4_decompress_safe_usingDict(src.as_ptr().cast(), out, n, cap, d.as_ptr().cast(), dn),
            None => LZ4_decompress_safe(src.as_ptr().cast(), out, n, cap),
        }
    };
    check(r, want)
}

/// Decode a block compressed against `dict`.
pub fn decompress_with_dict(src: &[u8], dst: &mut [u8], dict: &[u8]) -> Result<(), String> {
    decompress_out(src, &mut Out::init(dst), Some(dict))
}

/// liblz4's own decoder with a dictionary (the reference for ours): the decoded length.
pub fn decompress_liblz4_with_dict(src: &[u8], dst: &mut [u8], dict: &[u8]) -> Result<usize, String> {
    let (Some(n), Some(cap), Some(dn)) = (to_int(src.len()), to_int(dst.len()), to_int(dict.len())) else {
        return Err("stream larger than 2 GiB".into());
    };
    // SAFETY: bounds as in `decompress`; the dictionary is only read.
    let r = unsafe {
        LZ4_decompress_safe_usingDict(src.as_ptr().cast(), dst.as_mut_ptr().cast(), n, cap, dict.as_ptr().cast(), dn)
    };
    if r < 0 {
        Err(format!("malformed lz4 block (error at input byte {})", -r - 1))
    } else {
        Ok(r as usize)
    }
}

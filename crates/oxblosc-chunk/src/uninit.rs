//! Output buffers whose bytes need not be initialised (a fresh Python `bytes`, a `Vec`'s
//! spare capacity), and the one type the decoder writes its output through.
//!
//! Zero-filling a fresh output before decoding costs a full extra pass over memory that is
//! not yet in cache. The decoder instead writes into an [`Out`]: a slice of possibly
//! uninitialised bytes into which safe code can only store initialised values, so the same
//! type also wraps a caller's `&mut [u8]` soundly. A writer that reports success has written
//! every byte of its `Out` (codecs check the decoded length; shuffle writes every byte);
//! writers that cannot promise that (plugins, rare filters) get [`Out::zeroed`] instead.
#![allow(unsafe_code)]

use std::mem::MaybeUninit;

/// Decoder output: bytes that are either initialised or unknown, written only with
/// initialised values. The flag remembers whether they were initialised when wrapped.
pub(crate) struct Out<'a>(&'a mut [MaybeUninit<u8>], bool);

impl<'a> Out<'a> {
    /// Wrap initialised bytes (a caller's buffer).
    pub(crate) fn init(s: &'a mut [u8]) -> Self {
        let (ptr, len) = (s.as_mut_ptr(), s.len());
        // SAFETY: `u8` and `MaybeUninit<u8>` have the same layout; `Out` never stores an
        // uninitialised value (every method writes initialised bytes, and `slots` requires
        // its callers to do the same), so `s` stays initialised for the caller.
        Out(unsafe { std::slice::from_raw_parts_mut(ptr.cast::<MaybeUninit<u8>>(), len) }, true)
    }

    /// Wrap bytes whose contents are unknown.
    pub(crate) fn uninit(s: &'a mut [MaybeUninit<u8>]) -> Self {
        Out(s, false)
    }

    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// A shorter-lived `Out` over the same bytes.
    pub(crate) fn reborrow(&mut self) -> Out<'_> {
        Out(self.0, self.1)
    }

    /// Split at `mid` (panics if `mid > len`, like `split_at_mut`).
    pub(crate) fn split_at(self, mid: usize) -> (Out<'a>, Out<'a>) {
        let (a, b) = self.0.split_at_mut(mid);
        (Out(a, self.1), Out(b, self.1))
    }

    /// Bytes `[lo, hi)` (panics when out of range).
    pub(crate) fn slice(&mut self, lo: usize, hi: usize) -> Out<'_> {
        Out(&mut self.0[lo..hi], self.1)
    }

    pub(crate) fn fill(&mut self, v: u8) {
        self.0.fill(MaybeUninit::new(v));
    }

    /// Copy `src` (of the same length) in.
    pub(crate) fn copy_from_slice(&mut self, src: &[u8]) {
        assert_eq!(src.len(), self.0.len(), "Out::copy_from_slice: length mismatch");
        // SAFETY: both regions are `src.len()` bytes long (asserted), `src` is initialised,
        // and a shared and an exclusive borrow cannot overlap.
        unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), self.0.as_mut_ptr().cast::<u8>(), src.len()) }
    }

    /// Store byte `i` (bounds-checked).
    #[inline(always)]
    pub(crate) fn set(&mut self, i: usize, v: u8) {
        self.0[i] = MaybeUninit::new(v);
    }

    /// Raw write access, for FFI decoders and SIMD stores.
    ///
    /// # Safety
    /// The caller stores only initialised bytes (never `MaybeUninit::uninit()`): the slots
    /// may belong to a caller's initialised `&mut [u8]`.
    pub(crate) unsafe fn slots(&mut self) -> &mut [MaybeUninit<u8>] {
        self.0
    }

    /// View the bytes as initialised, zeroing them only when they were not initialised when
    /// wrapped: for built-in writers that write every byte on success but read back what they
    /// wrote (BloscLZ), so a caller's buffer or a scratch buffer is not zeroed for nothing.
    pub(crate) fn initialised(self) -> &'a mut [u8] {
        if !self.1 {
            return self.zeroed();
        }
        let (ptr, len) = (self.0.as_mut_ptr(), self.0.len());
        // SAFETY: the flag is set only by `Out::init`, over initialised bytes, and every way of
        // writing through an `Out` stores initialised values, so they are still initialised;
        // the returned slice borrows them exclusively for its lifetime.
        unsafe { std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len) }
    }

    /// Zero the bytes and view them as initialised: for writers that cannot promise to write
    /// every byte (plugins, filters without an `Out` path). Costs one pass over the bytes.
    pub(crate) fn zeroed(self) -> &'a mut [u8] {
        let (ptr, len) = (self.0.as_mut_ptr(), self.0.len());
        // SAFETY: `ptr` is valid for writes of `len` elements (it comes from the slice), and
        // after write_bytes every element is initialised, so viewing them as `u8` is sound;
        // the returned slice borrows the bytes exclusively for its lifetime.
        unsafe {
            std::ptr::write_bytes(ptr, 0, len);
            std::slice::from_raw_parts_mut(ptr.cast::<u8>(), len)
        }
    }
}

/// A vector of `n` bytes filled by `fill`, which must write every byte of its `Out` before
/// returning `Ok` (the decoder's contract). Skips the zero-fill `vec![0; n]` would cost.
pub(crate) fn filled_vec<E>(n: usize, fill: impl FnOnce(Out<'_>) -> Result<(), E>) -> Result<Vec<u8>, E> {
    let mut v: Vec<u8> = Vec::with_capacity(n);
    fill(Out::uninit(&mut v.spare_capacity_mut()[..n]))?;
    // SAFETY: capacity >= n, and `fill` returned Ok, so it wrote all first `n` bytes.
    unsafe { v.set_len(n) };
    Ok(v)
}

/// Zero `s` and view it as initialised bytes: for callers that fill a fresh buffer piece by
/// piece and want each piece zeroed right before it is written (while it is in cache).
pub fn zero_init(s: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    Out::uninit(s).zeroed()
}

/// Encoder output that becomes initialised from the front: bytes below `init` are
/// initialised (written, or zeroed on the way), the rest may not be. The encoder asks for
/// the prefix it is about to write ([`Prefix::upto`]); only the part never written before is
/// zeroed, right before the encoder overwrites it while it is in cache. A fresh Python
/// `bytes` of the worst-case size can then be compressed into directly, where a zero-filled
/// one would cost a pass over the whole worst case and a staging buffer a second copy.
pub(crate) struct Prefix<'a> {
    buf: &'a mut [MaybeUninit<u8>],
    init: usize,
}

impl<'a> Prefix<'a> {
    /// Wrap initialised bytes (a caller's buffer): nothing is ever zeroed.
    pub(crate) fn init(s: &'a mut [u8]) -> Self {
        let len = s.len();
        // SAFETY: same layout; a `Prefix` only ever stores initialised values (below), so `s`
        // stays initialised for the caller.
        let buf = unsafe { std::slice::from_raw_parts_mut(s.as_mut_ptr().cast::<MaybeUninit<u8>>(), len) };
        Prefix { buf, init: len }
    }

    /// Wrap bytes whose contents are unknown.
    pub(crate) fn uninit(s: &'a mut [MaybeUninit<u8>]) -> Self {
        Prefix { buf: s, init: 0 }
    }

    pub(crate) fn len(&self) -> usize {
        self.buf.len()
    }

    /// Bytes `[0, end)` as initialised bytes, zeroing the ones not yet initialised.
    /// Panics when `end > len`.
    pub(crate) fn upto(&mut self, end: usize) -> &mut [u8] {
        if end > self.init {
            self.buf[self.init..end].fill(MaybeUninit::new(0));
            self.init = end;
        }
        let head = &mut self.buf[..end];
        // SAFETY: every byte below `self.init >= end` is initialised (the invariant), and the
        // slice borrows them exclusively; writes through it store initialised values.
        unsafe { std::slice::from_raw_parts_mut(head.as_mut_ptr().cast::<u8>(), end) }
    }

    /// Copy `src` to `[at, at + src.len())`, zeroing only a gap before `at`, never the bytes
    /// it writes (a raw stream or chunk is then written once). Panics when out of range.
    pub(crate) fn write_at(&mut self, at: usize, src: &[u8]) {
        let end = at + src.len();
        if at > self.init {
            self.upto(at);
        }
        for (d, &b) in self.buf[at..end].iter_mut().zip(src) {
            *d = MaybeUninit::new(b);
        }
        self.init = self.init.max(end);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uninit_bytes_are_zeroed() {
        let mut v: Vec<MaybeUninit<u8>> = Vec::with_capacity(100);
        v.resize_with(100, MaybeUninit::uninit);
        let s = zero_init(&mut v[..]);
        assert!(s.iter().all(|&b| b == 0));
        s[3] = 7;
    }

    #[test]
    fn out_over_initialised_bytes_writes_through() {
        let mut w = [1u8, 2, 3, 4];
        let mut o = Out::init(&mut w);
        o.slice(1, 3).copy_from_slice(&[9, 8]);
        o.set(3, 5);
        let (_, mut b) = o.split_at(2);
        assert_eq!(b.len(), 2);
        b.reborrow().slice(0, 1).fill(6);
        assert_eq!(w, [1, 9, 6, 5]);
    }

    #[test]
    fn prefix_zeroes_only_what_was_never_written() {
        let mut v: Vec<MaybeUninit<u8>> = vec![MaybeUninit::new(0xAA); 16];
        let mut p = Prefix::uninit(&mut v[..]);
        p.upto(4).copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(p.upto(6), &[1, 2, 3, 4, 0, 0]);
        p.write_at(10, &[7, 7]);
        assert_eq!(p.upto(12), &[1, 2, 3, 4, 0, 0, 0, 0, 0, 0, 7, 7]);
        p.write_at(2, &[9]);
        assert_eq!(p.upto(3), &[1, 2, 9]);
        let mut w = [5u8; 4];
        let mut q = Prefix::init(&mut w);
        assert_eq!(q.upto(4), &[5, 5, 5, 5], "an initialised buffer is never zeroed");
        q.write_at(1, &[6]);
        assert_eq!(w, [5, 6, 5, 5]);
    }
}

//! The crate's only `unsafe`: viewing byte buffers as slices of plain numbers and bools.
#![allow(unsafe_code)]

/// Element types without padding or uninitialised bytes (numbers and bool).
pub trait Plain: Copy + 'static {}
/// Plain number types: every bit pattern is a valid value and there is no padding.
pub trait Pod: Plain {}
macro_rules! pod {
    ($($t:ty),*) => { $(impl Plain for $t {} impl Pod for $t {})* };
}
pod!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
impl Plain for bool {}

/// `bytes` as `&[T]`, or `None` when misaligned or not a whole number of items.
pub fn cast_slice<T: Pod>(bytes: &[u8]) -> Option<&[T]> {
    // SAFETY: T is Pod (any bit pattern valid, no padding); align_to only returns a middle
    // part that is correctly aligned and in bounds; we accept it only if it covers everything.
    let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

/// `bytes` as `&mut [T]`, or `None` when misaligned or not a whole number of items.
pub fn cast_slice_mut<T: Pod>(bytes: &mut [u8]) -> Option<&mut [T]> {
    // SAFETY: as in `cast_slice`; writing any T leaves valid bytes behind.
    let (pre, mid, post) = unsafe { bytes.align_to_mut::<T>() };
    (pre.is_empty() && post.is_empty()).then_some(mid)
}

/// Bytes that are all 0 or 1 as `&[bool]`; otherwise the index of the first other byte.
pub fn bools(bytes: &[u8]) -> Result<&[bool], usize> {
    if let Some(i) = bytes.iter().position(|&b| b > 1) {
        return Err(i);
    }
    // SAFETY: every byte is 0 or 1, the valid bit patterns of bool (same size and alignment).
    Ok(unsafe { std::slice::from_raw_parts(bytes.as_ptr() as *const bool, bytes.len()) })
}

/// Zero `bytes` and view them as `&mut [bool]` (all false).
pub fn bools_mut(bytes: &mut [u8]) -> &mut [bool] {
    bytes.fill(0);
    // SAFETY: every byte is 0 (false); bool has size and alignment 1; the view only lets
    // valid bools be written.
    unsafe { std::slice::from_raw_parts_mut(bytes.as_mut_ptr() as *mut bool, bytes.len()) }
}

/// The bytes of a slice of numbers or bools.
pub fn bytes_of<T: Plain>(s: &[T]) -> &[u8] {
    // SAFETY: callers pass only the column element types (numbers, bool): no padding, no
    // uninitialised bytes; the byte view covers exactly the slice's memory.
    unsafe { std::slice::from_raw_parts(s.as_ptr() as *const u8, std::mem::size_of_val(s)) }
}

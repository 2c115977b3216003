//! The C side: the `H5Z_class2_t` structs HDF5 registers, the filter and `set_local`
//! callbacks, the plugin entry points, and run-time binding to the host's HDF5.
//!
//! The plugin is not linked to libhdf5. `set_local` (the only code calling HDF5) finds the API
//! with `dlsym`: in the library bound by `init_filter(path)` (an h5py wheel loads its HDF5
//! with RTLD_LOCAL, so `h5py.h5z.__file__` is passed) or else in the global namespace (a C
//! program linked to libhdf5, loading us from HDF5_PLUGIN_PATH). The filter callback never
//! calls HDF5, so reading works even when nothing is bound. No panic crosses into C, and
//! every buffer handed to HDF5 comes from `malloc`. This is the crate's only `unsafe` module.

use crate::cdvalues::{blosc1_set_local, blosc2_set_local, BLOSC2_ID, BLOSC_ID};
use crate::codec;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr::{null, null_mut};
use std::sync::atomic::{AtomicPtr, Ordering};

type Hid = i64;
type Herr = c_int;
type LocalFn = unsafe extern "C" fn(Hid, Hid, Hid) -> Herr;
type FilterFn = unsafe extern "C" fn(c_uint, usize, *const c_uint, usize, *mut usize, *mut *mut c_void) -> usize;

/// `H5Z_class2_t` (HDF5 1.10 to 2.0).
#[repr(C)]
pub struct H5ZClass2 {
    version: c_int,
    id: c_int,
    encoder_present: c_uint,
    decoder_present: c_uint,
    name: *const c_char,
    can_apply: Option<LocalFn>,
    set_local: Option<LocalFn>,
    filter: Option<FilterFn>,
}

// SAFETY: the classes are immutable statics; their pointers refer to 'static strings and
// functions, so sharing them between threads is sound.
unsafe impl Sync for H5ZClass2 {}

static BLOSC2_CLASS: H5ZClass2 = H5ZClass2 {
    version: 1,
    id: BLOSC2_ID,
    encoder_present: 1,
    decoder_present: 1,
    name: c"blosc2 (oxblosc)".as_ptr(),
    can_apply: None,
    set_local: Some(set_local_blosc2),
    filter: Some(filter_blosc2),
};

static BLOSC_CLASS: H5ZClass2 = H5ZClass2 {
    version: 1,
    id: BLOSC_ID,
    encoder_present: 1,
    decoder_present: 1,
    name: c"blosc (oxblosc)".as_ptr(),
    can_apply: None,
    set_local: Some(set_local_blosc),
    filter: Some(filter_blosc),
};

/// HDF5's definition of a read (decode) call in the filter flags.
const H5Z_FLAG_REVERSE: c_uint = 0x0100;
/// `H5T_ARRAY`: its elements' base type gives the type size the filters record.
const H5T_ARRAY: c_int = 10;
/// More dims than HDF5 allows (32), and more cd_values than any layout we write.
const MAX_DIMS: usize = 32;
const MAX_CD: usize = 64;

/// The library `init_filter` bound (a dlopen handle), null for the global namespace.
static BOUND: AtomicPtr<c_void> = AtomicPtr::new(null_mut());

/// HDF5 plugin entry point: this library provides a filter.
#[no_mangle]
pub extern "C" fn H5PLget_plugin_type() -> c_int {
    0
}

/// HDF5 plugin entry point. HDF5's plugin search takes one filter class per library file, so
/// the package ships this library twice: the copy whose file name contains `blosc1` offers
/// Blosc (32001), any other name Blosc2 (32026). (A copy, not a link: the dynamic loader
/// would hand out the same instance for a link.)
#[no_mangle]
pub extern "C" fn H5PLget_plugin_info() -> *const c_void {
    let blosc1 = catch_unwind(|| own_file_name().is_some_and(|n| n.contains("blosc1"))).unwrap_or(false);
    oxblosc_hdf5_filter_info(if blosc1 { BLOSC_ID } else { BLOSC2_ID })
}

/// The file name this library was loaded from.
fn own_file_name() -> Option<String> {
    // SAFETY: Dl_info is plain data (pointers and addresses); dladdr fills it for an address
    // inside this library, whose file name string lives as long as the library is loaded.
    unsafe {
        let mut info: libc::Dl_info = std::mem::zeroed();
        let here = H5PLget_plugin_type as *const c_void;
        if libc::dladdr(here, &mut info) == 0 || info.dli_fname.is_null() {
            return None;
        }
        let path = CStr::from_ptr(info.dli_fname).to_string_lossy();
        Some(path.rsplit('/').next().unwrap_or_default().to_owned())
    }
}

/// The class of filter `id` (32026 or 32001) for explicit registration (`H5Zregister`,
/// `h5py.h5z.register_filter`); null for other ids.
#[no_mangle]
pub extern "C" fn oxblosc_hdf5_filter_info(id: c_int) -> *const c_void {
    match id {
        BLOSC2_ID => &BLOSC2_CLASS as *const H5ZClass2 as *const c_void,
        BLOSC_ID => &BLOSC_CLASS as *const H5ZClass2 as *const c_void,
        _ => null(),
    }
}

/// Bind the HDF5 API to the library at `path` (or any object depending on it, such as h5py's
/// `h5z` module); a null path goes back to the global namespace. Returns 0, or -1 when the
/// library cannot be loaded (the previous binding is kept).
///
/// # Safety
/// `path` is null or a NUL-terminated string.
#[no_mangle]
pub unsafe extern "C" fn init_filter(path: *const c_char) -> c_int {
    catch_unwind(|| {
        if path.is_null() {
            BOUND.store(null_mut(), Ordering::SeqCst);
            return 0;
        }
        // SAFETY: the caller passes a NUL-terminated path; dlopen only reads it. The handle is
        // kept for the life of the process (never dlclosed), so the symbols stay valid.
        let handle = unsafe { libc::dlopen(path, libc::RTLD_LAZY | libc::RTLD_LOCAL) };
        if handle.is_null() {
            trace(&format!("init_filter: cannot load {:?}", unsafe { CStr::from_ptr(path) }));
            return -1;
        }
        BOUND.store(handle, Ordering::SeqCst);
        0
    })
    .unwrap_or(-1)
}

/// Look up an HDF5 function: in the bound library first, then in the global namespace.
fn symbol(name: &CStr) -> Option<*mut c_void> {
    let bound = BOUND.load(Ordering::SeqCst);
    // SAFETY: `bound` is null or a live dlopen handle (never closed); `name` is NUL-terminated.
    let p = if bound.is_null() { null_mut() } else { unsafe { libc::dlsym(bound, name.as_ptr()) } };
    // SAFETY: as above, RTLD_DEFAULT searches the global namespace.
    let p = if p.is_null() { unsafe { libc::dlsym(libc::RTLD_DEFAULT, name.as_ptr()) } } else { p };
    (!p.is_null()).then_some(p)
}

type GetFilterById2 =
    unsafe extern "C" fn(Hid, c_int, *mut c_uint, *mut usize, *mut c_uint, usize, *mut c_char, *mut c_uint) -> Herr;
type ModifyFilter = unsafe extern "C" fn(Hid, c_int, c_uint, usize, *const c_uint) -> Herr;
type GetChunk = unsafe extern "C" fn(Hid, c_int, *mut u64) -> c_int;
type TypeSize = unsafe extern "C" fn(Hid) -> usize;
type TypeClass = unsafe extern "C" fn(Hid) -> c_int;
type TypeSuper = unsafe extern "C" fn(Hid) -> Hid;
type TypeClose = unsafe extern "C" fn(Hid) -> Herr;

/// The HDF5 functions `set_local` calls, with their C signatures (HDF5 1.10 to 2.0, LP64).
struct Api {
    get_filter_by_id2: GetFilterById2,
    modify_filter: ModifyFilter,
    get_chunk: GetChunk,
    tget_size: TypeSize,
    tget_class: TypeClass,
    tget_super: TypeSuper,
    tclose: TypeClose,
}

macro_rules! resolve {
    ($name:literal, $ty:ty) => {{
        let p = symbol($name).ok_or_else(|| {
            format!(
                "the HDF5 function {:?} is not visible to the plugin: call init_filter(path of the process's HDF5) \
                 first (oxblosc.hdf5.register() does this for h5py)",
                $name
            )
        })?;
        // SAFETY: the symbol is HDF5's function of that name, whose C signature is the field's
        // type (stable from HDF5 1.10 to 2.0).
        unsafe { std::mem::transmute::<*mut c_void, $ty>(p) }
    }};
}

impl Api {
    fn resolve() -> Result<Api, String> {
        Ok(Api {
            get_filter_by_id2: resolve!(c"H5Pget_filter_by_id2", GetFilterById2),
            modify_filter: resolve!(c"H5Pmodify_filter", ModifyFilter),
            get_chunk: resolve!(c"H5Pget_chunk", GetChunk),
            tget_size: resolve!(c"H5Tget_size", TypeSize),
            tget_class: resolve!(c"H5Tget_class", TypeClass),
            tget_super: resolve!(c"H5Tget_super", TypeSuper),
            tclose: resolve!(c"H5Tclose", TypeClose),
        })
    }
}

type SetLocal = fn(&[u32], usize, usize, &[u64]) -> Result<Vec<u32>, String>;

/// Complete the dataset's cd_values for filter `id` from its type and chunk dims.
fn set_local(id: c_int, dcpl: Hid, type_id: Hid, complete: SetLocal) -> Result<(), String> {
    let api = Api::resolve()?;
    let mut flags: c_uint = 0;
    let mut n: usize = MAX_CD;
    let mut cd = [0 as c_uint; MAX_CD];
    let mut name = [0 as c_char; 64];
    let mut config: c_uint = 0;
    // SAFETY: every pointer refers to a live local of the size passed (n values, 64 chars).
    let rc = unsafe {
        (api.get_filter_by_id2)(
            dcpl,
            id,
            &mut flags,
            &mut n,
            cd.as_mut_ptr(),
            name.len(),
            name.as_mut_ptr(),
            &mut config,
        )
    };
    if rc < 0 {
        return Err(format!("filter {id} is not in the dataset creation property list"));
    }
    if n > MAX_CD {
        return Err(format!("{n} cd_values for filter {id}, at most {MAX_CD} expected"));
    }
    // SAFETY: plain calls on the ids HDF5 handed us; a super type we open is closed below.
    let elem_size = unsafe { (api.tget_size)(type_id) };
    if elem_size == 0 {
        return Err("cannot get the dataset's type size".into());
    }
    let mut base = elem_size;
    // SAFETY: as above.
    if unsafe { (api.tget_class)(type_id) } == H5T_ARRAY {
        // SAFETY: as above; `sup` is closed once its size is read.
        unsafe {
            let sup = (api.tget_super)(type_id);
            if sup < 0 {
                return Err("cannot get the base type of the dataset's array type".into());
            }
            base = (api.tget_size)(sup);
            (api.tclose)(sup);
        }
    }
    let mut dims = [0u64; MAX_DIMS];
    // SAFETY: `dims` holds MAX_DIMS values, the most HDF5 writes.
    let rank = unsafe { (api.get_chunk)(dcpl, MAX_DIMS as c_int, dims.as_mut_ptr()) };
    if rank <= 0 {
        return Err(format!("filter {id} needs a chunked dataset"));
    }
    let values = complete(&cd[..n], elem_size, base, &dims[..rank as usize])?;
    // SAFETY: `values` is a live Vec of values.len() elements.
    if unsafe { (api.modify_filter)(dcpl, id, flags, values.len(), values.as_ptr()) } < 0 {
        return Err(format!("cannot store the cd_values of filter {id}"));
    }
    Ok(())
}

fn guarded_set_local(id: c_int, dcpl: Hid, type_id: Hid, complete: SetLocal) -> Herr {
    match catch_unwind(|| set_local(id, dcpl, type_id, complete)) {
        Ok(Ok(())) => 0,
        Ok(Err(e)) => {
            eprintln!("oxblosc HDF5 filter {id}: set_local: {e}");
            -1
        }
        Err(_) => -1,
    }
}

unsafe extern "C" fn set_local_blosc2(dcpl: Hid, type_id: Hid, _space: Hid) -> Herr {
    guarded_set_local(BLOSC2_ID, dcpl, type_id, blosc2_set_local)
}

unsafe extern "C" fn set_local_blosc(dcpl: Hid, type_id: Hid, _space: Hid) -> Herr {
    guarded_set_local(BLOSC_ID, dcpl, type_id, blosc1_set_local)
}

type Transform = fn(&[u32], &[u8]) -> Result<Vec<u8>, String>;

/// A filter's two directions.
struct Codec {
    encode: Transform,
    decode: Transform,
}

const BLOSC2: Codec = Codec { encode: codec::encode_blosc2, decode: codec::decode_blosc2 };
const BLOSC: Codec = Codec { encode: codec::encode_blosc1, decode: codec::decode_blosc1 };

/// Messages only when asked for (as C-Blosc2's BLOSC_TRACE): an optional filter failing to
/// shrink a chunk is normal, and HDF5 reports failures itself.
fn trace(msg: &str) {
    if std::env::var_os("BLOSC_TRACE").is_some() || std::env::var_os("OXBLOSC_HDF5_TRACE").is_some() {
        eprintln!("oxblosc HDF5 filter: {msg}");
    }
}

/// The filter callback body: decode or encode `*buf` (`nbytes` valid bytes) into a new malloc'd
/// buffer that replaces it. Returns the output length, 0 on failure with `*buf` untouched.
///
/// # Safety
/// As HDF5 guarantees: `cd_values` holds `cd_nelmts` values; `*buf` holds `nbytes` readable
/// bytes from a malloc-compatible allocation; `buf` and `buf_size` are writable.
unsafe fn run_filter(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
    codec: &Codec,
) -> usize {
    let result = catch_unwind(AssertUnwindSafe(|| {
        if buf.is_null() || buf_size.is_null() || (*buf).is_null() || nbytes == 0 {
            return Err("no input buffer".to_string());
        }
        // SAFETY: HDF5 passes `cd_nelmts` values at `cd_values` and `nbytes` readable bytes at
        // `*buf` (checked non-null above); both outlive this call and are not written meanwhile.
        let cd: &[u32] = if cd_values.is_null() { &[] } else { std::slice::from_raw_parts(cd_values, cd_nelmts) };
        let input = std::slice::from_raw_parts(*buf as *const u8, nbytes);
        if flags & H5Z_FLAG_REVERSE != 0 {
            (codec.decode)(cd, input)
        } else {
            (codec.encode)(cd, input)
        }
    }));
    let out = match result {
        Ok(Ok(out)) if !out.is_empty() => out,
        Ok(Ok(_)) => return 0,
        Ok(Err(e)) => {
            trace(&e);
            return 0;
        }
        Err(_) => {
            trace("internal error (panic) in the filter");
            return 0;
        }
    };
    // SAFETY: a fresh malloc'd buffer of out.len() bytes receives the output; the old buffer
    // (malloc-compatible, per HDF5's contract) is freed only once the new one is in place, and
    // `buf`/`buf_size` were checked non-null in the closure above.
    let p = libc::malloc(out.len()) as *mut u8;
    if p.is_null() {
        trace(&format!("cannot allocate {} bytes", out.len()));
        return 0;
    }
    std::ptr::copy_nonoverlapping(out.as_ptr(), p, out.len());
    libc::free(*buf);
    *buf = p as *mut c_void;
    *buf_size = out.len();
    out.len()
}

unsafe extern "C" fn filter_blosc2(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    // SAFETY: HDF5 calls this with the guarantees `run_filter` documents.
    unsafe { run_filter(flags, cd_nelmts, cd_values, nbytes, buf_size, buf, &BLOSC2) }
}

unsafe extern "C" fn filter_blosc(
    flags: c_uint,
    cd_nelmts: usize,
    cd_values: *const c_uint,
    nbytes: usize,
    buf_size: *mut usize,
    buf: *mut *mut c_void,
) -> usize {
    // SAFETY: HDF5 calls this with the guarantees `run_filter` documents.
    unsafe { run_filter(flags, cd_nelmts, cd_values, nbytes, buf_size, buf, &BLOSC) }
}

//! oxblosc-hdf5: the Blosc2 (32026) and Blosc (32001) HDF5 filters as a plugin library that
//! any HDF5 application loads (HDF5_PLUGIN_PATH) and that h5py registers explicitly
//! (`oxblosc.hdf5.register()`). The chunks it writes are the bytes PyTables and hdf5plugin
//! write, so either side reads the other's files.
//!
//! [`cdvalues`] is the filters' parameter layout, [`codec`] what one HDF5 chunk holds; both
//! are plain safe Rust. The C ABI lives in `ffi`, the only module allowed `unsafe`.
#![deny(unsafe_code)]

pub mod cdvalues;
pub mod codec;
#[allow(unsafe_code)]
mod ffi;

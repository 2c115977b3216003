//! oxblosc-hdf5: the Blosc2 (32026) and Blosc (32001) HDF5 filters as a plugin library that
//! any HDF5 application loads (HDF5_PLUGIN_PATH) and that h5py registers explicitly
//! (`oxblosc.hdf5.register()`). The chunks it writes are the bytes PyTables and hdf5plugin
//! write, so either side reads the other's files.
//!
//! The chunk codec and the cd_values layout are the facade's `oxblosc::hdf5` (shared with the
//! Python extension's optimized reads); this crate is only the C ABI, in `ffi`, the only module
//! allowed `unsafe`.
#![deny(unsafe_code)]

pub use oxblosc::hdf5::{cdvalues, codec};
#[allow(unsafe_code)]
mod ffi;

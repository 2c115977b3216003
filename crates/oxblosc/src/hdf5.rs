//! HDF5 chunks holding Blosc data, without any HDF5 call: the filters' parameter layout
//! ([`cdvalues`]), what one HDF5 chunk holds both ways ([`codec`], used by the `oxblosc-hdf5`
//! plugin), and reading a part of one stored chunk while decoding only the blocks it needs
//! ([`read`], the "second partition" used by `oxblosc.hdf5.Dataset`).

pub mod cdvalues;
pub mod chunking;
pub mod codec;
pub mod lazy;
pub mod read;

//! oxblosc: the chunk, frame and n-d layers under one name, plus readers of neighbouring
//! formats that users convert from ([`bloscpack`]) and HDF5 chunks written by the Blosc
//! filters ([`hdf5`]).
pub use oxblosc_chunk as chunk;
pub use oxblosc_expr as expr;
pub use oxblosc_frame as frame;
pub use oxblosc_nd as nd;
pub use oxblosc_table as table;

pub mod bloscpack;
pub mod chunk_tuner;
pub mod hdf5;
pub mod lazy;
pub mod lazy_read;
pub mod plugins;
pub mod reduce;
pub mod stock_zlib;
pub mod streamer;
pub mod tune;

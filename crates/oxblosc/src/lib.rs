//! oxblosc: the chunk, frame and n-d layers under one name, plus readers of neighbouring
//! formats that users convert from ([`bloscpack`]).
pub use oxblosc_chunk as chunk;
pub use oxblosc_frame as frame;
pub use oxblosc_nd as nd;

pub mod bloscpack;

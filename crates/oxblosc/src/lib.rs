pub use oxblosc_chunk as chunk;
pub use oxblosc_frame as frame;
pub use oxblosc_nd as nd;

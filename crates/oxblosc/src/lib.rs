pub use oxblosc_chunk as chunk;
pub use oxblosc_frame as frame;

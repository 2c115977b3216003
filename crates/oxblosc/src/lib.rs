pub use oxblosc_chunk as chunk;

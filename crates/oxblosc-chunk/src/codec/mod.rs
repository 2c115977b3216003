//! Codecs: one module per codec, each turning one stream into a payload and back.
pub mod blosclz;

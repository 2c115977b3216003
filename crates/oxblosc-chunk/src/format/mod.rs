//! Byte-level facts of the chunk format: IDs, flag bits, limits and the header.
//!
//! Everything here is little-endian and follows format spec section 1. No I/O, no policy.

pub mod header;

pub use header::{ChunkHeader, SpecialKind};

/// Length of a Blosc1 / minimal header.
pub const MIN_HEADER_LEN: usize = 16;
/// Length of the Blosc2 extended header (also the maximum overhead of a chunk).
pub const EXT_HEADER_LEN: usize = 32;
/// Largest uncompressed chunk (`INT32_MAX - 32`).
pub const MAX_BUFFERSIZE: usize = i32::MAX as usize - EXT_HEADER_LEN;
/// Largest block, and largest typesize (`2^29 - 4096`).
pub const MAX_BLOCKSIZE: usize = 536_866_816;
/// Largest typesize a chunk header can record; larger ones are stored as 1.
pub const MAX_HEADER_TYPESIZE: usize = 255;
/// Below this many bytes Blosc2 stores chunks uncompressed.
pub const MIN_BUFFERSIZE: usize = 32;
/// Below this many bytes Blosc1 stores chunks uncompressed.
pub const BLOSC1_MIN_BUFFERSIZE: usize = 128;
/// Dictionary size bounds (C-Blosc2 `BLOSC2_MAXDICTSIZE` / `BLOSC2_MINUSEFULDICT`).
pub const MAX_DICT_SIZE: usize = 32 * 1024;
pub const MIN_USEFUL_DICT: usize = 256;
/// Number of filter slots in the pipeline.
pub const MAX_FILTERS: usize = 6;

/// Chunk format versions (header byte 0).
pub mod version {
    /// c-blosc 1.x, numcodecs, zarr, HDF5 filter 32001.
    pub const BLOSC1: u8 = 2;
    /// Early C-Blosc2 alphas: the sixth filter slot was not initialised.
    pub const BLOSC2_ALPHA: u8 = 3;
    /// C-Blosc2 2.0 betas.
    pub const BLOSC2_BETA: u8 = 4;
    /// Every stable C-Blosc2 chunk.
    pub const BLOSC2: u8 = 5;
    /// Chunks with variable-length blocks (C-Blosc2 >= 3.0).
    pub const BLOSC2_VLBLOCKS: u8 = 6;
    /// Highest version this build reads.
    pub const MAX_KNOWN: u8 = 6;
}

/// Bits of the `flags` byte (header offset 2).
pub mod flags {
    pub const SHUFFLE: u8 = 0x01;
    pub const MEMCPYED: u8 = 0x02;
    pub const BITSHUFFLE: u8 = 0x04;
    pub const DELTA: u8 = 0x08;
    pub const DONT_SPLIT: u8 = 0x10;
    /// Both shuffle bits set means "extended 32-byte header".
    pub const EXTENDED: u8 = SHUFFLE | BITSHUFFLE;
    pub const CODEC_SHIFT: u8 = 5;
}

/// Bits of `blosc2_flags` (header offset 31).
pub mod blosc2_flags {
    pub const USE_DICT: u8 = 0x01;
    pub const BIG_ENDIAN: u8 = 0x02;
    pub const LAZY: u8 = 0x08;
    pub const SPECIAL_SHIFT: u8 = 4;
    pub const SPECIAL_MASK: u8 = 0x70;
    pub const INSTRUMENTED: u8 = 0x80;
}

/// Bit 0 of `blosc2_flags2` (header offset 30): variable-length blocks.
pub const FLAGS2_VLBLOCKS: u8 = 0x01;

/// Codec ids (compcodes) as used by the API, the extended header and frames.
pub mod codec_id {
    pub const BLOSCLZ: u8 = 0;
    pub const LZ4: u8 = 1;
    pub const LZ4HC: u8 = 2;
    pub const ZLIB: u8 = 4;
    pub const ZSTD: u8 = 5;
    /// First id of the plugin range.
    pub const FIRST_PLUGIN: u8 = 32;
}

/// Codec format codes stored in `flags >> 5`.
pub mod codec_format {
    pub const BLOSCLZ: u8 = 0;
    pub const LZ4: u8 = 1;
    pub const SNAPPY: u8 = 2;
    pub const ZLIB: u8 = 3;
    pub const ZSTD: u8 = 4;
    pub const USER: u8 = 6;
}

/// Map a compcode to the format code written in `flags`.
pub fn compcode_to_format(compcode: u8) -> u8 {
    match compcode {
        codec_id::BLOSCLZ => codec_format::BLOSCLZ,
        codec_id::LZ4 | codec_id::LZ4HC => codec_format::LZ4,
        codec_id::ZLIB => codec_format::ZLIB,
        codec_id::ZSTD => codec_format::ZSTD,
        _ => codec_format::USER,
    }
}

/// Human name of a compcode, for messages and `info`.
pub fn codec_name(compcode: u8) -> &'static str {
    match compcode {
        codec_id::BLOSCLZ => "blosclz",
        codec_id::LZ4 => "lz4",
        codec_id::LZ4HC => "lz4hc",
        3 => "snappy",
        codec_id::ZLIB => "zlib",
        codec_id::ZSTD => "zstd",
        _ => "plugin",
    }
}

//! Reading Bloscpack (`.blp`) files, so their users can convert them (`oxblosc decompress
//! x.blp`, `oxblosc compress x.blp`).
//!
//! Layout (format version 3, little-endian): a 32-byte header (`blpk`, version, options,
//! checksum id, typesize, chunk size, last chunk size, chunk count, spare offset slots), an
//! optional metadata section (32-byte header, `max_meta_size` reserved bytes, digest), an
//! optional offsets section (`nchunks + max_app_chunks` i64), then each chunk as a complete
//! Blosc1 buffer followed by its digest. The chunks are read in sequence (the offsets are
//! not needed for that); digests of type adler32 and crc32 are checked, longer ones (md5, sha)
//! are skipped and reported as unchecked.
//!
//! The bytes are untrusted: every size is checked against the format's limits and, when the
//! length is known, against the bytes left, before anything is allocated; buffers grow only
//! as bytes actually arrive.

use std::fmt;
use std::io::{self, Read};

use oxblosc_chunk::{format::MAX_BUFFERSIZE, DParams};

pub const MAGIC: &[u8; 4] = b"blpk";
pub const FORMAT_VERSION: u8 = 3;
const HEADER_LEN: u64 = 32;
const META_HEADER_LEN: u64 = 32;
/// Largest metadata section accepted (Bloscpack stores a small JSON document).
pub const MAX_META: u32 = 64 << 20;
const BLOSC1_HEADER: usize = 16;

/// A malformed or unsupported file: what is wrong and at which byte.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub what: String,
    pub offset: u64,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Bloscpack: {} at byte {}", self.what, self.offset)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

fn err<T>(what: impl Into<String>, offset: u64) -> Result<T> {
    Err(Error { what: what.into(), offset })
}

/// Checksum names by id and their digest sizes.
const CHECKSUMS: [(&str, usize); 9] = [
    ("none", 0),
    ("adler32", 4),
    ("crc32", 4),
    ("md5", 16),
    ("sha1", 20),
    ("sha224", 28),
    ("sha256", 32),
    ("sha384", 48),
    ("sha512", 64),
];

/// Name of a checksum id (valid ids only: parsing refuses others).
pub fn checksum_name(id: u8) -> &'static str {
    CHECKSUMS.get(id as usize).map_or("unknown", |c| c.0)
}

fn digest_len(id: u8, offset: u64) -> Result<usize> {
    match CHECKSUMS.get(id as usize) {
        Some(c) => Ok(c.1),
        None => err(format!("checksum id {id} is not one of 0..=8"), offset),
    }
}

/// The 32-byte file header.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Header {
    pub has_offsets: bool,
    pub has_metadata: bool,
    pub checksum: u8,
    pub typesize: u8,
    /// Uncompressed bytes per chunk; -1 when unknown.
    pub chunk_size: i32,
    /// Uncompressed bytes of the last chunk; -1 when unknown.
    pub last_chunk: i32,
    /// -1 when unknown (written by a stream).
    pub nchunks: i64,
    pub max_app_chunks: i64,
}

impl Header {
    pub fn parse(b: &[u8]) -> Result<Header> {
        if b.len() < HEADER_LEN as usize {
            return err(format!("file of {} bytes is shorter than the 32-byte header", b.len()), 0);
        }
        if &b[..4] != MAGIC {
            return err("no blpk magic", 0);
        }
        if b[4] != FORMAT_VERSION {
            return err(format!("format version {} is not supported (only {FORMAT_VERSION})", b[4]), 4);
        }
        let options = b[5];
        if options & !0x03 != 0 {
            return err(format!("unknown option bits {options:#04x}"), 5);
        }
        digest_len(b[6], 6)?;
        let i32_at = |o: usize| i32::from_le_bytes(b[o..o + 4].try_into().expect("4 bytes"));
        let i64_at = |o: usize| i64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
        let h = Header {
            has_offsets: options & 1 != 0,
            has_metadata: options & 2 != 0,
            checksum: b[6],
            typesize: b[7],
            chunk_size: i32_at(8),
            last_chunk: i32_at(12),
            nchunks: i64_at(16),
            max_app_chunks: i64_at(24),
        };
        if h.chunk_size < -1 || h.last_chunk < -1 || h.nchunks < -1 || h.max_app_chunks < 0 {
            return err("negative sizes other than -1 (unknown)", 8);
        }
        if h.chunk_size >= 0 && h.last_chunk > h.chunk_size {
            return err(format!("last chunk of {} bytes exceeds the chunk size {}", h.last_chunk, h.chunk_size), 12);
        }
        if h.nchunks.checked_add(h.max_app_chunks).is_none() {
            return err("chunk count plus spare slots overflows", 16);
        }
        Ok(h)
    }

    /// Uncompressed size, when the header knows it.
    pub fn nbytes(&self) -> Option<u64> {
        match (self.nchunks, self.chunk_size, self.last_chunk) {
            (n, c, l) if n >= 1 && c >= 0 && l >= 0 => (n as u64 - 1).checked_mul(c as u64)?.checked_add(l as u64),
            _ => None,
        }
    }
}

/// The metadata section: its settings and the decoded (decompressed) bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Metadata {
    /// Serializer name (`JSON`).
    pub format: String,
    pub checksum: u8,
    /// 0 none, 1 zlib.
    pub codec: u8,
    pub max_size: u32,
    pub data: Vec<u8>,
}

/// A Bloscpack file read in sequence; also a `Read` of its decompressed bytes.
pub struct Reader<R: Read> {
    inner: R,
    header: Header,
    metadata: Option<Metadata>,
    /// Bytes left in the input (bounds every allocation).
    left: u64,
    pos: u64,
    chunks_read: u64,
    bytes_out: u64,
    nthreads: usize,
    pending: Vec<u8>,
    at: usize,
    done: bool,
}

impl<R: Read> Reader<R> {
    /// Read the header, metadata and offsets; `len` = the input's length.
    pub fn new(inner: R, len: u64, nthreads: usize) -> Result<Reader<R>> {
        let mut r = Reader {
            inner,
            header: Header::default(),
            metadata: None,
            left: len,
            pos: 0,
            chunks_read: 0,
            bytes_out: 0,
            nthreads: nthreads.max(1),
            pending: Vec::new(),
            at: 0,
            done: false,
        };
        let head = r.next_bytes(HEADER_LEN, "header")?;
        r.header = Header::parse(&head)?;
        if r.header.has_metadata {
            r.metadata = Some(r.read_metadata()?);
        }
        if r.header.has_offsets {
            if r.header.nchunks < 0 {
                return err("offsets present but the chunk count is unknown", 16);
            }
            let slots = (r.header.nchunks + r.header.max_app_chunks) as u64;
            let bytes =
                slots.checked_mul(8).ok_or(Error { what: "offsets section overflows".into(), offset: r.pos })?;
            r.skip(bytes, "offsets section")?;
        } else if r.header.max_app_chunks != 0 {
            return err("spare offset slots without an offsets section", 24);
        }
        Ok(r)
    }

    pub fn header(&self) -> &Header {
        &self.header
    }

    pub fn metadata(&self) -> Option<&Metadata> {
        self.metadata.as_ref()
    }

    /// Byte offset of the next chunk.
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Exactly `n` bytes (grown as they arrive, never allocated up front beyond what is left).
    fn next_bytes(&mut self, n: u64, what: &str) -> Result<Vec<u8>> {
        if n > self.left {
            return err(format!("{what} needs {n} bytes, the file has {} left", self.left), self.pos);
        }
        let mut buf = Vec::with_capacity(n.min(1 << 20) as usize);
        (&mut self.inner)
            .take(n)
            .read_to_end(&mut buf)
            .map_err(|e| Error { what: format!("reading {what}: {e}"), offset: self.pos })?;
        if (buf.len() as u64) < n {
            return err(format!("{what} needs {n} bytes, the file ends after {}", buf.len()), self.pos);
        }
        self.pos += n;
        self.left -= n;
        Ok(buf)
    }

    fn skip(&mut self, mut n: u64, what: &str) -> Result<()> {
        while n > 0 {
            let step = n.min(1 << 20);
            self.next_bytes(step, what)?;
            n -= step;
        }
        Ok(())
    }

    fn read_metadata(&mut self) -> Result<Metadata> {
        let at = self.pos;
        let h = self.next_bytes(META_HEADER_LEN, "metadata header")?;
        let u32_at = |o: usize| u32::from_le_bytes(h[o..o + 4].try_into().expect("4 bytes"));
        let format = String::from_utf8_lossy(&h[..8]).trim_end_matches(['\0', ' ']).to_string();
        let (options, checksum, codec) = (h[8], h[9], h[10]);
        let (size, max_size, comp_size) = (u32_at(12), u32_at(16), u32_at(20));
        if options != 0 {
            return err(format!("unknown metadata option bits {options:#04x}"), at + 8);
        }
        let dlen = digest_len(checksum, at + 9)?;
        if codec > 1 {
            return err(format!("metadata codec {codec} is not 0 (none) or 1 (zlib)"), at + 10);
        }
        if max_size > MAX_META || size > MAX_META {
            return err(format!("metadata of {size} bytes ({max_size} reserved) exceeds {MAX_META}"), at + 12);
        }
        // zlib expands at most ~1032:1: a larger claimed size is a lie (and an allocation).
        if codec == 1 && u64::from(size) > u64::from(comp_size) * 1032 + 64 {
            return err(format!("metadata claims {size} bytes from {comp_size} zlib bytes"), at + 12);
        }
        if comp_size > max_size || (codec == 0 && comp_size != size) {
            return err(
                format!("metadata sizes disagree: {size} bytes, {comp_size} stored, {max_size} reserved"),
                at + 12,
            );
        }
        let space = self.next_bytes(u64::from(max_size), "metadata")?;
        let stored = &space[..comp_size as usize];
        let digest = self.next_bytes(dlen as u64, "metadata digest")?;
        check_digest(checksum, stored, &digest, at)?;
        let data = if codec == 1 {
            let mut out = vec![0u8; size as usize];
            oxblosc_chunk::codec::zlib::decompress(stored, &mut out)
                .map_err(|e| Error { what: format!("metadata does not inflate: {e}"), offset: at + META_HEADER_LEN })?;
            out
        } else {
            stored.to_vec()
        };
        Ok(Metadata { format, checksum, codec, max_size, data })
    }

    /// The next chunk as stored (a Blosc1 buffer), its digest checked; `None` after the last.
    pub fn next_raw_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let known = self.header.nchunks;
        if known >= 0 && self.chunks_read >= known as u64 {
            return Ok(None);
        }
        if known < 0 && self.left == 0 {
            return Ok(None);
        }
        let at = self.pos;
        let mut chunk = self.next_bytes(BLOSC1_HEADER as u64, "chunk header")?;
        let u32_at = |o: usize| u32::from_le_bytes(chunk[o..o + 4].try_into().expect("4 bytes"));
        let (nbytes, cbytes) = (u32_at(4), u32_at(12));
        if (cbytes as usize) < BLOSC1_HEADER || cbytes as usize > MAX_BUFFERSIZE + 64 {
            return err(format!("chunk {} claims {cbytes} compressed bytes", self.chunks_read), at + 12);
        }
        if self.header.chunk_size >= 0 && nbytes > self.header.chunk_size as u32 {
            return err(
                format!(
                    "chunk {} holds {nbytes} bytes, more than the chunk size {}",
                    self.chunks_read, self.header.chunk_size
                ),
                at + 4,
            );
        }
        let rest = self.next_bytes(u64::from(cbytes) - BLOSC1_HEADER as u64, "chunk")?;
        chunk.extend_from_slice(&rest);
        let dlen = digest_len(self.header.checksum, 6)?;
        let digest = self.next_bytes(dlen as u64, "chunk digest")?;
        check_digest(self.header.checksum, &chunk, &digest, at)?;
        self.chunks_read += 1;
        Ok(Some(chunk))
    }

    /// The next chunk decompressed; `None` after the last (the total checked against the header).
    pub fn next_chunk(&mut self) -> Result<Option<Vec<u8>>> {
        let at = self.pos;
        let Some(c) = self.next_raw_chunk()? else {
            if let Some(n) = self.header.nbytes() {
                if n != self.bytes_out {
                    return err(format!("chunks hold {} bytes, the header says {n}", self.bytes_out), self.pos);
                }
            }
            return Ok(None);
        };
        let out = oxblosc_chunk::decompress(&c, &DParams { nthreads: self.nthreads })
            .map_err(|e| Error { what: format!("chunk {}: {e}", self.chunks_read - 1), offset: at })?;
        self.bytes_out += out.len() as u64;
        Ok(Some(out))
    }
}

impl<R: Read> Read for Reader<R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.pending.len() {
            if self.done {
                return Ok(0);
            }
            match self.next_chunk() {
                Ok(Some(c)) => {
                    self.pending = c;
                    self.at = 0;
                }
                Ok(None) => self.done = true,
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
        let n = out.len().min(self.pending.len() - self.at);
        out[..n].copy_from_slice(&self.pending[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

fn check_digest(id: u8, data: &[u8], digest: &[u8], at: u64) -> Result<()> {
    let want = match id {
        1 => adler32(data),
        2 => crc32(data),
        _ => return Ok(()), // none, or a digest we do not compute (md5, sha*)
    };
    if digest != want.to_le_bytes() {
        return err(format!("{} mismatch", checksum_name(id)), at);
    }
    Ok(())
}

/// Whether this checksum id is verified while reading.
pub fn checksum_verified(id: u8) -> bool {
    matches!(id, 1 | 2)
}

fn adler32(data: &[u8]) -> u32 {
    const MOD: u32 = 65521;
    let (mut a, mut b) = (1u32, 0u32);
    // 5552 bytes is the most that can be summed before b could overflow u32.
    for block in data.chunks(5552) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= MOD;
        b %= MOD;
    }
    (b << 16) | a
}

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &x in data {
        crc ^= u32::from(x);
        for _ in 0..8 {
            crc = if crc & 1 != 0 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_digests() {
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(crc32(b"123456789"), 0xCBF4_3926);
        let big = vec![0xFFu8; 100_000];
        // Reference: the same sums without the blocking, in u64.
        let (mut a, mut b) = (1u64, 0u64);
        for &x in &big {
            a = (a + u64::from(x)) % 65521;
            b = (b + a) % 65521;
        }
        assert_eq!(adler32(&big), ((b << 16) | a) as u32);
    }

    #[test]
    fn hostile_headers_are_refused() {
        let mut h = b"blpk\x03".to_vec();
        h.resize(32, 0);
        assert!(Header::parse(&h).is_ok());
        h[5] = 0x80;
        assert!(Header::parse(&h).is_err());
        h[5] = 0;
        h[6] = 9;
        assert!(Header::parse(&h).is_err());
        h[6] = 0;
        h[16..24].copy_from_slice(&i64::MAX.to_le_bytes());
        h[24..32].copy_from_slice(&5i64.to_le_bytes());
        assert!(Header::parse(&h).is_err());
        // A huge offsets section with a short file fails on length, not on allocation.
        let mut f = b"blpk\x03".to_vec();
        f.resize(32, 0);
        f[5] = 1;
        f[16..24].copy_from_slice(&(1i64 << 60).to_le_bytes());
        let len = f.len() as u64;
        assert!(Reader::new(&f[..], len, 1).is_err());
        // Metadata claiming 60 MiB from 10 zlib bytes is refused before inflating.
        let mut f = b"blpk\x03\x02".to_vec();
        f.resize(32, 0);
        f.extend(b"JSON\0\0\0\0\0\0\x01\0");
        for v in [60u32 << 20, 10, 10] {
            f.extend(v.to_le_bytes());
        }
        f.resize(f.len() + 8 + 10, 0);
        let len = f.len() as u64;
        let e = Reader::new(&f[..], len, 1).err().expect("refused");
        assert!(e.what.contains("claims"), "{e}");
    }
}

//! zfp's bit stream: bits go least significant first into 64-bit little-endian words, so
//! bit `i` of the stream is bit `i % 8` of byte `i / 8`; a finished stream is padded with
//! zeros to a whole word (its length is a multiple of 8 bytes).

/// Writes bits into a caller's buffer; reports `None` at the end if the buffer was too small.
pub(super) struct BitWriter<'a> {
    dst: &'a mut [u8],
    /// Next byte of `dst` to write a word to.
    pos: usize,
    buf: u64,
    /// Bits waiting in `buf` (always < 64).
    fill: u32,
    overflow: bool,
}

impl<'a> BitWriter<'a> {
    pub(super) fn new(dst: &'a mut [u8]) -> Self {
        BitWriter { dst, pos: 0, buf: 0, fill: 0, overflow: false }
    }

    fn put_word(&mut self, w: u64) {
        match self.dst.get_mut(self.pos..self.pos + 8) {
            Some(out) => out.copy_from_slice(&w.to_le_bytes()),
            None => self.overflow = true,
        }
        self.pos += 8;
    }

    /// Append the low `n` bits of `value` (`n` <= 64; higher bits of `value` are ignored).
    #[inline]
    pub(super) fn write_bits(&mut self, value: u64, n: u32) {
        if n == 0 {
            return;
        }
        let value = if n < 64 { value & ((1u64 << n) - 1) } else { value };
        self.buf |= value << self.fill;
        let total = self.fill + n;
        if total >= 64 {
            let w = self.buf;
            self.put_word(w);
            // The bits of `value` that did not fit in the finished word.
            let used = 64 - self.fill;
            self.buf = if used < 64 { value >> used } else { 0 };
            self.fill = total - 64;
        } else {
            self.fill = total;
        }
    }

    #[inline]
    pub(super) fn write_bit(&mut self, bit: bool) {
        self.write_bits(bit as u64, 1);
    }

    /// Append `n` zero bits.
    pub(super) fn pad(&mut self, mut n: u64) {
        while n > 0 {
            let k = n.min(64) as u32;
            self.write_bits(0, k);
            n -= u64::from(k);
        }
    }

    /// Stop early when the buffer is already known to be too small.
    pub(super) fn overflowed(&self) -> bool {
        self.overflow
    }

    /// Flush the last partial word; the stream length in bytes, `None` if it did not fit.
    pub(super) fn finish(mut self) -> Option<usize> {
        if self.fill > 0 {
            let w = self.buf;
            self.put_word(w);
        }
        (!self.overflow).then_some(self.pos)
    }
}

/// Reads bits back; past the end of the input it reads zeros (the caller checks
/// [`BitReader::overrun`] once per block, so a truncated stream is an error, never an
/// over-read).
pub(super) struct BitReader<'a> {
    src: &'a [u8],
    /// Bytes loaded so far, counting the zeros read past the end.
    pos: usize,
    buf: u64,
    /// Bits left in `buf`.
    avail: u32,
}

impl<'a> BitReader<'a> {
    pub(super) fn new(src: &'a [u8]) -> Self {
        BitReader { src, pos: 0, buf: 0, avail: 0 }
    }

    fn next_word(&mut self) -> u64 {
        let rest = self.src.get(self.pos..).unwrap_or(&[]);
        self.pos += 8;
        let mut w = [0u8; 8];
        let k = rest.len().min(8);
        w[..k].copy_from_slice(&rest[..k]);
        u64::from_le_bytes(w)
    }

    /// The next `n` bits (`n` <= 64), first bit in bit 0.
    #[inline]
    pub(super) fn read_bits(&mut self, n: u32) -> u64 {
        if n == 0 {
            return 0;
        }
        if n <= self.avail {
            let v = if n < 64 { self.buf & ((1u64 << n) - 1) } else { self.buf };
            self.buf = if n < 64 { self.buf >> n } else { 0 };
            self.avail -= n;
            return v;
        }
        // Take what is left, then the rest from the next word.
        let low = self.buf;
        let have = self.avail;
        let w = self.next_word();
        let need = n - have;
        let high = if need < 64 { w & ((1u64 << need) - 1) } else { w };
        self.buf = if need < 64 { w >> need } else { 0 };
        self.avail = 64 - need;
        low | if have < 64 { high << have } else { 0 }
    }

    #[inline]
    pub(super) fn read_bit(&mut self) -> bool {
        if self.avail == 0 {
            self.buf = self.next_word();
            self.avail = 64;
        }
        let b = self.buf & 1 != 0;
        self.buf >>= 1;
        self.avail -= 1;
        b
    }

    /// Read up to `max` bits, stopping after the first 1: (zeros read, whether a 1 ended
    /// the run).
    #[inline]
    pub(super) fn read_unary(&mut self, max: usize) -> (usize, bool) {
        let mut zeros = 0;
        while zeros < max {
            if self.avail == 0 {
                self.buf = self.next_word();
                self.avail = 64;
            }
            let room = (max - zeros).min(self.avail as usize) as u32;
            // `buf` holds `avail` bits and zeros above them.
            let t = self.buf.trailing_zeros();
            if t < room {
                self.buf = (self.buf >> t) >> 1;
                self.avail -= t + 1;
                return (zeros + t as usize, true);
            }
            self.buf = if room < 64 { self.buf >> room } else { 0 };
            self.avail -= room;
            zeros += room as usize;
        }
        (zeros, false)
    }

    /// Skip `n` bits.
    pub(super) fn skip(&mut self, mut n: u64) {
        while n > 0 {
            let k = n.min(64) as u32;
            self.read_bits(k);
            n -= u64::from(k);
        }
    }

    /// Some bit was read past the end of the input.
    pub(super) fn overrun(&self) -> bool {
        self.pos * 8 - self.avail as usize > self.src.len() * 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_round_trip_across_words_and_pad_to_a_word() {
        let items: Vec<(u64, u32)> =
            (0..300u64).map(|i| (i.wrapping_mul(0x9E37_79B9_7F4A_7C15), (i % 65) as u32)).collect();
        let total: u32 = items.iter().map(|x| x.1).sum();
        let mut buf = vec![0u8; (total as usize).div_ceil(64) * 8];
        let mut w = BitWriter::new(&mut buf);
        for &(v, n) in &items {
            w.write_bits(v, n);
        }
        assert_eq!(w.finish(), Some(buf.len()));
        let mut r = BitReader::new(&buf);
        for &(v, n) in &items {
            let want = if n == 64 { v } else { v & ((1u64 << n) - 1) };
            assert_eq!(r.read_bits(n), want);
        }
        assert!(!r.overrun());
        r.skip(128);
        assert!(r.overrun());
        // LSB-first inside bytes.
        let mut b = [0u8; 8];
        let mut w = BitWriter::new(&mut b);
        w.write_bit(true);
        w.write_bits(0b10, 2);
        assert_eq!(w.finish(), Some(8));
        assert_eq!(b[0], 0b101);
        let mut small = [0u8; 7];
        let mut w = BitWriter::new(&mut small);
        w.write_bit(true);
        assert_eq!(w.finish(), None);
    }
}

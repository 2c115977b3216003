//! Random geometries x random hyperslabs against a naive C-order reference: reads, writes,
//! resize and append, threads 1 and 3, plus edge cases (0-d, zero-length axes, blocks larger
//! than chunks, odd edge chunks) and the decoded-blocks counter.

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::reference::offsets;
use oxblosc_nd::{DimSlice, Fill, Geometry, Meta, NdArray};

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
}

fn schunk(typesize: usize, nthreads: usize) -> SChunk {
    let cp = CParams { typesize, nthreads, clevel: 5, ..CParams::default() };
    SChunk::new(cp, DParams { nthreads }).unwrap()
}

/// Items `i` of the reference hold `i * 7 + 1` as u32 (typesize 4) or its low bytes.
fn reference(n: u64, t: usize) -> Vec<u8> {
    (0..n)
        .flat_map(|i| ((i as u32).wrapping_mul(7).wrapping_add(1)).to_le_bytes().into_iter().cycle().take(t))
        .collect()
}

/// The naive selection.
fn naive_get(data: &[u8], shape: &[u64], t: usize, sel: &[DimSlice]) -> Vec<u8> {
    offsets(shape, sel).iter().flat_map(|&o| data[o * t..(o + 1) * t].iter().copied()).collect()
}

fn naive_set(data: &mut [u8], shape: &[u64], t: usize, sel: &[DimSlice], src: &[u8]) {
    for (k, o) in offsets(shape, sel).into_iter().enumerate() {
        data[o * t..(o + 1) * t].copy_from_slice(&src[k * t..(k + 1) * t]);
    }
}

fn random_sel(rng: &mut Rng, shape: &[u64]) -> Vec<DimSlice> {
    shape
        .iter()
        .map(|&s| {
            let a = rng.below(s + 1);
            let b = rng.below(s + 1);
            let (a, b) = if a <= b { (a, b) } else { (b, a) };
            let step = if rng.below(3) == 0 { 1 + rng.below(5) } else { 1 };
            match rng.below(5) {
                0 => DimSlice::full(s),
                1 if s > 0 => DimSlice::new(a.min(s - 1), a.min(s - 1) + 1, 1),
                _ => DimSlice::new(a, b, step),
            }
        })
        .collect()
}

fn random_geometry(rng: &mut Rng) -> (Vec<u64>, Vec<u64>, Vec<u64>, usize) {
    let ndim = rng.below(5) as usize;
    let t = [1usize, 2, 4, 8, 3][rng.below(5) as usize];
    let mut shape = Vec::new();
    let mut chunks = Vec::new();
    let mut blocks = Vec::new();
    for _ in 0..ndim {
        let s = if rng.below(12) == 0 { 0 } else { 1 + rng.below(if ndim > 2 { 9 } else { 30 }) };
        let c = 1 + rng.below(s.max(1) + 2);
        let b = 1 + rng.below(c);
        shape.push(s);
        chunks.push(c);
        blocks.push(b);
    }
    (shape, chunks, blocks, t)
}

#[test]
fn random_reads_and_writes_match_naive_reference() {
    let mut rng = Rng(0x5eed_1234_abcd_0001);
    for case in 0..150 {
        let (shape, chunks, blocks, t) = random_geometry(&mut rng);
        let nthreads = if case % 2 == 0 { 1 } else { 3 };
        let g = Geometry::new(&shape, &chunks, &blocks, t).unwrap();
        let mut data = reference(g.nitems, t);
        let mut a = NdArray::from_buffer(schunk(t, nthreads), g, Some("|V1"), &data).unwrap();
        let ctx = format!("case {case}: shape {shape:?} chunks {chunks:?} blocks {blocks:?} t {t}");
        assert_eq!(a.to_vec().unwrap(), data, "{ctx}: full read");
        for _ in 0..6 {
            let sel = random_sel(&mut rng, &shape);
            let got = a.get_slice(&sel).unwrap();
            assert_eq!(got, naive_get(&data, &shape, t, &sel), "{ctx}: get {sel:?}");
        }
        for _ in 0..3 {
            let sel = random_sel(&mut rng, &shape);
            let n: u64 = sel.iter().map(DimSlice::len).product();
            let src: Vec<u8> = (0..n as usize * t).map(|_| rng.next() as u8).collect();
            a.set_slice(&sel, &src).unwrap();
            naive_set(&mut data, &shape, t, &sel, &src);
            assert_eq!(a.to_vec().unwrap(), data, "{ctx}: after set {sel:?}");
        }
        // Survives a frame round trip.
        let back = NdArray::from_schunk(SChunk::from_cframe(&a.to_cframe().unwrap()).unwrap()).unwrap();
        assert_eq!(back.to_vec().unwrap(), data, "{ctx}: cframe round trip");
        // Resize to random new shape: kept region equal, new items zero.
        if !shape.is_empty() {
            let new_shape: Vec<u64> =
                shape.iter().map(|&s| if rng.below(2) == 0 { s } else { rng.below(2 * s + 3) }).collect();
            a.resize(&new_shape).unwrap();
            assert_eq!(a.shape(), &new_shape[..]);
            let mut expect = vec![0u8; new_shape.iter().product::<u64>() as usize * t];
            let keep: Vec<DimSlice> = shape.iter().zip(&new_shape).map(|(&o, &n)| DimSlice::full(o.min(n))).collect();
            let kept = naive_get(&data, &shape, t, &keep);
            naive_set(&mut expect, &new_shape, t, &keep, &kept);
            assert_eq!(a.to_vec().unwrap(), expect, "{ctx}: resize to {new_shape:?}");
            let back = NdArray::from_schunk(SChunk::from_cframe(&a.to_cframe().unwrap()).unwrap()).unwrap();
            assert_eq!(back.to_vec().unwrap(), expect, "{ctx}: resized round trip");
        }
    }
}

#[test]
fn shrink_then_grow_reads_zeros_not_old_values() {
    let g = Geometry::new(&[10, 10], &[4, 4], &[2, 2], 4).unwrap();
    let mut a = NdArray::create(schunk(4, 1), g, Some("<i4"), Fill::Value(vec![1, 0, 0, 0])).unwrap();
    a.resize(&[5, 5]).unwrap();
    a.resize(&[10, 10]).unwrap();
    let v = a.to_vec().unwrap();
    for i in 0..10 {
        for j in 0..10 {
            let x = v[(i * 10 + j) * 4];
            assert_eq!(x, u8::from(i < 5 && j < 5), "item ({i},{j})");
        }
    }
}

#[test]
fn append_streams_rows() {
    let g = Geometry::new(&[0, 3], &[4, 3], &[2, 3], 2).unwrap();
    let mut a = NdArray::create(schunk(2, 1), g, Some("<u2"), Fill::Zeros).unwrap();
    let mut all = Vec::new();
    for k in 0..7u16 {
        let rows: Vec<u8> = (0..(k as usize % 3 + 1) * 3).flat_map(|i| (k * 100 + i as u16).to_le_bytes()).collect();
        a.append(&rows).unwrap();
        all.extend_from_slice(&rows);
        assert_eq!(a.to_vec().unwrap(), all);
    }
    assert!(a.append(&[1, 2, 3]).is_err());
}

#[test]
fn zero_d_and_zero_length() {
    let g = Geometry::new(&[], &[], &[], 8).unwrap();
    let a = NdArray::from_buffer(schunk(8, 1), g, Some("<f8"), &1.5f64.to_le_bytes()).unwrap();
    assert_eq!(a.schunk().nchunks(), 1);
    assert_eq!(a.get_slice(&[]).unwrap(), 1.5f64.to_le_bytes());
    let g = Geometry::new(&[3, 0, 4], &[3, 0, 4], &[3, 0, 4], 4).unwrap();
    let a = NdArray::create(schunk(4, 1), g, Some("<i4"), Fill::Zeros).unwrap();
    assert_eq!(a.schunk().nchunks(), 0);
    assert!(a.to_vec().unwrap().is_empty());
    let back = NdArray::from_schunk(SChunk::from_cframe(&a.to_cframe().unwrap()).unwrap()).unwrap();
    assert_eq!(back.shape(), &[3, 0, 4]);
}

#[test]
fn zeros_and_full_write_no_data() {
    let g = Geometry::new(&[1000, 1000], &[100, 100], &[10, 100], 8).unwrap();
    let a = NdArray::create(schunk(8, 1), g.clone(), Some("<f8"), Fill::Zeros).unwrap();
    assert_eq!(a.schunk().nchunks(), 100);
    assert_eq!(a.schunk().cbytes(), 0);
    let v = a.get_slice(&[DimSlice::new(5, 7, 1), DimSlice::full(1000)]).unwrap();
    assert!(v.iter().all(|&b| b == 0));
    assert_eq!(a.blocks_decoded(), 0, "zero chunks are never decoded");
    let b = NdArray::create(schunk(8, 1), g, Some("<f8"), Fill::Value(2.5f64.to_le_bytes().to_vec())).unwrap();
    assert!(b.schunk().cbytes() < 100 * 64, "value chunks are tiny: {}", b.schunk().cbytes());
    let v = b.get_slice(&[DimSlice::new(999, 1000, 1), DimSlice::new(3, 5, 1)]).unwrap();
    assert_eq!(v, [2.5f64.to_le_bytes(), 2.5f64.to_le_bytes()].concat());
}

#[test]
fn reads_decode_only_touched_blocks() {
    // 2 x 2 chunks of 4 x 4 blocks (each block 5 x 5 items).
    let g = Geometry::new(&[40, 40], &[20, 20], &[5, 5], 4).unwrap();
    let data = reference(1600, 4);
    let a = NdArray::from_buffer(schunk(4, 1), g, Some("<u4"), &data).unwrap();
    // One item: one block.
    a.get_slice(&[DimSlice::new(7, 8, 1), DimSlice::new(33, 34, 1)]).unwrap();
    assert_eq!(a.blocks_decoded(), 1);
    // Row 7 across the array: block row 1 of chunks 0 and 1 -> 4 blocks each.
    a.get_slice(&[DimSlice::new(7, 8, 1), DimSlice::full(40)]).unwrap();
    assert_eq!(a.blocks_decoded(), 1 + 8);
    // Column 2, rows 0..10: blocks (0,0) and (1,0) of chunk 0.
    a.get_slice(&[DimSlice::new(0, 10, 1), DimSlice::new(2, 3, 1)]).unwrap();
    assert_eq!(a.blocks_decoded(), 1 + 8 + 2);
    // Most of a chunk: decoded whole (16 blocks).
    a.get_slice(&[DimSlice::new(0, 18, 1), DimSlice::new(0, 18, 1)]).unwrap();
    assert_eq!(a.blocks_decoded(), 1 + 8 + 2 + 16);
}

#[test]
fn blocks_larger_than_chunks_are_read() {
    // C-Blosc2 accepts blockshape > chunkshape on read (extchunk = block).
    let g = Geometry::new(&[9, 7], &[4, 3], &[5, 2], 4).unwrap();
    assert_eq!(g.extchunks, vec![5, 4]);
    let data = reference(63, 4);
    let mut s = schunk(4, 1);
    let mut cp = s.cparams().clone();
    cp.blocksize = g.block_bytes();
    s.set_cparams(cp).unwrap();
    s.add_meta("b2nd", &g.to_meta(Some("<u4")).encode()).unwrap();
    for n in 0..g.nchunks {
        let mut buf = vec![0u8; g.chunk_bytes()];
        for i in 0..9u64 {
            for j in 0..7u64 {
                let (c, off) = g.locate(&[i, j]).unwrap();
                if c == n {
                    let k = (i * 7 + j) as usize * 4;
                    buf[off..off + 4].copy_from_slice(&data[k..k + 4]);
                }
            }
        }
        s.append_data(&buf).unwrap();
    }
    let a = NdArray::from_schunk(s).unwrap();
    assert_eq!(a.to_vec().unwrap(), data);
    let sel = [DimSlice::new(1, 9, 2), DimSlice::new(6, 7, 1)];
    assert_eq!(a.get_slice(&sel).unwrap(), naive_get(&data, &[9, 7], 4, &sel));
}

#[test]
fn metalayer_must_match_the_frame() {
    let g = Geometry::new(&[10], &[4], &[2], 4).unwrap();
    let a = NdArray::create(schunk(4, 1), g, Some("<i4"), Fill::Zeros).unwrap();
    let frame = a.to_cframe().unwrap();
    // Lie about the shape: 20 items need 5 chunks, the frame has 3.
    let mut s = SChunk::from_cframe(&frame).unwrap();
    let lie =
        Meta { shape: vec![20], chunkshape: vec![4], blockshape: vec![2], dtype_format: 0, dtype: Some("<i4".into()) };
    s.update_meta("b2nd", &lie.encode()).unwrap();
    let e = NdArray::from_schunk(s).unwrap_err().to_string();
    assert!(e.contains("5 chunks") && e.contains("holds 3"), "{e}");
    // Lie about the chunk shape: chunk size disagrees.
    let mut s = SChunk::from_cframe(&frame).unwrap();
    let lie =
        Meta { shape: vec![10], chunkshape: vec![5], blockshape: vec![2], dtype_format: 0, dtype: Some("<i4".into()) };
    s.update_meta("b2nd", &lie.encode()).unwrap();
    let e = NdArray::from_schunk(s);
    assert!(e.is_err(), "chunks [5] pad to 6 items = 24 bytes, the frame has 16-byte chunks");
    // Overflowing products.
    let mut s = SChunk::from_cframe(&frame).unwrap();
    let lie = Meta {
        shape: vec![i64::MAX],
        chunkshape: vec![1],
        blockshape: vec![1],
        dtype_format: 0,
        dtype: Some("<i4".into()),
    };
    s.update_meta("b2nd", &lie.encode()).unwrap();
    assert!(NdArray::from_schunk(s).is_err());
    // No metalayer at all.
    let plain = schunk(4, 1);
    assert!(matches!(NdArray::from_schunk(plain), Err(oxblosc_nd::Error::NotAnArray)));
}

#[test]
fn iter_chunks_covers_the_array() {
    let g = Geometry::new(&[7, 5], &[3, 2], &[2, 1], 1).unwrap();
    let data = reference(35, 1);
    let a = NdArray::from_buffer(schunk(1, 1), g, Some("|u1"), &data).unwrap();
    let mut seen = 0;
    for r in a.iter_chunks() {
        let (start, stop, bytes) = r.unwrap();
        let sel: Vec<DimSlice> = start.iter().zip(&stop).map(|(&a, &b)| DimSlice::new(a, b, 1)).collect();
        assert_eq!(bytes, naive_get(&data, &[7, 5], 1, &sel));
        seen += bytes.len();
    }
    assert_eq!(seen, 35);
}

#[test]
fn a_selection_too_large_for_memory_is_an_error() {
    // 1 PiB of zeros in 2^20 special chunks: more than any address space (so refused even
    // where memory is overcommitted); reading all of it must fail cleanly.
    let cp = CParams { typesize: 1, ..CParams::default() };
    let s = SChunk::new(cp, DParams::default()).unwrap();
    let g = Geometry::new(&[1 << 50], &[1 << 30], &[1 << 16], 1).unwrap();
    let a = NdArray::create(s, g, Some("|u1"), Fill::Zeros).unwrap();
    let e = a.get_slice(&[DimSlice::full(1 << 50)]).unwrap_err().to_string();
    assert!(e.contains("cannot be allocated"), "{e}");
    assert_eq!(a.get_slice(&[DimSlice::new(5, 9, 1)]).unwrap(), vec![0; 4]);
}

/// Every whole chunk read on its own, against the reference; returns how many of those
/// reads decoded straight into the output.
fn read_each_chunk(shape: &[u64], chunks: &[u64], blocks: &[u64], nthreads: usize) -> u64 {
    let g = Geometry::new(shape, chunks, blocks, 4).unwrap();
    let n: u64 = shape.iter().product();
    let data = reference(n, 4);
    let mut a = NdArray::from_buffer(schunk(4, nthreads), g.clone(), Some("<u4"), &data).unwrap();
    // The last chunk all zeros (a special chunk): read as zeros either way.
    let (zlo, zhi) = g.chunk_region(g.nchunks - 1);
    let zsel: Vec<DimSlice> = zlo.iter().zip(&zhi).map(|(&a, &b)| DimSlice::new(a, b, 1)).collect();
    let zitems = zsel.iter().map(DimSlice::len).product::<u64>() as usize;
    a.set_slice(&zsel, &vec![0u8; zitems * 4]).unwrap();
    let mut expect_all = data.clone();
    for i in 0..n as usize {
        let mut idx = Vec::new();
        let mut r = i as u64;
        for &s in shape.iter().rev() {
            idx.push(r % s);
            r /= s;
        }
        idx.reverse();
        if idx.iter().zip(zlo.iter().zip(&zhi)).all(|(&x, (&lo, &hi))| lo <= x && x < hi) {
            expect_all[i * 4..i * 4 + 4].fill(0);
        }
    }
    for c in 0..g.nchunks {
        let (lo, hi) = g.chunk_region(c);
        let sel: Vec<DimSlice> = lo.iter().zip(&hi).map(|(&a, &b)| DimSlice::new(a, b, 1)).collect();
        let got = a.get_slice(&sel).unwrap();
        assert_eq!(got, naive_get(&expect_all, shape, 4, &sel), "chunk {c} of {shape:?} {chunks:?} {blocks:?}");
    }
    a.chunks_decoded_in_place()
}

#[test]
fn whole_chunks_in_c_order_decode_straight_into_the_output() {
    for nthreads in [1, 3] {
        // Blocks one item thick on the leading axes, whole on the trailing ones: every
        // chunk (2 x 2 x 2 = 8, the zero chunk included) decodes in place.
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[1, 3, 5], nthreads), 8);
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[2, 6, 5], nthreads), 8);
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[1, 1, 1], nthreads), 8);
        // Edge chunks (shape not a multiple of chunks) too: all 18, their padding skipped.
        assert_eq!(read_each_chunk(&[9, 13, 10], &[4, 6, 5], &[1, 3, 5], nthreads), 18);
        // Padded on the split axis only (4 rows in blocks of 3, 6 in blocks of 4): the edge
        // block's padding follows its items, still in place.
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[3, 6, 5], nthreads), 8);
        assert_eq!(read_each_chunk(&[9, 13, 10], &[4, 6, 5], &[1, 4, 5], nthreads), 18);
        // Blocks not in C order: never in place, same values.
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[2, 3, 5], nthreads), 0);
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[1, 6, 2], nthreads), 0);
        assert_eq!(read_each_chunk(&[8, 12, 10], &[4, 6, 5], &[2, 4, 5], nthreads), 0);
    }
}

/// A read across chunks along the first axis only, whole chunks on the others (a full read
/// of a field whose chunks span the inner axes, as the automatic shapes give): every chunk
/// decodes straight into its piece of the output, blocks padded on the split axis (721 rows
/// in blocks of 22 in the bench field; here 7 in blocks of 3), memory and file, the last
/// chunk short, parts of the end chunks, 1 and 3 threads.
#[test]
fn slabs_of_several_chunks_decode_straight_into_the_output() {
    let shape = [11u64, 7, 5];
    let g = Geometry::new(&shape, &[2, 7, 5], &[1, 3, 5], 4).unwrap();
    let data = reference(shape.iter().product(), 4);
    let s = |r: [(u64, u64); 3]| r.map(|(a, b)| DimSlice::new(a, b, 1));
    // (selection, chunks decoded in place)
    let cases = [
        (s([(0, 11), (0, 7), (0, 5)]), 6), // the whole array
        (s([(1, 10), (0, 7), (0, 5)]), 5), // parts of the end chunks
        (s([(3, 5), (0, 7), (0, 5)]), 2),
        (s([(0, 11), (0, 6), (0, 5)]), 0), // not a whole chunk on an inner axis: copied
        (s([(0, 11), (1, 7), (0, 5)]), 0),
    ];
    let dir = std::env::temp_dir().join(format!("oxnd-slabs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for nthreads in [1, 3] {
        let path = dir.join(format!("a{nthreads}.b2nd"));
        let file =
            SChunk::create(&path, true, CParams { typesize: 4, ..CParams::default() }, DParams { nthreads }).unwrap();
        for sc in [schunk(4, nthreads), file] {
            let a = NdArray::from_buffer(sc, g.clone(), Some("<u4"), &data).unwrap();
            for (sel, in_place) in &cases {
                let p0 = a.chunks_decoded_in_place();
                assert_eq!(a.get_slice(sel).unwrap(), naive_get(&data, &shape, 4, sel), "{sel:?}");
                assert_eq!(a.chunks_decoded_in_place() - p0, *in_place, "{sel:?} {nthreads}");
            }
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn parts_of_one_chunk_decode_only_their_blocks_straight_into_the_output() {
    // Chunks of 16 x 6 x 10 in blocks of 1 x 3 x 10 (C order): 32 blocks per chunk.
    let shape = [32u64, 12, 10];
    let g = Geometry::new(&shape, &[16, 6, 10], &[1, 3, 10], 4).unwrap();
    let data = reference(shape.iter().product(), 4);
    let s = |r: [(u64, u64); 3]| r.map(|(a, b)| DimSlice::new(a, b, 1));
    // (selection, blocks decoded, chunks decoded straight into the output)
    let cases = [
        (s([(4, 16), (0, 6), (0, 10)]), 24, 1), // 12 planes of a chunk (Dask's slab)
        (s([(20, 22), (6, 12), (0, 10)]), 4, 1),
        (s([(4, 16), (3, 6), (0, 10)]), 12, 1),      // one block per plane
        (s([(4, 16), (1, 5), (0, 10)]), 24, 1),      // parts of two blocks per plane
        (s([(4, 16), (1, 2), (2, 5)]), 12, 1),       // a row part per plane
        (s([(4, 6), (0, 3), (2, 5)]), 2, 0),         // three runs in one block: decoded once, copied
        (s([(10, 20), (0, 6), (0, 10)]), 12 + 8, 2), // two chunks, each a slab of the output
    ];
    for nthreads in [1, 3] {
        let a = NdArray::from_buffer(schunk(4, nthreads), g.clone(), Some("<u4"), &data).unwrap();
        for (sel, blocks, in_place) in &cases {
            let (b0, p0) = (a.blocks_decoded(), a.chunks_decoded_in_place());
            assert_eq!(a.get_slice(sel).unwrap(), naive_get(&data, &shape, 4, sel), "{sel:?}");
            assert_eq!(a.blocks_decoded() - b0, *blocks, "{sel:?}");
            assert_eq!(a.chunks_decoded_in_place() - p0, *in_place, "{sel:?}");
        }
    }
    // Special chunks: zeros are not decoded, a repeated value is expanded into the part.
    let z = NdArray::create(schunk(4, 1), g.clone(), Some("<u4"), Fill::Zeros).unwrap();
    assert_eq!(z.get_slice(&cases[3].0).unwrap(), vec![0u8; 12 * 4 * 10 * 4]);
    assert_eq!((z.blocks_decoded(), z.chunks_decoded_in_place()), (0, 1));
    let v = NdArray::create(schunk(4, 1), g, Some("<u4"), Fill::Value(7u32.to_le_bytes().to_vec())).unwrap();
    assert_eq!(v.get_slice(&cases[4].0).unwrap(), 7u32.to_le_bytes().repeat(12 * 3));
}

/// Resizing a file-backed array across a dimension other than the first rewrites the chunk
/// list in one batch and then zeroes the former padding of kept edge chunks: those chunks were
/// just staged past the committed chunks section and must read back (the resize failed with
/// "chunk header runs past the chunks section"). Contiguous files and sparse directories.
#[test]
fn file_backed_resize_reads_chunks_staged_by_the_same_change() {
    for contiguous in [true, false] {
        let dir = std::env::temp_dir().join(format!("oxnd-resize-{}-{contiguous}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("a.b2nd");
        let cp = CParams { typesize: 2, clevel: 5, ..CParams::default() };
        let s = SChunk::create(&path, contiguous, cp, DParams::default()).unwrap();
        let g = Geometry::new(&[3, 1], &[2, 2], &[1, 1], 2).unwrap();
        let mut a = NdArray::create(s, g, Some("<i2"), Fill::Zeros).unwrap();
        a.set_slice(&[DimSlice::full(3), DimSlice::full(1)], &[1, 0, 2, 0, 3, 0]).unwrap();
        drop(a);
        let mut a = NdArray::from_schunk(oxblosc_frame::open(&path, oxblosc_frame::Mode::Append).unwrap()).unwrap();
        for (shape, want) in [
            (vec![3u64, 3], vec![1u8, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0]),
            (vec![2, 1], vec![1, 0, 2, 0]),
            (vec![4, 2], vec![1, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]),
        ] {
            a.resize(&shape).unwrap();
            assert_eq!(a.to_vec().unwrap(), want, "contiguous {contiguous}: after resize to {shape:?}");
            let back = NdArray::from_schunk(oxblosc_frame::open(&path, oxblosc_frame::Mode::Read).unwrap()).unwrap();
            assert_eq!(back.to_vec().unwrap(), want, "contiguous {contiguous}: reopened after resize to {shape:?}");
        }
        drop(a);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

/// Chunks that are one range of the written data are compressed from it directly (no gather
/// copy): the stored chunks must be byte for byte those the gathering path writes (here: a
/// first write of zeros, then the data in two halves along the last axis, so every chunk is
/// merged with its old bytes) and read back as the data; edge chunks and other layouts take
/// the gathering path in the same write.
#[test]
fn chunks_compressed_straight_from_the_data_equal_gathered_ones() {
    let cases: [(&[u64], &[u64], &[u64]); 8] = [
        (&[40, 30], &[4, 10], &[1, 10]),
        (&[6, 20, 12], &[1, 10, 12], &[1, 5, 12]),
        (&[1000], &[128], &[32]),
        (&[1024], &[128], &[32]),
        (&[40, 30], &[4, 30], &[1, 30]),
        (&[40, 30], &[4, 30], &[2, 30]),
        (&[5, 20, 12], &[1, 20, 12], &[1, 5, 12]),
        (&[6, 20, 12], &[2, 20, 12], &[1, 20, 12]),
    ];
    for (shape, chunks, blocks) in cases {
        for t in [1usize, 4, 8] {
            let g = Geometry::new(shape, chunks, blocks, t).unwrap();
            let n: u64 = shape.iter().product();
            let data = reference(n, t);
            let full: Vec<DimSlice> = shape.iter().map(|&s| DimSlice::full(s)).collect();
            let mut direct = NdArray::create(schunk(t, 1), g.clone(), None, Fill::Zeros).unwrap();
            direct.set_slice(&full, &data).unwrap();
            let mut gathered = NdArray::create(schunk(t, 1), g.clone(), None, Fill::Zeros).unwrap();
            gathered.set_slice(&full, &vec![0u8; data.len()]).unwrap();
            let last = shape.len() - 1;
            let cut = shape[last] / 2;
            for (lo, hi) in [(0, cut), (cut, shape[last])] {
                let mut sel = full.clone();
                sel[last] = DimSlice::new(lo, hi, 1);
                gathered.set_slice(&sel, &naive_get(&data, shape, t, &sel)).unwrap();
            }
            let what = format!("shape {shape:?} chunks {chunks:?} blocks {blocks:?} typesize {t}");
            assert_eq!(direct.get_slice(&full).unwrap(), data, "{what}");
            let (a, b) = (direct.schunk(), gathered.schunk());
            assert_eq!(a.nchunks(), b.nchunks(), "{what}");
            for i in 0..a.nchunks() {
                assert!(a.get_chunk(i).unwrap() == b.get_chunk(i).unwrap(), "{what}: chunk {i}");
            }
        }
    }
}

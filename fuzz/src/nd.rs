//! Bodies of the b2nd fuzz targets (`nd_open`, `nd_slices`), replayed by
//! `tests/replay_regressions.rs` like the others.
//!
//! Contract (issue 4, "Bad input"): arbitrary frames never make `NdArray` panic, hang or
//! allocate beyond what the validated geometry implies; random geometries and hyperslabs
//! read and write exactly what a naive C-order model says.

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::reference::offsets;
use oxblosc_nd::{DimSlice, Fill, Geometry, Meta, NdArray};

use crate::{Bytes, Rng, MAX_FUZZ_FRAME_NBYTES};

// ---------------------------------------------------------------------------------------
// nd_open: arbitrary bytes as a b2nd frame (and as a bare metalayer)
// ---------------------------------------------------------------------------------------

/// Arbitrary bytes as a metalayer and as a cframe: never a panic; when an array opens, a
/// full read (if small enough) agrees with single-item reads and survives a frame round trip.
pub fn fuzz_nd_open(data: &[u8]) {
    if let Ok(m) = Meta::decode(data) {
        // What decodes re-encodes to a metalayer that decodes to the same thing.
        let again = Meta::decode(&m.encode()).expect("re-encoded metalayer decodes");
        if m.dtype.is_some() {
            assert_eq!(again, m, "metalayer encode/decode round trip");
        }
    }
    let Ok(s) = SChunk::from_cframe(data) else { return };
    let Ok(mut a) = NdArray::from_schunk(s) else { return };
    let g = a.geometry().clone();
    let total = g.nitems.saturating_mul(g.typesize as u64);
    if total > MAX_FUZZ_FRAME_NBYTES || g.chunk_bytes() as u64 > MAX_FUZZ_FRAME_NBYTES {
        return; // see MAX_FUZZ_FRAME_NBYTES
    }
    for nt in [1, 2] {
        a.set_nthreads(nt);
        let Ok(all) = a.to_vec() else { return };
        assert_eq!(all.len() as u64, total, "to_vec length");
        if g.nitems == 0 {
            continue;
        }
        // First, last and a middle item read alone agree with the full read.
        let t = g.typesize;
        for k in [0, g.nitems - 1, g.nitems / 2] {
            let mut idx = vec![0u64; g.ndim()];
            let mut r = k;
            for d in (0..g.ndim()).rev() {
                idx[d] = r % g.shape[d];
                r /= g.shape[d];
            }
            let sel: Vec<DimSlice> = idx.iter().map(|&i| DimSlice::new(i, i + 1, 1)).collect();
            let one = a.get_slice(&sel).expect("a single item of a readable array reads");
            assert_eq!(one, all[k as usize * t..(k as usize + 1) * t], "item {idx:?} alone differs");
        }
    }
    let all = a.to_vec().expect("read twice");
    if let Ok(frame) = a.to_cframe() {
        let b = NdArray::from_schunk(SChunk::from_cframe(&frame).expect("our frame reopens"))
            .unwrap_or_else(|e| panic!("our frame of an opened array is not an array: {e}"));
        assert_eq!(b.to_vec().expect("round trip read"), all, "cframe round trip changed the array");
    }
}

// ---------------------------------------------------------------------------------------
// nd_slices: random geometry, random hyperslabs vs a naive model
// ---------------------------------------------------------------------------------------

const TYPESIZES: [usize; 5] = [1, 2, 4, 8, 3];
const MAX_OPS: usize = 24;

/// A byte below `n` from the input (0 when it is used up).
fn below(b: &mut Bytes<'_>, n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        u64::from(b.u8()) % n
    }
}

fn pick_sel(b: &mut Bytes<'_>, shape: &[u64]) -> Vec<DimSlice> {
    shape
        .iter()
        .map(|&s| {
            let a = below(b, s + 1);
            let e = a + below(b, s - a + 1);
            DimSlice::new(a, e, 1 + below(b, 4))
        })
        .collect()
}

/// Bytes 0..: ndim, then (shape, chunk, block) per dim, typesize, nthreads; then ops:
/// 0 read, 1 write, 2 resize, 3 append, 4 frame round trip. Every op is checked against a
/// C-order model of the array.
pub fn fuzz_nd_slices(data: &[u8]) {
    let mut b = Bytes(data);
    let ndim = below(&mut b, 5) as usize;
    let (mut shape, mut chunks, mut blocks) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..ndim {
        let s = below(&mut b, if ndim > 2 { 8 } else { 24 });
        let c = 1 + below(&mut b, s.max(1) + 2);
        shape.push(s);
        chunks.push(c);
        blocks.push(1 + below(&mut b, c));
    }
    let t = TYPESIZES[below(&mut b, TYPESIZES.len() as u64) as usize];
    let nthreads = 1 + below(&mut b, 2) as usize;
    let g = Geometry::new(&shape, &chunks, &blocks, t).expect("small geometries are valid");
    let cp = CParams { typesize: t, nthreads, clevel: 1 + below(&mut b, 9) as u8, ..CParams::default() };
    let s = SChunk::new(cp, DParams { nthreads }).expect("schunk");
    let mut rng = Rng::new(data.len() as u64 ^ 0x0bd0);
    let mut model: Vec<u8> = (0..g.nitems as usize * t).map(|_| rng.next_u64() as u8).collect();
    let mut a = if below(&mut b, 4) == 0 {
        model.iter_mut().for_each(|x| *x = 0);
        NdArray::create(s, g, Some("|V1"), Fill::Zeros).expect("create")
    } else {
        NdArray::from_buffer(s, g, Some("|V1"), &model).expect("from_buffer")
    };
    for _ in 0..MAX_OPS {
        if b.0.is_empty() {
            break;
        }
        let shape = a.shape().to_vec();
        match b.u8() % 5 {
            0 => {
                let sel = pick_sel(&mut b, &shape);
                let got = a.get_slice(&sel).expect("read");
                let expect: Vec<u8> =
                    offsets(&shape, &sel).iter().flat_map(|&o| model[o * t..(o + 1) * t].to_vec()).collect();
                assert!(got == expect, "read {sel:?} of shape {shape:?} differs");
            }
            1 => {
                let sel = pick_sel(&mut b, &shape);
                let offs = offsets(&shape, &sel);
                let src: Vec<u8> = (0..offs.len() * t).map(|_| rng.next_u64() as u8).collect();
                a.set_slice(&sel, &src).expect("write");
                for (k, &o) in offs.iter().enumerate() {
                    model[o * t..(o + 1) * t].copy_from_slice(&src[k * t..(k + 1) * t]);
                }
            }
            2 if ndim > 0 => {
                let new: Vec<u64> =
                    shape.iter().map(|&s| if below(&mut b, 2) == 0 { s } else { below(&mut b, 2 * s + 4) }).collect();
                a.resize(&new).expect("resize");
                let mut m = vec![0u8; new.iter().product::<u64>() as usize * t];
                let keep: Vec<DimSlice> = shape.iter().zip(&new).map(|(&o, &n)| DimSlice::full(o.min(n))).collect();
                for (&from, &to) in offsets(&shape, &keep).iter().zip(&offsets(&new, &keep)) {
                    m[to * t..(to + 1) * t].copy_from_slice(&model[from * t..(from + 1) * t]);
                }
                model = m;
            }
            3 if ndim > 0 => {
                let row = shape[1..].iter().product::<u64>() as usize * t;
                let k = below(&mut b, 4) as usize;
                let rows: Vec<u8> = (0..k * row).map(|_| rng.next_u64() as u8).collect();
                a.append(&rows).expect("append");
                if row > 0 {
                    model.extend_from_slice(&rows);
                }
            }
            _ => {
                let frame = a.to_cframe().expect("to_cframe");
                a = NdArray::from_schunk(SChunk::from_cframe(&frame).expect("reopen")).expect("still an array");
                a.set_nthreads(nthreads);
            }
        }
        assert_eq!(a.to_vec().expect("full read"), model, "array differs from the model (shape {:?})", a.shape());
    }
}

/// Seeds: frames of a few arrays (nd_open) and a few op scripts (nd_slices).
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let mut out = Vec::new();
    for (name, shape, chunks, blocks, t) in [
        ("2d-edges", vec![10u64, 7], vec![4u64, 3], vec![2u64, 2], 4usize),
        ("3d", vec![5, 6, 7], vec![2, 4, 3], vec![1, 3, 2], 8),
        ("0d", vec![], vec![], vec![], 2),
        ("empty-axis", vec![3, 0], vec![2, 1], vec![1, 1], 1),
    ] {
        let g = Geometry::new(&shape, &chunks, &blocks, t).expect("seed geometry");
        let data: Vec<u8> = (0..g.nitems as usize * t).map(|i| (i * 37 % 251) as u8).collect();
        let s = SChunk::new(CParams { typesize: t, nthreads: 1, ..CParams::default() }, DParams { nthreads: 1 })
            .expect("schunk");
        let a = NdArray::from_buffer(s, g, Some("<u4"), &data).expect("seed array");
        out.push(("nd_open", format!("seed-{name}"), a.to_cframe().expect("seed frame")));
    }
    for (name, script) in [
        (
            "2d-ops",
            vec![2u8, 20, 5, 3, 9, 4, 2, 2, 0, 0, 3, 9, 2, 1, 1, 2, 3, 1, 0, 1, 5, 2, 7, 1, 3, 2, 4, 0, 0, 9, 1],
        ),
        ("3d-ops", vec![3, 5, 2, 1, 6, 3, 2, 7, 7, 3, 1, 1, 4, 0, 0, 1, 2, 3, 1, 2, 1, 1, 0, 3, 3, 1, 2, 2, 1, 5, 5]),
        ("1d-append", vec![1, 0, 5, 2, 0, 1, 0, 3, 2, 3, 3, 3, 1, 0, 0, 0, 0, 9, 9, 2, 4, 0, 0, 0, 1]),
        ("0d", vec![0, 3, 1, 0, 1, 4, 1, 0]),
    ] {
        out.push(("nd_slices", format!("seed-{name}"), script));
    }
    out
}

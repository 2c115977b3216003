//! The ZFP codecs on their own; python/tests/test_zfp.py checks them against the wheel.

use super::*;

fn to_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn from_bytes(b: &[u8]) -> Vec<f64> {
    b.chunks_exact(8).map(|c| f64::from_le_bytes(c.try_into().unwrap())).collect()
}

fn field(shape: &[usize]) -> Vec<f64> {
    let n: usize = shape.iter().product();
    (0..n).map(|i| ((i as f64) * 0.37).sin() * 100.0 + (i % 7) as f64).collect()
}

fn pack(mode: Mode, meta: u8, shape: &[usize], src: &[u8]) -> Vec<u8> {
    let mut dst = vec![0u8; src.len() * 4 + 64];
    let n = compress(mode, meta, 8, shape, src, &mut dst);
    assert!(n > 0, "{mode:?} {meta} {shape:?}");
    dst.truncate(n);
    dst
}

/// Known answer from python-blosc2 4.14.1: four 1.0 doubles in a 1-D block, ZFP_PREC meta
/// 12: the block flag, exponent 1024, and the bit planes of coefficient 2^61.
#[test]
fn known_stream_from_the_wheel() {
    let src = to_bytes(&[1.0; 4]);
    let s = pack(Mode::Precision, 12, &[4], &src);
    assert_eq!(s, [0x01, 0x68, 0x01, 0, 0, 0, 0, 0]);
    let mut back = vec![0u8; 32];
    decompress(Mode::Precision, 12, 8, &[4], &s, &mut back).unwrap();
    assert_eq!(back, src);
}

#[test]
fn modes_round_trip_within_their_bounds() {
    for shape in [&[37][..], &[9, 13], &[5, 6, 7], &[4, 5, 6, 7]] {
        let v = field(shape);
        let src = to_bytes(&v);
        for meta in [0u8, 254, 252] {
            // Accuracy: error at most the tolerance 10^meta.
            let s = pack(Mode::Accuracy, meta, shape, &src);
            let mut back = vec![0u8; src.len()];
            decompress(Mode::Accuracy, meta, 8, shape, &s, &mut back).unwrap();
            let tol = 10f64.powi(i32::from(meta as i8));
            let err = v.iter().zip(from_bytes(&back)).map(|(a, b)| (a - b).abs()).fold(0.0, f64::max);
            assert!(err <= tol, "{shape:?} meta {meta}: {err} > {tol}");
        }
        // Rate: exactly the fixed number of bits per block, word-padded.
        let s = pack(Mode::Rate, 25, shape, &src);
        let blocks: usize = shape.iter().map(|d| d.div_ceil(4)).product();
        let bits = ((1usize << (2 * shape.len())) * 25 * 64).div_ceil(100);
        assert_eq!(s.len(), (blocks * bits).div_ceil(64) * 8, "{shape:?}");
        // Full precision reproduces doubles closely.
        let s = pack(Mode::Precision, 64, shape, &src);
        let mut back = vec![0u8; src.len()];
        decompress(Mode::Precision, 64, 8, shape, &s, &mut back).unwrap();
        assert!(v.iter().zip(from_bytes(&back)).all(|(a, b)| (a - b).abs() <= 1e-9 * a.abs().max(1.0)));
    }
}

#[test]
fn float32_round_trips() {
    let v: Vec<f32> = (0..30 * 17).map(|i| (i as f32 * 0.1).cos()).collect();
    let src: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
    let mut dst = vec![0u8; src.len()];
    let n = compress(Mode::Accuracy, 253, 4, &[30, 17], &src, &mut dst);
    assert!(n > 0 && n < src.len());
    let mut back = vec![0u8; src.len()];
    decompress(Mode::Accuracy, 253, 4, &[30, 17], &dst[..n], &mut back).unwrap();
    let got: Vec<f32> = back.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect();
    assert!(v.iter().zip(&got).all(|(a, b)| (a - b).abs() <= 1e-3));
}

/// A stream that does not fit the budget reports 0 (the engine stores the block raw).
#[test]
fn too_small_budget_gives_zero() {
    let src = to_bytes(&field(&[16, 16]));
    let mut dst = vec![0u8; 64];
    assert_eq!(compress(Mode::Precision, 64, 8, &[16, 16], &src, &mut dst), 0);
}

/// Truncated, empty and garbage streams are errors or some values, never a panic or a read
/// past the input.
#[test]
fn bad_streams_are_errors() {
    let shape = [12, 10];
    let src = to_bytes(&field(&shape));
    for mode in [Mode::Accuracy, Mode::Precision, Mode::Rate] {
        let meta = if mode == Mode::Accuracy { 254 } else { 40 };
        let s = pack(mode, meta, &shape, &src);
        let mut back = vec![0u8; src.len()];
        for cut in [0, 1, 8, s.len() / 2, s.len() - 8] {
            let e = decompress(mode, meta, 8, &shape, &s[..cut], &mut back)
                .expect_err(&format!("{mode:?} cut {cut} of {}", s.len()));
            assert!(e.contains("truncated or corrupt"), "{e}");
        }
        for seed in 0..50u64 {
            let junk: Vec<u8> = (0..s.len())
                .map(|i| (seed.wrapping_mul(31).wrapping_add(i as u64 * 0x9E37)).to_le_bytes()[1])
                .collect();
            let _ = decompress(mode, meta, 8, &shape, &junk, &mut back);
            let _ = decompress(mode, meta, 4, &shape, &junk, &mut back[..src.len() / 2]);
        }
    }
}

#[test]
fn unsupported_parameters_are_clear_errors() {
    let z = Zfp(Mode::Rate);
    let p = |typesize, blockshape: &'static [usize]| CodecParams {
        clevel: 5,
        meta: 50,
        typesize,
        block: 0,
        dict: None,
        blockshape,
        blosc1: false,
    };
    let mut dst = vec![0u8; 4096];
    let e = |r: Result<usize, String>| r.unwrap_err();
    assert!(e(z.encode(&p(2, &[16, 16]), &[0; 512], &mut dst)).contains("4- or 8-byte items"));
    assert!(e(z.encode(&p(4, &[]), &[0; 1024], &mut dst)).contains("needs a b2nd array"));
    assert!(e(z.encode(&p(4, &[4, 4, 4, 4, 4]), &[0; 4096], &mut dst)).contains("1- to 4-dimensional"));
    assert!(e(z.encode(&p(4, &[3, 64]), &[0; 768], &mut dst)).contains("at least 4"));
    assert!(e(z.encode(&p(4, &[16, 16]), &[0; 1000], &mut dst)).contains("does not match"));
    assert!(z.decode(&p(8, &[16, 16]), &[0; 8], &mut [0; 1024]).unwrap_err().contains("does not match"));
}

//! The scan against a plain loop over the same rows: conditions from the expression engine,
//! validity, outputs, edge blocks, skipping on and off, threads, and layout errors.

use oxblosc_chunk::{CParams, DParams};
use oxblosc_frame::SChunk;
use oxblosc_nd::{Geometry, NdArray};
use oxblosc_table::filter::Condition;
use oxblosc_table::kind::DType;
use oxblosc_table::{run, stats, Column, Kind, Scan};

fn array(data: &[u8], ts: usize, dtype: &str, chunk: u64, block: u64) -> NdArray {
    let n = (data.len() / ts) as u64;
    let cp = CParams { typesize: ts, clevel: 5, ..CParams::default() };
    let g = Geometry::new(&[n], &[chunk], &[block], ts).unwrap();
    NdArray::from_buffer(SChunk::new(cp, DParams { nthreads: 1 }).unwrap(), g, Some(dtype), data).unwrap()
}

fn bytes<T: Copy>(v: &[T], f: impl Fn(T) -> Vec<u8>) -> Vec<u8> {
    v.iter().flat_map(|&x| f(x)).collect()
}

struct Fixture {
    k: Vec<i64>,
    x: Vec<f32>,
    valid: Vec<bool>,
    ka: NdArray,
    xa: NdArray,
    va: NdArray,
    kstats: Vec<u8>,
    xstats: Vec<u8>,
}

fn fixture(n: usize, chunk: u64, block: u64) -> Fixture {
    let k: Vec<i64> = (0..n as i64).collect();
    let x: Vec<f32> = (0..n).map(|i| if i % 11 == 0 { f32::NAN } else { ((i * 37) % 101) as f32 - 50.0 }).collect();
    let valid: Vec<bool> = (0..n).map(|i| i % 13 != 5).collect();
    let kb = bytes(&k, |v| v.to_le_bytes().to_vec());
    let xb = bytes(&x, |v| v.to_le_bytes().to_vec());
    let vb: Vec<u8> = valid.iter().map(|&b| b as u8).collect();
    Fixture {
        kstats: stats::summarize(Kind::Typed(DType::I64), &kb, block as usize),
        xstats: stats::summarize(Kind::Typed(DType::F32), &xb, block as usize),
        ka: array(&kb, 8, "<i8", chunk, block),
        xa: array(&xb, 4, "<f4", chunk, block),
        va: array(&vb, 1, "|b1", chunk, block),
        k,
        x,
        valid,
    }
}

fn query(f: &Fixture, text: &str, skip: bool, nthreads: usize) -> oxblosc_table::Found {
    let columns = vec![
        Column { name: "k", arr: &f.ka, kind: Kind::Typed(DType::I64), stats: Some(&f.kstats) },
        Column { name: "x", arr: &f.xa, kind: Kind::Typed(DType::F32), stats: Some(&f.xstats) },
    ];
    let cond = Condition::compile(text, &[("k", Kind::Typed(DType::I64)), ("x", Kind::Typed(DType::F32))]).unwrap();
    let inputs = cond.inputs().iter().map(|n| if n == "k" { 0 } else { 1 }).collect();
    let scan = Scan {
        columns,
        inputs,
        outputs: vec![1],
        valid: Some(&f.va),
        nrows: f.k.len() as u64,
        nthreads,
        skip,
        positions: true,
    };
    run(&scan, &cond).unwrap()
}

#[test]
fn matches_a_plain_loop_with_and_without_skipping() {
    for (n, chunk, block) in [(1000usize, 128u64, 32u64), (1, 64, 64), (0, 64, 16), (777, 100, 25), (4096, 4096, 512)] {
        let f = fixture(n, chunk, block);
        let cases: [(&str, &dyn Fn(usize) -> bool); 3] = [
            ("(k >= 300) & (k < 420)", &|i| (300..420).contains(&i)),
            ("(x > 10) | isnan(x)", &|i| f.x[i] > 10.0 || f.x[i].is_nan()),
            ("(x * 2 < -50) & (k % 3 == 0)", &|i| f.x[i] * 2.0 < -50.0 && f.k[i] % 3 == 0),
        ];
        for (text, want) in cases {
            let expect: Vec<u64> = (0..n).filter(|&i| f.valid[i] && want(i)).map(|i| i as u64).collect();
            for threads in [1, 2] {
                let on = query(&f, text, true, threads);
                let off = query(&f, text, false, threads);
                assert_eq!(on.positions, expect, "{text} n={n}");
                assert_eq!(off.positions, expect, "{text} n={n} without skipping");
                assert_eq!(on.count, expect.len() as u64);
                let xs: Vec<u8> = expect.iter().flat_map(|&i| f.x[i as usize].to_le_bytes()).collect();
                assert_eq!(on.values[0], xs);
                assert_eq!(off.blocks_skipped, 0);
            }
        }
        if n == 1000 {
            // k is sorted: the range condition reads only the blocks holding 300..420.
            let r = query(&f, "(k >= 300) & (k < 420)", true, 1);
            assert_eq!(r.blocks_scanned, 5, "blocks 9..=13 of 32 rows");
            assert_eq!(r.blocks_skipped, 32 - 5);
        }
    }
}

#[test]
fn layout_errors_name_the_column() {
    let f = fixture(1000, 128, 32);
    let short = array(&[0u8; 40], 4, "<f4", 128, 32);
    let other_grid = array(&vec![0u8; 4000], 4, "<f4", 256, 32);
    for (arr, msg) in [(&short, "holds 10 rows"), (&other_grid, "differ")] {
        let scan = Scan {
            columns: vec![
                Column { name: "k", arr: &f.ka, kind: Kind::Typed(DType::I64), stats: None },
                Column { name: "y", arr, kind: Kind::Typed(DType::F32), stats: None },
            ],
            inputs: vec![0],
            outputs: vec![1],
            valid: None,
            nrows: 1000,
            nthreads: 1,
            skip: true,
            positions: false,
        };
        let cond = Condition::compile("k > 5", &[("k", Kind::Typed(DType::I64))]).unwrap();
        let e = run(&scan, &cond).unwrap_err().to_string();
        assert!(e.contains("\"y\"") && e.contains(msg), "{e}");
    }
}

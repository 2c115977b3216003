//! `expr_parse`: arbitrary text through the expression engine (issue 10).
//!
//! Input: byte 0 picks the row count and the data pattern, the rest is the expression text
//! (lossy UTF-8). Parsing and compiling never panic; a compiled program evaluates the same
//! with 1 and 2 threads and block by block; `may_match` with the data's own min/max is never
//! false when some row is true.

use oxblosc::expr::{parse, Column, ColumnRef, DType, ValueRange};

/// The columns every fuzz expression may use.
pub const COLUMNS: [(&str, DType); 8] = [
    ("a", DType::F32),
    ("b", DType::I32),
    ("c", DType::F64),
    ("d", DType::U8),
    ("e", DType::Bool),
    ("l", DType::I64),
    ("u", DType::U64),
    ("s", DType::Bytes(3)),
];

fn data(seed: u8, n: usize) -> Vec<Column> {
    let mut x = 0x9E37_79B9u32 ^ seed as u32;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        x
    };
    let f = [0.0, -0.0, 1.5, -2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 1e300, 3.0, 7.0];
    let mut cols: Vec<Column> = COLUMNS.iter().map(|(_, dt)| Column::zeros(*dt, n)).collect();
    for i in 0..n {
        let r = next();
        let k = r as usize % f.len();
        if let Column::F32(v) = &mut cols[0] {
            v[i] = f[k] as f32;
        }
        if let Column::I32(v) = &mut cols[1] {
            v[i] = [0, 1, -1, 7, i32::MIN, i32::MAX, 3, -40][r as usize % 8];
        }
        if let Column::F64(v) = &mut cols[2] {
            v[i] = f[(k + 3) % f.len()];
        }
        if let Column::U8(v) = &mut cols[3] {
            v[i] = (r >> 8) as u8;
        }
        if let Column::Bool(v) = &mut cols[4] {
            v[i] = r & 1 == 1;
        }
        if let Column::I64(v) = &mut cols[5] {
            v[i] = [0, -1, i64::MIN, i64::MAX, 5][r as usize % 5];
        }
        if let Column::U64(v) = &mut cols[6] {
            v[i] = [0, 1, u64::MAX, 1 << 63][r as usize % 4];
        }
        if let Column::Bytes { data, .. } = &mut cols[7] {
            data[3 * i..3 * i + 3].copy_from_slice([b"ab\0", b"abc", b"\0\0\0", b"zz\0"][r as usize % 4]);
        }
    }
    cols
}

/// Equal rows, any NaN equal to any NaN: the sign and payload of a NaN made from NaN inputs
/// depend on operand order, which vector and scalar loops may swap (NumPy is the same).
fn same_rows(a: &Column, b: &Column) -> bool {
    match (a, b) {
        (Column::F32(x), Column::F32(y)) => {
            x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits() || p.is_nan() && q.is_nan())
        }
        (Column::F64(x), Column::F64(y)) => {
            x.iter().zip(y).all(|(p, q)| p.to_bits() == q.to_bits() || p.is_nan() && q.is_nan())
        }
        _ => a.as_ref().as_bytes() == b.as_ref().as_bytes(),
    }
}

pub fn fuzz_expr_parse(input: &[u8]) {
    let Some((&seed, text)) = input.split_first() else { return };
    let text = String::from_utf8_lossy(text);
    let Ok(expr) = parse(&text) else { return };
    let _ = expr.names();
    let Ok(prog) = expr.compile_columns(&COLUMNS) else { return };
    let n = (seed % 16) as usize;
    let cols = data(seed, n);
    let inputs: Vec<ColumnRef<'_>> = prog
        .inputs()
        .iter()
        .map(|name| cols[COLUMNS.iter().position(|(c, _)| c == name).expect("known column")].as_ref())
        .collect();
    let mut one = Column::zeros(prog.dtype(), n);
    let r1 = prog.eval_into(&inputs, one.as_mut());
    let mut two = Column::zeros(prog.dtype(), n);
    let r2 = prog.eval_par(&inputs, two.as_mut(), 2);
    assert_eq!(r1.is_ok(), r2.is_ok(), "1 and 2 threads disagree on success for {text:?}");
    if r1.is_err() {
        return;
    }
    assert!(same_rows(&one, &two), "1 and 2 threads differ for {text:?}");
    // Two halves evaluated separately give the same rows (rows never influence each other).
    let k = n / 2;
    if k > 1 && n - k > 1 {
        let mut parts = Column::zeros(prog.dtype(), n);
        {
            let mut out = parts.as_mut();
            let lo: Vec<ColumnRef<'_>> = inputs.iter().map(|c| c.slice(0, k)).collect();
            let hi: Vec<ColumnRef<'_>> = inputs.iter().map(|c| c.slice(k, n)).collect();
            prog.eval_into(&lo, out.slice_mut(0, k)).expect("first half");
            prog.eval_into(&hi, out.slice_mut(k, n)).expect("second half");
        }
        assert!(same_rows(&parts, &one), "halves differ for {text:?}");
    }
    if let Column::Bool(rows) = &one {
        if rows.iter().any(|&b| b) {
            let ranges: Vec<ValueRange> = inputs.iter().map(|c| ValueRange::of_column(*c)).collect();
            assert!(prog.may_match(&ranges), "may_match skipped a matching block for {text:?}: {ranges:?}");
        }
    }
}

/// Seed expressions: the table benchmark's six queries and a sample of the grammar.
pub fn seeds() -> Vec<(&'static str, String, Vec<u8>)> {
    let texts = [
        "(a > 1.5) & (c < 3.0)",
        "a > 2",
        "(a > 0) & (a < 5) & (c > -1) & (c < 2) & (b > 3)",
        "(b >= 0) & (b < 7) & (d > 100)",
        "(c < -2) | (a > 3)",
        "(a * a + 0.5 * c) > 4",
        "where(e, b // 3, l % -7) != u",
        "sqrt(abs(a)) ** 2 + arctan2(c, 2) <= floor(d / 3)",
        "not e and (s == 'ab' or s >= b'zz')",
        "~(b & 6 | d ^ 3) > -5 < l",
        "minimum(a, c) == maximum(a, nan) or isnan(c) or isinf(a) and isfinite(-inf)",
        "fmod(l, 0) + u * 2 - (b ** 2)",
        "1 + 2 * 3 ** 2 // 4 % 5 - 0x1f + 0b101 + 1_000 + 1e3 + .5",
    ];
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut v = vec![(i * 37 + 11) as u8];
            v.extend_from_slice(t.as_bytes());
            ("expr_parse", format!("seed-{i:02}"), v)
        })
        .collect()
}

//! NumPy 2 semantics of the operators, functions and types, and the evaluation paths
//! (sub-blocks, broadcasting, threads) agreeing with each other.

use oxblosc_expr::{evaluate, parse, Column, ColumnMut, ColumnRef, DType, Scratch, ValueRange, SUB};

fn eval(text: &str, cols: &[(&str, ColumnRef<'_>)]) -> Column {
    evaluate(text, cols, 1).unwrap_or_else(|e| panic!("{text}: {e}"))
}

fn dtype_of(text: &str, cols: &[(&str, DType)]) -> DType {
    parse(text).unwrap().compile_columns(cols).unwrap_or_else(|e| panic!("{text}: {e}")).dtype()
}

#[test]
fn nep50_result_types() {
    use DType::*;
    let cols = [("f", F32), ("d", F64), ("b", I8), ("ub", U8), ("i", I32), ("l", I64), ("ul", U64), ("q", Bool)];
    for (text, want) in [
        ("f + 1", F32),
        ("f + 1.5", F32),
        ("b + 1", I8),
        ("b + 1.0", F64),
        ("q + 1", I64),
        ("q + q", Bool),
        ("b + ub", I16),
        ("l + ul", F64),
        ("i + f", F64),
        ("b * f", F32),
        ("i / i", F64),
        ("b / b", F64),
        ("f / 2", F32),
        ("q // q", I8),
        ("b ** 2", I8),
        ("f > 0.1", Bool),
        ("sqrt(i)", F64),
        ("sqrt(b)", F32),
        ("sqrt(4)", F64),
        ("floor(i)", I32),
        ("abs(b)", I8),
        ("where(q, f, 0)", F32),
        ("where(q, b, 1)", I8),
        ("where(q, 1, 2)", I64),
        ("arctan2(f, 2.0)", F32),
        ("fmod(b, 3)", I8),
        ("minimum(ub, 1)", U8),
        ("1 + 2", I64),
        ("1 / 2", F64),
        ("True", Bool),
        ("isnan(i)", Bool),
        ("~b", I8),
        ("l & 3", I64),
    ] {
        assert_eq!(dtype_of(text, &cols), want, "{text}");
    }
}

#[test]
fn integer_rules_match_numpy() {
    let a: Vec<i8> = vec![-128, -7, 7, 127, 0, 5];
    let z: Vec<i8> = vec![0, 2, -2, 1, 0, -3];
    let cols = [("a", ColumnRef::I8(&a)), ("z", ColumnRef::I8(&z))];
    assert_eq!(eval("a + 1", &cols), Column::I8(vec![-127, -6, 8, -128, 1, 6]));
    assert_eq!(eval("-a", &cols), Column::I8(vec![-128, 7, -7, -127, 0, -5]));
    assert_eq!(eval("abs(a)", &cols), Column::I8(vec![-128, 7, 7, 127, 0, 5]));
    // Floor division and modulo take the divisor's sign; by zero they give 0.
    assert_eq!(eval("a // z", &cols), Column::I8(vec![0, -4, -4, 127, 0, -2]));
    assert_eq!(eval("a % z", &cols), Column::I8(vec![0, 1, -1, 0, 0, -1]));
    assert_eq!(eval("fmod(a, z)", &cols), Column::I8(vec![0, -1, 1, 0, 0, 2]));
    assert_eq!(eval("a ** 2", &cols), Column::I8(vec![0, 49, 49, 1, 0, 25]));
    assert_eq!(eval("a / z", &cols).dtype(), DType::F64);
    // Exact comparisons with out-of-range Python ints.
    assert_eq!(eval("a < 300", &cols), Column::Bool(vec![true; 6]));
    assert_eq!(eval("a == -129", &cols), Column::Bool(vec![false; 6]));
    assert_eq!(eval("-1000 < a", &cols), Column::Bool(vec![true; 6]));
    let e = evaluate("a ** z", &cols, 1).unwrap_err();
    assert!(e.to_string().contains("negative integer powers"), "{e}");
    let u: Vec<u64> = vec![u64::MAX, 0];
    assert_eq!(eval("u + 1", &[("u", ColumnRef::U64(&u))]), Column::U64(vec![0, 1]));
    assert_eq!(eval("u == 18446744073709551615", &[("u", ColumnRef::U64(&u))]), Column::Bool(vec![true, false]));
}

#[test]
fn float_rules_match_numpy() {
    let x: Vec<f64> = vec![f64::NAN, 1.0, -0.0, f64::INFINITY, -7.5, 7.5];
    let y: Vec<f64> = vec![1.0, f64::NAN, 0.0, 2.0, 2.0, -2.0];
    let cols = [("x", ColumnRef::F64(&x)), ("y", ColumnRef::F64(&y))];
    assert_eq!(eval("x < y", &cols), Column::Bool(vec![false, false, false, false, true, false]));
    assert_eq!(eval("x != y", &cols), Column::Bool(vec![true, true, false, true, true, true]));
    let Column::F64(m) = eval("x % y", &cols) else { panic!() };
    assert!(m[0].is_nan() && m[1].is_nan() && m[2].is_nan() && m[3].is_nan());
    assert_eq!((m[4], m[5]), (0.5, -0.5));
    let Column::F64(f) = eval("x // y", &cols) else { panic!() };
    assert_eq!((f[4], f[5]), (-4.0, -4.0));
    assert!(f[2].is_nan());
    let Column::F64(mn) = eval("minimum(x, y)", &cols) else { panic!() };
    assert!(mn[0].is_nan() && mn[1].is_nan());
    assert_eq!(eval("isnan(x) | isinf(x)", &cols), Column::Bool(vec![true, false, false, true, false, false]));
    assert_eq!(eval("where(x > 0, x, y) > 1", &cols), Column::Bool(vec![false, false, false, true, true, true]));
    // nan/inf names and float32 comparisons in float32 (NEP 50).
    let f: Vec<f32> = vec![0.1, 0.2];
    assert_eq!(eval("f == 0.1", &[("f", ColumnRef::F32(&f))]), Column::Bool(vec![true, false]));
    assert_eq!(eval("f < inf", &[("f", ColumnRef::F32(&f))]), Column::Bool(vec![true, true]));
    assert_eq!(eval("f != nan", &[("f", ColumnRef::F32(&f))]), Column::Bool(vec![true, true]));
}

#[test]
fn logic_chains_bools_and_bytes() {
    let t: Vec<i32> = (0..10).collect();
    let q: Vec<bool> = (0..10).map(|i| i % 3 == 0).collect();
    let cols = [("t", ColumnRef::I32(&t)), ("q", ColumnRef::Bool(&q))];
    let want: Vec<bool> = (0..10).map(|i| 2 < i && i <= 6).collect();
    assert_eq!(eval("2 < t <= 6", &cols), Column::Bool(want.clone()));
    assert_eq!(eval("(t > 2) and not (t > 6)", &cols), Column::Bool(want));
    let want: Vec<bool> = (0..10).map(|i| (i % 3 == 0) != (i > 4)).collect();
    assert_eq!(eval("q ^ (t > 4)", &cols), Column::Bool(want));
    assert_eq!(eval("q + q", &cols), Column::Bool(q.clone()));
    assert_eq!(eval("t & 6", &cols), Column::I32((0..10).map(|i| i & 6).collect()));
    assert_eq!(eval("~t", &cols), Column::I32((0..10).map(|i| !i).collect()));
    let names = b"abc\0abd\0ab\0\0zz\0\0";
    let cols = [("s", ColumnRef::Bytes { width: 4, data: names })];
    assert_eq!(eval("s == 'ab'", &cols), Column::Bool(vec![false, false, true, false]));
    assert_eq!(eval("s >= b'abd'", &cols), Column::Bool(vec![false, true, false, true]));
    assert_eq!(eval("'abc' == s", &cols), Column::Bool(vec![true, false, false, false]));
}

#[test]
fn blocks_threads_and_broadcast_agree() {
    // Ragged length across many sub-blocks and parallel tasks.
    let n = 3 * oxblosc_expr::PAR_ROWS + SUB + 17;
    let a: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 10.0).collect();
    let b: Vec<i32> = (0..n).map(|i| (i % 977) as i32 - 400).collect();
    let one = [2.5f32];
    let prog = parse("where(b > 0, a * k + b, sqrt(a) - b) > 40").unwrap();
    let prog = prog.compile_columns(&[("a", DType::F32), ("b", DType::I32), ("k", DType::F32)]).unwrap();
    assert_eq!(prog.inputs(), ["b", "a", "k"]);
    let inputs = [ColumnRef::I32(&b), ColumnRef::F32(&a), ColumnRef::F32(&one)];
    let mut serial = vec![false; n];
    let mut scratch = Scratch::new();
    prog.eval_with(&mut scratch, &inputs, ColumnMut::Bool(&mut serial)).unwrap();
    for i in [0, 1, SUB - 1, SUB, n - 1] {
        let v = if b[i] > 0 { a[i] * 2.5 + b[i] as f32 } else { a[i].sqrt() - b[i] as f32 };
        assert_eq!(serial[i], (v as f64) > 40.0, "row {i}");
    }
    for threads in [2, 3] {
        let mut par = vec![false; n];
        prog.eval_par(&inputs, ColumnMut::Bool(&mut par), threads).unwrap();
        assert!(par == serial, "{threads} threads differ");
    }
    // Empty and one-row inputs.
    let mut empty: Vec<bool> = vec![];
    prog.eval_par(&[ColumnRef::I32(&[]), ColumnRef::F32(&[]), ColumnRef::F32(&one)], ColumnMut::Bool(&mut empty), 2)
        .unwrap();
    let mut col = Column::Bool(vec![]);
    prog.eval(&[ColumnRef::I32(&[1]), ColumnRef::F32(&[100.0]), ColumnRef::F32(&one)], &mut col).unwrap();
    assert_eq!(col, Column::Bool(vec![true]));
    // Wrong inputs are errors naming the column.
    let e = prog.eval(&[ColumnRef::I32(&[1]), ColumnRef::F64(&[1.0]), ColumnRef::F32(&one)], &mut col).unwrap_err();
    assert_eq!(e.column_name(), Some("a"));
    let short = [ColumnRef::I32(&b[..4]), ColumnRef::F32(&a[..5]), ColumnRef::F32(&one)];
    let e = prog.eval_into(&short, ColumnMut::Bool(&mut [false; 5])).unwrap_err();
    assert_eq!(e.column_name(), Some("b"), "{e}");
}

#[test]
fn may_match_skips_only_what_cannot_match() {
    let cols = [("lat", DType::F32), ("time", DType::I32), ("wind", DType::F32), ("precip", DType::F32)];
    let p = |t: &str| parse(t).unwrap().compile_columns(&cols).unwrap();
    let q = p("(time >= 40) & (time < 50) & (lat > 45)");
    assert!(!q.may_match(&[ValueRange::int(0, 39), ValueRange::float(0.0, 90.0, false)]));
    assert!(!q.may_match(&[ValueRange::int(50, 60), ValueRange::float(0.0, 90.0, false)]));
    assert!(!q.may_match(&[ValueRange::int(40, 60), ValueRange::float(0.0, 45.0, false)]));
    assert!(q.may_match(&[ValueRange::int(49, 60), ValueRange::float(0.0, 45.5, false)]));
    // NaN can only make `!=` true.
    assert!(!p("lat > 10").may_match(&[ValueRange::float(f64::NAN, f64::NAN, true)]));
    assert!(p("lat != 10").may_match(&[ValueRange::float(f64::NAN, f64::NAN, true)]));
    assert!(p("~(lat > 10)").may_match(&[ValueRange::float(20.0, 30.0, true)]));
    let q6 = p("(wind * wind + 0.5 * precip) > 100");
    assert!(!q6.may_match(&[ValueRange::float(0.0, 9.0, false), ValueRange::float(0.0, 3.0, false)]));
    assert!(q6.may_match(&[ValueRange::float(0.0, 9.99, false), ValueRange::float(0.0, 3.0, false)]));
}

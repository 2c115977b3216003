use oxblosc_expr::{evaluate, parse, Column, ColumnRef, DType, ValueRange};

#[test]
fn bench_queries_evaluate() {
    let n: usize = 10_000;
    let wind: Vec<f32> = (0..n).map(|i| (i % 100) as f32 * 0.2).collect();
    let pressure: Vec<f32> = (0..n).map(|i| 990.0 + (i % 37) as f32).collect();
    let time: Vec<i32> = (0..n).map(|i| (i / 100) as i32).collect();
    let cols = [("wind", ColumnRef::F32(&wind)), ("pressure", ColumnRef::F32(&pressure)), ("time", ColumnRef::I32(&time))];
    let out = evaluate("(wind > 12.5) & (pressure < 1000.5) | (time >= 40) & (time < 50)", &cols, 2).unwrap();
    let Column::Bool(m) = out else { panic!("bool expected") };
    for i in 0..n {
        let want = (wind[i] > 12.5 && pressure[i] < 1000.5) || (time[i] >= 40 && time[i] < 50);
        assert_eq!(m[i], want, "row {i}");
    }
    let out = evaluate("(wind * wind + 0.5 * wind) > 10", &cols, 1).unwrap();
    assert_eq!(out.dtype(), DType::Bool);
    let p = parse("(time >= 40) & (time < 50)").unwrap().compile_columns(&[("time", DType::I32)]).unwrap();
    assert!(!p.may_match(&[ValueRange::int(0, 39)]));
    assert!(p.may_match(&[ValueRange::int(0, 40)]));
}

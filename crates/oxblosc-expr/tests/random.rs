//! Random expressions over random blocks: the vector paths equal row-by-row evaluation
//! (one-row inputs take the broadcast paths), threads change nothing, and `may_match`
//! with the block's own min/max never skips a block that has a matching row.

use oxblosc_expr::{parse, Column, ColumnRef, DType, ValueRange};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a, T>(&mut self, v: &'a [T]) -> &'a T {
        &v[self.next() as usize % v.len()]
    }
}

const COLS: [(&str, DType); 6] =
    [("a", DType::F32), ("b", DType::I32), ("c", DType::F64), ("d", DType::U8), ("e", DType::Bool), ("l", DType::I64)];

fn expr(r: &mut Rng, depth: u32) -> String {
    if depth == 0 || r.next().is_multiple_of(4) {
        return r.pick(&["a", "b", "c", "d", "e", "l", "3", "-2", "0.5", "1e3", "nan", "inf", "True", "0"]).to_string();
    }
    let (x, y) = (expr(r, depth - 1), expr(r, depth - 1));
    match r.next() % 5 {
        0 | 1 => {
            let op = r.pick(&["+", "-", "*", "/", "//", "%", "**", "&", "|", "^", "<", "<=", ">", ">=", "==", "!="]);
            format!("({x} {op} {y})")
        }
        2 => format!("{}({x})", r.pick(&["-", "~", "abs", "sqrt", "floor", "isnan", "exp", "sin", "log"])),
        3 => format!("{}({x}, {y})", r.pick(&["minimum", "maximum", "fmod", "arctan2"])),
        _ => format!("where({}, {x}, {y})", expr(r, depth - 1)),
    }
}

fn column(r: &mut Rng, dt: DType, n: usize) -> Column {
    let f = [0.0, -0.0, 1.5, -2.5, f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 3.0, 100.0, -7.0];
    let mut c = Column::zeros(dt, n);
    match &mut c {
        Column::F32(v) => v.iter_mut().for_each(|x| *x = *r.pick(&f) as f32),
        Column::F64(v) => v.iter_mut().for_each(|x| *x = *r.pick(&f)),
        Column::I32(v) => v.iter_mut().for_each(|x| *x = *r.pick(&[0, 1, -1, 3, 7, -40, i32::MIN, i32::MAX])),
        Column::I64(v) => v.iter_mut().for_each(|x| *x = *r.pick(&[0, 2, -5, i64::MIN, i64::MAX])),
        Column::U8(v) => v.iter_mut().for_each(|x| *x = r.next() as u8),
        Column::Bool(v) => v.iter_mut().for_each(|x| *x = r.next().is_multiple_of(2)),
        _ => unreachable!(),
    }
    c
}

#[test]
fn random_expressions_are_consistent() {
    let mut r = Rng(0x2545F4914F6CDD1D);
    let (mut checked, mut matched) = (0, 0);
    for _ in 0..1500 {
        let text = expr(&mut r, 4);
        let Ok(prog) = parse(&text).unwrap().compile_columns(&COLS) else { continue };
        let n = 1 + r.next() as usize % 40;
        let data: Vec<Column> = COLS.iter().map(|(_, dt)| column(&mut r, *dt, n)).collect();
        let inputs: Vec<ColumnRef<'_>> =
            prog.inputs().iter().map(|name| data[COLS.iter().position(|(c, _)| c == name).unwrap()].as_ref()).collect();
        let mut whole = Column::zeros(prog.dtype(), n);
        if prog.eval_into(&inputs, whole.as_mut()).is_err() {
            continue;
        }
        let mut par = Column::zeros(prog.dtype(), n);
        prog.eval_par(&inputs, par.as_mut(), 3).unwrap();
        assert_eq!(par.as_ref().as_bytes(), whole.as_ref().as_bytes(), "threads: {text}");
        let w = prog.dtype().itemsize();
        for i in 0..n {
            let row: Vec<ColumnRef<'_>> = inputs.iter().map(|c| c.slice(i, i + 1)).collect();
            let mut one = Column::zeros(prog.dtype(), 1);
            prog.eval_into(&row, one.as_mut()).unwrap();
            let (a, b) = (one.as_ref().as_bytes(), &whole.as_ref().as_bytes()[i * w..(i + 1) * w]);
            let both_nan = |x: &[u8], y: &[u8]| match prog.dtype() {
                DType::F32 => {
                    f32::from_ne_bytes(x.try_into().unwrap()).is_nan()
                        && f32::from_ne_bytes(y.try_into().unwrap()).is_nan()
                }
                DType::F64 => {
                    f64::from_ne_bytes(x.try_into().unwrap()).is_nan()
                        && f64::from_ne_bytes(y.try_into().unwrap()).is_nan()
                }
                _ => false,
            };
            assert!(
                a == b || both_nan(a, b),
                "row {i} of {text}: {:?} vs {:?}",
                one.as_ref().get(0),
                whole.as_ref().get(i)
            );
        }
        if let Column::Bool(rows) = &whole {
            let ranges: Vec<ValueRange> = inputs.iter().map(|c| ValueRange::of_column(*c)).collect();
            if rows.iter().any(|&b| b) {
                matched += 1;
                assert!(prog.may_match(&ranges), "may_match skipped a match: {text} {ranges:?}");
            }
        }
        checked += 1;
    }
    assert!(checked > 300 && matched > 50, "too few usable expressions: {checked} checked, {matched} matched");
}

//! Rows per second of a few expressions (release build): `cargo run --release -p oxblosc-expr --example throughput`.
use std::time::Instant;

use oxblosc_expr::{parse, ColumnMut, ColumnRef, DType};

fn main() {
    let n = 10_000_000usize;
    let a: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.01).collect();
    let b: Vec<f32> = (0..n).map(|i| (i % 777) as f32 * 0.02).collect();
    let t: Vec<i32> = (0..n).map(|i| (i / 10000) as i32).collect();
    let cols = [("a", DType::F32), ("b", DType::F32), ("t", DType::I32)];
    for text in ["a > 5", "(a > 5) & (b < 3)", "(t >= 400) & (t < 500) & (a > 8)", "(a * a + 0.5 * b) > 50", "a + b"] {
        let prog = parse(text).unwrap().compile_columns(&cols).unwrap();
        let inputs: Vec<ColumnRef<'_>> = prog
            .inputs()
            .iter()
            .map(|n| match n.as_str() {
                "a" => ColumnRef::F32(&a),
                "b" => ColumnRef::F32(&b),
                _ => ColumnRef::I32(&t),
            })
            .collect();
        let mut out = oxblosc_expr::Column::zeros(prog.dtype(), n);
        for threads in [1, 2] {
            let mut best = f64::MAX;
            for _ in 0..5 {
                let t0 = Instant::now();
                let o: ColumnMut<'_> = out.as_mut();
                prog.eval_par(&inputs, o, threads).unwrap();
                best = best.min(t0.elapsed().as_secs_f64());
            }
            println!("{text:40} {threads} thr: {:6.1} ms  {:.2} ns/row", best * 1e3, best * 1e9 / n as f64);
        }
    }
}

//! Hostile and wrong expressions give clear errors (position, name), fast, never a panic.

use oxblosc_expr::{parse, DType, ErrorKind, ExprError, MAX_DEPTH, MAX_NODES, MAX_TEXT_LEN};

const COLS: [(&str, DType); 4] =
    [("temperature", DType::F32), ("time", DType::I32), ("flag", DType::Bool), ("name", DType::Bytes(4))];

fn compile_err(text: &str) -> ExprError {
    match parse(text) {
        Err(e) => e,
        Ok(e) => e.compile_columns(&COLS).expect_err(text),
    }
}

#[test]
fn deep_nesting_is_refused() {
    for text in [
        format!("{}a{}", "(".repeat(100_000), ")".repeat(100_000)),
        format!("{}a", "-".repeat(90_000)),
        format!("{}a", "~".repeat(90_000)),
        format!("{}time", "not ".repeat(20_000)),
        format!("{}1{}", "sin(".repeat(20_000), ")".repeat(20_000)),
        format!("2{}", "**2".repeat(30_000)),
    ] {
        let e = parse(&text).expect_err("deep nesting");
        assert!(matches!(e.kind(), ErrorKind::Limit), "{e}");
        let m = e.to_string();
        assert!(m.contains(&format!("{MAX_DEPTH} levels")) || m.contains("tokens") || m.contains("bytes"), "{e}");
    }
    // Exactly at the limit it parses.
    let ok = format!("{}time{}", "(".repeat(MAX_DEPTH - 1), ")".repeat(MAX_DEPTH - 1));
    parse(&ok).unwrap().compile_columns(&COLS).unwrap();
}

#[test]
fn long_chains_are_bounded_by_nodes_not_the_stack() {
    // A left-deep chain has no parser recursion; it is limited by the node count.
    let n = MAX_NODES / 2 - 1;
    let text = vec!["time"; n].join("+");
    let prog = parse(&text).unwrap().compile_columns(&COLS).unwrap();
    assert_eq!(prog.dtype(), DType::I32);
    let text = vec!["time"; MAX_NODES].join("+");
    let e = parse(&text).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Limit) && e.to_string().contains("nodes"), "{e}");
    let e = parse(&"1+".repeat(MAX_TEXT_LEN)).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Limit) && e.to_string().contains("bytes"), "{e}");
}

#[test]
fn huge_literals() {
    let e = parse(&"9".repeat(5000)).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Limit), "{e}");
    let e = parse("time > 99999999999999999999999").unwrap_err();
    assert!(e.to_string().contains("does not fit in 64 bits") && e.offset() == Some(7), "{e}");
    let e = compile_err("time + 3000000000");
    assert!(e.to_string().contains("out of bounds for int32"), "{e}");
    assert!(matches!(e.kind(), ErrorKind::Overflow), "NumPy 2 raises OverflowError: {e}");
    // Comparisons with out-of-range ints are exact, not errors (NumPy 2).
    parse("time < 3000000000").unwrap().compile_columns(&COLS).unwrap();
    // Python's float('1e999') is inf: accepted.
    parse("temperature < 1e999").unwrap().compile_columns(&COLS).unwrap();
    let e = parse(&format!("name == '{}'", "x".repeat(10_000))).unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Limit), "{e}");
}

#[test]
fn unknown_names_suggest() {
    let e = compile_err("(temprature > 280) & (time < 5)");
    assert_eq!(e.kind(), &ErrorKind::UnknownName);
    assert_eq!(e.column_name(), Some("temprature"));
    assert_eq!(e.offset(), Some(1));
    assert!(e.to_string().contains("did you mean 'temperature'?"), "{e}");
    assert!(e.to_string().contains("\n    (temprature > 280)"), "{e}");
    assert!(e.to_string().contains("\n     ^^^^^^^^^^\n") || e.to_string().ends_with("\n     ^^^^^^^^^^"), "{e}");
    let e = compile_err("sine(time)");
    assert_eq!(e.function_name(), Some("sine"));
    assert!(e.to_string().contains("did you mean 'sin'?"), "{e}");
    let e = compile_err("sqrt + 1");
    assert!(e.to_string().contains("is a function"), "{e}");
}

#[test]
fn wrong_types_name_the_column() {
    let e = compile_err("temperature & 1");
    assert_eq!(e.kind(), &ErrorKind::Type);
    assert!(e.to_string().contains("'&' needs bool or integer operands, not float32"), "{e}");
    // The classic precedence trap gets a hint.
    let e = compile_err("time > 1 & temperature < 2");
    assert!(e.to_string().contains("bind tighter than comparisons"), "{e}");
    let e = compile_err("-flag");
    assert!(e.to_string().contains("boolean negative"), "{e}");
    let e = compile_err("~temperature");
    assert!(e.message().contains("float32"), "{e}");
    let e = compile_err("name + 1");
    assert_eq!(e.column_name(), Some("name"), "{e}");
    let e = compile_err("temperature == 'abc'");
    assert_eq!(e.column_name(), Some("temperature"), "{e}");
    // Found by the fuzzer: a literal against a string literal reached an internal assertion.
    for text in ["0 >= b'zz'", "'a' + 1.5", "True == 'x'", "where(flag, 'a', 1)", "sqrt('a')"] {
        assert_eq!(compile_err(text).kind(), &ErrorKind::Type, "{text}");
    }
    let e = compile_err("where(flag, 1)");
    assert!(e.to_string().contains("takes 3 argument"), "{e}");
    assert_eq!(e.function_name(), Some("where"));
}

#[test]
fn syntax_errors_point_at_the_problem() {
    for (text, at, what) in [
        ("time >", 6, "unexpected end"),
        ("(time > 1", 0, "missing ')'"),
        ("time > 1)", 8, "unmatched ')'"),
        ("time = 1", 5, "'=' is assignment"),
        ("time > 1 2", 9, "expected an operator"),
        ("time $ 2", 5, "unexpected character"),
        ("time << 2", 5, "not supported"),
        ("3j + time", 0, "complex"),
        ("name == 'abc", 8, "unterminated"),
        ("", 0, "unexpected end"),
        ("f(,)", 2, "unexpected ','"),
        ("time and", 8, "unexpected end"),
        ("01 + time", 0, "leading zeros"),
    ] {
        let e = parse(text).expect_err(text);
        assert_eq!(e.kind(), &ErrorKind::Syntax, "{text}: {e}");
        assert_eq!(e.offset(), Some(at), "{text}: {e}");
        assert!(e.to_string().contains(what), "{text}: {e}");
    }
    // Non-ASCII text: the caret excerpt stays on character boundaries.
    let e = parse("température > €").unwrap_err();
    assert!(e.to_string().contains("€"), "{e}");
}

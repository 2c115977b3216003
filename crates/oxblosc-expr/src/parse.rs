//! Tokenizer and parser: text -> `Expr` (an arena of nodes with byte spans).
//!
//! Python's grammar and precedence for the subset numexpr accepts. Hostile text is bounded:
//! text length, nesting depth (the only recursion, checked), node count and literal sizes
//! are limited, so parsing is linear and never overflows the stack.

use crate::dtype::Weak;
use crate::error::{ErrorKind, ExprError};

/// Longest expression text accepted (bytes).
pub const MAX_TEXT_LEN: usize = 100_000;
/// Deepest nesting of parentheses, calls and prefix operators.
pub const MAX_DEPTH: usize = 100;
/// Most nodes (names, literals, operators, calls) in one expression.
pub const MAX_NODES: usize = 10_000;
/// Longest numeric literal (characters).
pub const MAX_NUMBER_LEN: usize = 100;
/// Longest string literal (bytes).
pub const MAX_STRING_LEN: usize = 4096;

/// Binary operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    FloorDiv,
    Mod,
    Pow,
    BitAnd,
    BitOr,
    BitXor,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
}

impl BinOp {
    pub fn symbol(self) -> &'static str {
        use BinOp::*;
        match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            FloorDiv => "//",
            Mod => "%",
            Pow => "**",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "^",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(self, BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne)
    }
}

/// Prefix operators.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum UnOp {
    Neg,
    Pos,
    /// `~` and `not`: logical on bool, bitwise on integers.
    Invert,
}

/// One node of the tree; children are indices into the same arena.
#[derive(Clone, Debug, PartialEq)]
pub enum Node {
    Name(String),
    Lit(Weak),
    Str(Vec<u8>),
    Unary(UnOp, usize),
    Binary(BinOp, usize, usize),
    /// A function call: the name as written, its arguments.
    Call(String, Vec<usize>),
}

/// A parsed expression. Cheap to keep; compile it against a schema to evaluate it.
#[derive(Clone, Debug, PartialEq)]
pub struct Expr {
    pub(crate) text: String,
    pub(crate) nodes: Vec<Node>,
    pub(crate) spans: Vec<(usize, usize)>,
    pub(crate) root: usize,
}

impl Expr {
    /// The text it was parsed from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The names used as columns (every identifier outside call position, constants such as
    /// `inf` included: a column of that name would shadow them), in order of first use.
    pub fn names(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for n in &self.nodes {
            if let Node::Name(s) = n {
                if !out.contains(&s.as_str()) {
                    out.push(s);
                }
            }
        }
        out
    }

    /// Nodes in the arena (children before parents).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// Index of the root node.
    pub fn root(&self) -> usize {
        self.root
    }

    /// Byte span of node `i` in the text.
    pub fn span(&self, i: usize) -> (usize, usize) {
        self.spans[i]
    }

    pub(crate) fn err_at(&self, node: usize, kind: ErrorKind, msg: impl Into<String>) -> ExprError {
        let (s, e) = self.spans[node];
        ExprError::new(kind, msg).at(&self.text, s, e)
    }
}

/// Parse `text` into an [`Expr`].
pub fn parse(text: &str) -> Result<Expr, ExprError> {
    if text.len() > MAX_TEXT_LEN {
        return Err(ExprError::new(
            ErrorKind::Limit,
            format!("expression text is {} bytes; at most {MAX_TEXT_LEN} are accepted", text.len()),
        ));
    }
    let toks = lex(text)?;
    let mut p = Parser { text, toks, pos: 0, nodes: Vec::new(), spans: Vec::new(), depth: 0 };
    let root = p.expr(0)?;
    if p.peek() != &Tok::End {
        let (s, e) = p.span();
        let what = if p.peek() == &Tok::RParen { "unmatched ')'" } else { "expected an operator or the end" };
        return Err(ExprError::new(ErrorKind::Syntax, what).at(text, s, e));
    }
    Ok(Expr { text: text.to_string(), nodes: p.nodes, spans: p.spans, root })
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Name(String),
    Num(Weak),
    Str(Vec<u8>),
    Op(&'static str),
    LParen,
    RParen,
    Comma,
    End,
}

const OPS: [&str; 23] = [
    "**", "//", "<=", ">=", "==", "!=", "<<", ">>", "+", "-", "*", "/", "%", "&", "|", "^", "~", "<", ">", "=", "!",
    "@", ".",
];

fn lex(text: &str) -> Result<Vec<(Tok, usize, usize)>, ExprError> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let err = |kind, msg: String, s, e| Err(ExprError::new(kind, msg).at(text, s, e));
    while i < b.len() {
        let c = b[i];
        let start = i;
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let tok = if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            let (w, end) = number(text, i)?;
            i = end;
            Tok::Num(w)
        } else if (c == b'b' || c == b'B') && matches!(b.get(i + 1), Some(b'\'' | b'"')) {
            let (s, end) = string(text, i + 1)?;
            i = end;
            Tok::Str(s)
        } else if c == b'\'' || c == b'"' {
            let (s, end) = string(text, i)?;
            i = end;
            Tok::Str(s)
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let s = &text[i..];
            let n = s
                .char_indices()
                .find(|&(_, ch)| !(ch.is_alphanumeric() || ch == '_'))
                .map(|(k, _)| k)
                .unwrap_or(s.len());
            if n == 0 {
                let ch = s.chars().next().unwrap_or('?');
                return err(ErrorKind::Syntax, format!("unexpected character {ch:?}"), i, i + ch.len_utf8());
            }
            i += n;
            Tok::Name(s[..n].to_string())
        } else if c == b'(' {
            i += 1;
            Tok::LParen
        } else if c == b')' {
            i += 1;
            Tok::RParen
        } else if c == b',' {
            i += 1;
            Tok::Comma
        } else if let Some(op) = OPS.iter().find(|op| b[i..].starts_with(op.as_bytes())) {
            i += op.len();
            match *op {
                "=" => return err(ErrorKind::Syntax, "'=' is assignment; compare with '=='".into(), start, i),
                "!" => return err(ErrorKind::Syntax, "'!' is not an operator; use '~' or 'not'".into(), start, i),
                "@" | "." => return err(ErrorKind::Syntax, format!("'{op}' is not supported"), start, i),
                _ => Tok::Op(op),
            }
        } else {
            let ch = text[i..].chars().next().unwrap_or('?');
            return err(ErrorKind::Syntax, format!("unexpected character {ch:?}"), i, i + ch.len_utf8());
        };
        out.push((tok, start, i));
        if out.len() > 4 * MAX_NODES {
            return err(ErrorKind::Limit, format!("more than {} tokens", 4 * MAX_NODES), start, i);
        }
    }
    out.push((Tok::End, b.len(), b.len()));
    Ok(out)
}

/// A numeric literal at `start`: Python's int (decimal, 0x, 0o, 0b, `_` separators) or float.
fn number(text: &str, start: usize) -> Result<(Weak, usize), ExprError> {
    let b = text.as_bytes();
    let mut i = start;
    let radix = if b[i] == b'0' && i + 1 < b.len() {
        match b[i + 1] | 0x20 {
            b'x' => 16,
            b'o' => 8,
            b'b' => 2,
            _ => 10,
        }
    } else {
        10
    };
    let mut is_float = false;
    if radix != 10 {
        i += 2;
        while i < b.len() && (b[i].is_ascii_hexdigit() || b[i] == b'_') {
            i += 1;
        }
    } else {
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
            i += 1;
        }
        if i < b.len() && b[i] == b'.' {
            is_float = true;
            i += 1;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                i += 1;
            }
        }
        if i < b.len() && (b[i] | 0x20) == b'e' {
            let mut k = i + 1;
            if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                k += 1;
            }
            if k < b.len() && b[k].is_ascii_digit() {
                is_float = true;
                i = k;
                while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'_') {
                    i += 1;
                }
            }
        }
    }
    // A literal glued to a name (`1abc`, `1j`) is an error, as in Python.
    let end = i;
    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
        i += 1;
    }
    let lit = &text[start..i];
    let bad = |msg: String| Err(ExprError::new(ErrorKind::Syntax, msg).at(text, start, i));
    if lit.len() > MAX_NUMBER_LEN {
        return Err(ExprError::new(
            ErrorKind::Limit,
            format!("numeric literal of {} characters (at most {MAX_NUMBER_LEN})", lit.len()),
        )
        .at(text, start, i));
    }
    if i != end {
        if (b[i - 1] | 0x20) == b'j' && i == end + 1 {
            return bad(format!("complex literal {lit:?} is not supported"));
        }
        return bad(format!("invalid numeric literal {lit:?}"));
    }
    let digits: String = lit.chars().filter(|&c| c != '_').collect();
    if lit.ends_with('_') || lit.contains("__") || lit.contains("_.") || lit.contains("._") {
        return bad(format!("invalid numeric literal {lit:?}"));
    }
    if is_float {
        return match digits.parse::<f64>() {
            Ok(v) => Ok((Weak::Float(v), i)),
            Err(_) => bad(format!("invalid numeric literal {lit:?}")),
        };
    }
    let body = if radix == 10 { &digits[..] } else { &digits[2..] };
    if radix == 10 && body.len() > 1 && body.starts_with('0') && body.bytes().any(|c| c != b'0') {
        return bad(format!("leading zeros in {lit:?} are not allowed (use 0o for octal)"));
    }
    match u128::from_str_radix(body, radix) {
        Ok(v) if v <= u64::MAX as u128 => Ok((Weak::Int(v as i128), i)),
        Ok(_) => Err(ExprError::new(
            ErrorKind::Type,
            format!("integer literal {lit} does not fit in 64 bits (int64 or uint64)"),
        )
        .at(text, start, i)),
        Err(_) if !body.is_empty() && body.bytes().all(|c| (c as char).is_digit(radix)) => Err(ExprError::new(
            ErrorKind::Type,
            format!("integer literal {lit} does not fit in 64 bits (int64 or uint64)"),
        )
        .at(text, start, i)),
        Err(_) => bad(format!("invalid numeric literal {lit:?}")),
    }
}

/// A quoted string at `start` (the quote), with `\\ \' \" \n \t \r \0 \xHH` escapes, as bytes.
fn string(text: &str, start: usize) -> Result<(Vec<u8>, usize), ExprError> {
    let b = text.as_bytes();
    let q = b[start];
    let mut out = Vec::new();
    let mut i = start + 1;
    while i < b.len() && b[i] != q {
        let c = b[i];
        if c == b'\\' && i + 1 < b.len() {
            let (v, n) = match b[i + 1] {
                b'\\' => (b'\\', 2),
                b'\'' => (b'\'', 2),
                b'"' => (b'"', 2),
                b'n' => (b'\n', 2),
                b't' => (b'\t', 2),
                b'r' => (b'\r', 2),
                b'0' => (0, 2),
                b'x' if i + 3 < b.len() => match u8::from_str_radix(text.get(i + 2..i + 4).unwrap_or("?"), 16) {
                    Ok(v) => (v, 4),
                    Err(_) => {
                        return Err(ExprError::new(ErrorKind::Syntax, "bad \\x escape").at(text, i, i + 2));
                    }
                },
                _ => (b'\\', 1),
            };
            out.push(v);
            i += n;
        } else {
            out.push(c);
            i += 1;
        }
        if out.len() > MAX_STRING_LEN {
            return Err(ExprError::new(ErrorKind::Limit, format!("string literal longer than {MAX_STRING_LEN} bytes"))
                .at(text, start, start + 1));
        }
    }
    if i >= b.len() {
        return Err(ExprError::new(ErrorKind::Syntax, "unterminated string literal").at(text, start, start + 1));
    }
    Ok((out, i + 1))
}

struct Parser<'t> {
    text: &'t str,
    toks: Vec<(Tok, usize, usize)>,
    pos: usize,
    nodes: Vec<Node>,
    spans: Vec<(usize, usize)>,
    depth: usize,
}

/// Binding power of an infix operator (Python's precedence, low to high).
fn infix(t: &Tok) -> Option<(u8, BinOp)> {
    Some(match t {
        Tok::Name(n) if n == "or" => (1, BinOp::BitOr),
        Tok::Name(n) if n == "and" => (2, BinOp::BitAnd),
        Tok::Op(op) => match *op {
            "<" => (4, BinOp::Lt),
            "<=" => (4, BinOp::Le),
            ">" => (4, BinOp::Gt),
            ">=" => (4, BinOp::Ge),
            "==" => (4, BinOp::Eq),
            "!=" => (4, BinOp::Ne),
            "|" => (5, BinOp::BitOr),
            "^" => (6, BinOp::BitXor),
            "&" => (7, BinOp::BitAnd),
            "+" => (9, BinOp::Add),
            "-" => (9, BinOp::Sub),
            "*" => (10, BinOp::Mul),
            "/" => (10, BinOp::Div),
            "//" => (10, BinOp::FloorDiv),
            "%" => (10, BinOp::Mod),
            "**" => (12, BinOp::Pow),
            _ => return None,
        },
        _ => return None,
    })
}

const KEYWORDS: [&str; 5] = ["and", "or", "not", "in", "is"];

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos].0
    }

    fn span(&self) -> (usize, usize) {
        (self.toks[self.pos].1, self.toks[self.pos].2)
    }

    fn next(&mut self) -> (Tok, usize, usize) {
        let t = self.toks[self.pos].clone();
        if self.pos + 1 < self.toks.len() {
            self.pos += 1;
        }
        t
    }

    fn err(&self, kind: ErrorKind, msg: impl Into<String>, s: usize, e: usize) -> ExprError {
        ExprError::new(kind, msg).at(self.text, s, e)
    }

    fn push(&mut self, node: Node, s: usize, e: usize) -> Result<usize, ExprError> {
        if self.nodes.len() >= MAX_NODES {
            return Err(self.err(ErrorKind::Limit, format!("expression has more than {MAX_NODES} nodes"), s, e));
        }
        self.nodes.push(node);
        self.spans.push((s, e));
        Ok(self.nodes.len() - 1)
    }

    fn enter(&mut self, s: usize, e: usize) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(self.err(ErrorKind::Limit, format!("expression nested deeper than {MAX_DEPTH} levels"), s, e));
        }
        Ok(())
    }

    /// Pratt loop: a prefix part, then infix operators binding tighter than `min_bp`.
    fn expr(&mut self, min_bp: u8) -> Result<usize, ExprError> {
        let (s0, e0) = self.span();
        self.enter(s0, e0)?;
        let mut left = self.prefix()?;
        // The right operand of the last comparison, for chains (`a < b < c`).
        let mut chain: Option<usize> = None;
        loop {
            if let Tok::Op(op @ ("<<" | ">>")) = self.peek() {
                let (s, e) = self.span();
                return Err(self.err(ErrorKind::Syntax, format!("shift '{op}' is not supported"), s, e));
            }
            let Some((bp, op)) = infix(self.peek()) else { break };
            if bp <= min_bp {
                break;
            }
            self.next();
            // `**` is right-associative and its right operand may be a prefix expression.
            let rbp = if op == BinOp::Pow { 11 } else { bp };
            let right = self.expr(rbp)?;
            let s = self.spans[left].0;
            let e = self.spans[right].1;
            if op.is_comparison() {
                if let Some(prev) = chain {
                    let cmp = self.push(Node::Binary(op, prev, right), self.spans[prev].0, e)?;
                    left = self.push(Node::Binary(BinOp::BitAnd, left, cmp), s, e)?;
                } else {
                    left = self.push(Node::Binary(op, left, right), s, e)?;
                }
                chain = Some(right);
            } else {
                left = self.push(Node::Binary(op, left, right), s, e)?;
                chain = None;
            }
        }
        self.depth -= 1;
        Ok(left)
    }

    fn prefix(&mut self) -> Result<usize, ExprError> {
        let (tok, s, e) = self.next();
        match tok {
            Tok::Num(w) => self.push(Node::Lit(w), s, e),
            Tok::Str(v) => self.push(Node::Str(v), s, e),
            Tok::Op("-") | Tok::Op("+") | Tok::Op("~") => {
                let op = match tok {
                    Tok::Op("-") => UnOp::Neg,
                    Tok::Op("+") => UnOp::Pos,
                    _ => UnOp::Invert,
                };
                let a = self.expr(11)?;
                let end = self.spans[a].1;
                self.push(Node::Unary(op, a), s, end)
            }
            Tok::Name(n) if n == "not" => {
                let a = self.expr(3)?;
                let end = self.spans[a].1;
                self.push(Node::Unary(UnOp::Invert, a), s, end)
            }
            Tok::Name(n) if KEYWORDS.contains(&n.as_str()) => {
                Err(self.err(ErrorKind::Syntax, format!("unexpected keyword '{n}'"), s, e))
            }
            Tok::Name(n) if n == "True" || n == "False" => self.push(Node::Lit(Weak::Bool(n == "True")), s, e),
            Tok::Name(n) => {
                if self.peek() != &Tok::LParen {
                    return self.push(Node::Name(n), s, e);
                }
                self.next();
                let mut args = Vec::new();
                if self.peek() != &Tok::RParen {
                    loop {
                        args.push(self.expr(0)?);
                        match self.peek() {
                            Tok::Comma => {
                                self.next();
                            }
                            Tok::RParen => break,
                            _ => {
                                let (ts, te) = self.span();
                                return Err(self.err(
                                    ErrorKind::Syntax,
                                    format!("expected ',' or ')' in the call to {n}()"),
                                    ts,
                                    te,
                                ));
                            }
                        }
                    }
                }
                let (_, _, end) = self.next();
                self.push(Node::Call(n, args), s, end)
            }
            Tok::LParen => {
                let inner = self.expr(0)?;
                if self.peek() != &Tok::RParen {
                    let (ts, te) = self.span();
                    let msg =
                        if self.peek() == &Tok::End { "missing ')'".to_string() } else { "expected ')'".to_string() };
                    return Err(self.err(ErrorKind::Syntax, msg, ts, te).at_open(self.text, s));
                }
                let (_, _, end) = self.next();
                // Keep the parenthesised span for error messages.
                self.spans[inner] = (s, end);
                Ok(inner)
            }
            Tok::End => Err(self.err(ErrorKind::Syntax, "unexpected end of expression", s, e)),
            Tok::RParen => Err(self.err(ErrorKind::Syntax, "unexpected ')'", s, e)),
            Tok::Comma => Err(self.err(ErrorKind::Syntax, "unexpected ','", s, e)),
            Tok::Op(op) => Err(self.err(ErrorKind::Syntax, format!("unexpected operator '{op}'"), s, e)),
        }
    }
}

trait AtOpen {
    fn at_open(self, text: &str, open: usize) -> Self;
}

impl AtOpen for ExprError {
    /// A missing ')' points at the '(' it should close.
    fn at_open(self, text: &str, open: usize) -> Self {
        if self.message() == "missing ')'" {
            ExprError::new(ErrorKind::Syntax, "missing ')' for this '('").at(text, open, open + 1)
        } else {
            self
        }
    }
}

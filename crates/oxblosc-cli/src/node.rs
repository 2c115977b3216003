//! A small value tree that `info` fills once and prints either as aligned text or as JSON.

use oxblosc::frame::Value;

#[derive(Debug, Clone)]
pub enum Node {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    List(Vec<Node>),
    Map(Vec<(String, Node)>),
}

impl From<&str> for Node {
    fn from(s: &str) -> Node {
        Node::Str(s.to_string())
    }
}
impl From<String> for Node {
    fn from(s: String) -> Node {
        Node::Str(s)
    }
}
impl From<u64> for Node {
    fn from(v: u64) -> Node {
        Node::UInt(v)
    }
}
impl From<usize> for Node {
    fn from(v: usize) -> Node {
        Node::UInt(v as u64)
    }
}
impl From<i64> for Node {
    fn from(v: i64) -> Node {
        Node::Int(v)
    }
}
impl From<bool> for Node {
    fn from(v: bool) -> Node {
        Node::Bool(v)
    }
}

/// A decoded msgpack value as a node (bytes shown as hex when short, else by length).
pub fn from_msgpack(v: &Value) -> Node {
    match v {
        Value::Nil => Node::Null,
        Value::Bool(b) => Node::Bool(*b),
        Value::Int(i) => Node::Int(*i),
        Value::UInt(u) => Node::UInt(*u),
        Value::F32(f) => Node::Float(f64::from(*f)),
        Value::F64(f) => Node::Float(*f),
        Value::Str(s) => Node::Str(s.clone()),
        Value::Bin(b) if b.len() <= 32 => Node::Str(format!("0x{}", hex(b))),
        Value::Bin(b) => Node::Str(format!("<{} bytes>", b.len())),
        Value::Array(a) => Node::List(a.iter().map(from_msgpack).collect()),
        Value::Map(m) => Node::Map(
            m.iter()
                .map(|(k, v)| {
                    let key = match k {
                        Value::Str(s) => s.clone(),
                        k => from_msgpack(k).inline(),
                    };
                    (key, from_msgpack(v))
                })
                .collect(),
        ),
        Value::Ext(t, d) => Node::Str(format!("<msgpack ext {t}: {} bytes>", d.len())),
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Node {
    /// One-line rendering (used for scalars and short lists in text output).
    pub fn inline(&self) -> String {
        match self {
            Node::Null => "null".into(),
            Node::Bool(b) => b.to_string(),
            Node::Int(i) => i.to_string(),
            Node::UInt(u) => u.to_string(),
            Node::Float(f) => format!("{f}"),
            Node::Str(s) => s.clone(),
            Node::List(l) => format!("[{}]", l.iter().map(|n| n.inline_quoted()).collect::<Vec<_>>().join(", ")),
            Node::Map(m) => format!(
                "{{{}}}",
                m.iter().map(|(k, v)| format!("{k:?}: {}", v.inline_quoted())).collect::<Vec<_>>().join(", ")
            ),
        }
    }

    fn inline_quoted(&self) -> String {
        match self {
            Node::Str(s) => format!("{s:?}"),
            n => n.inline(),
        }
    }

    /// Aligned `key  value` lines; nested maps are indented.
    pub fn text(&self, indent: usize, out: &mut String) {
        let Node::Map(m) = self else {
            out.push_str(&self.inline());
            out.push('\n');
            return;
        };
        let width = m.iter().map(|(k, _)| k.len()).max().unwrap_or(0).max(14 - indent.min(14));
        for (k, v) in m {
            match v {
                Node::Map(inner) if !inner.is_empty() => {
                    out.push_str(&format!("{:indent$}{k}\n", ""));
                    v.text(indent + 2, out);
                }
                _ => out.push_str(&format!("{:indent$}{k:width$}  {}\n", "", v.inline())),
            }
        }
    }

    pub fn json(&self, out: &mut String) {
        match self {
            Node::Null => out.push_str("null"),
            Node::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Node::Int(i) => out.push_str(&i.to_string()),
            Node::UInt(u) => out.push_str(&u.to_string()),
            Node::Float(f) if f.is_finite() => out.push_str(&format!("{f}")),
            Node::Float(_) => out.push_str("null"),
            Node::Str(s) => json_str(s, out),
            Node::List(l) => {
                out.push('[');
                for (k, n) in l.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    n.json(out);
                }
                out.push(']');
            }
            Node::Map(m) => {
                out.push('{');
                for (k, (key, n)) in m.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    json_str(key, out);
                    out.push_str(": ");
                    n.json(out);
                }
                out.push('}');
            }
        }
    }
}

fn json_str(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_escapes_and_nests() {
        let n = Node::Map(vec![
            ("a\"b".into(), Node::List(vec![Node::UInt(1), Node::Float(f64::NAN), Node::Str("x\ny\u{1}".into())])),
            ("m".into(), Node::Map(vec![("k".into(), Node::Null)])),
        ]);
        let mut s = String::new();
        n.json(&mut s);
        assert_eq!(s, r#"{"a\"b": [1, null, "x\ny\u0001"], "m": {"k": null}}"#);
    }
}

//! One error type: what went wrong, where in the text (byte offset + caret excerpt), and the
//! column or function involved.

use std::fmt;

/// What kind of problem an [`ExprError`] reports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The text is not an expression (bad token, missing parenthesis, ...).
    Syntax,
    /// A name that is neither a column nor a known function/constant.
    UnknownName,
    /// An operation NumPy refuses for these types, or a literal that does not fit.
    Type,
    /// A Python int literal out of the range of the integer type it meets (NumPy 2's
    /// `OverflowError`).
    Overflow,
    /// The text exceeds a limit (length, nesting depth, number of nodes, literal size).
    Limit,
    /// Inputs do not match the compiled program (count, dtype, length).
    Input,
    /// An error found while evaluating (integers to negative integer powers).
    Eval,
}

/// An error naming the position in the expression text and the column/function involved.
/// (Boxed: results stay one pointer wide.)
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExprError(Box<Inner>);

#[derive(Clone, Debug, PartialEq, Eq)]
struct Inner {
    kind: ErrorKind,
    message: String,
    offset: Option<usize>,
    excerpt: Option<(String, usize, usize)>,
    column: Option<String>,
    function: Option<String>,
}

impl ExprError {
    pub(crate) fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        ExprError(Box::new(Inner {
            kind,
            message: message.into(),
            offset: None,
            excerpt: None,
            column: None,
            function: None,
        }))
    }

    /// Attach the position `start..end` of `text` (shown with a caret line by `Display`).
    pub(crate) fn at(mut self, text: &str, start: usize, end: usize) -> Self {
        let start = start.min(text.len());
        let end = end.clamp(start, text.len());
        self.0.offset = Some(start);
        // A window of at most ~70 characters around the position, on char boundaries.
        let mut lo = start.saturating_sub(35);
        while !text.is_char_boundary(lo) {
            lo -= 1;
        }
        let mut hi = (start + 35).max(end.min(start + 35)).min(text.len());
        while !text.is_char_boundary(hi) {
            hi += 1;
        }
        let window: String = text[lo..hi].chars().map(|c| if c.is_control() { ' ' } else { c }).collect();
        let caret_at = text[lo..start].chars().count();
        let caret_len = text[start..end.min(hi)].chars().count().max(1);
        let prefix = if lo > 0 { "..." } else { "" };
        let suffix = if hi < text.len() { "..." } else { "" };
        self.0.excerpt = Some((format!("{prefix}{window}{suffix}"), caret_at + prefix.len(), caret_len));
        self
    }

    pub(crate) fn column(mut self, name: &str) -> Self {
        self.0.column = Some(name.to_string());
        self
    }

    pub(crate) fn function(mut self, name: &str) -> Self {
        self.0.function = Some(name.to_string());
        self
    }

    /// For an unknown name: add "did you mean ...?" with the closest of `candidates`.
    pub fn with_suggestion<'a>(mut self, candidates: impl IntoIterator<Item = &'a str>) -> Self {
        if let (ErrorKind::UnknownName, Some(name)) =
            (&self.0.kind, self.0.column.as_ref().or(self.0.function.as_ref()))
        {
            if let Some(best) = closest(name, candidates) {
                self.0.message.push_str(&format!("; did you mean '{best}'?"));
            }
        }
        self
    }

    pub fn kind(&self) -> &ErrorKind {
        &self.0.kind
    }

    /// The message without the position.
    pub fn message(&self) -> &str {
        &self.0.message
    }

    /// Byte offset in the expression text, when the error has a position.
    pub fn offset(&self) -> Option<usize> {
        self.0.offset
    }

    /// The column (or unknown name) involved, if any.
    pub fn column_name(&self) -> Option<&str> {
        self.0.column.as_deref()
    }

    /// The function involved, if any.
    pub fn function_name(&self) -> Option<&str> {
        self.0.function.as_deref()
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.message)?;
        if let Some(off) = self.0.offset {
            write!(f, " (at byte {off})")?;
        }
        if let Some((line, at, len)) = &self.0.excerpt {
            write!(f, "\n    {line}\n    {}{}", " ".repeat(*at), "^".repeat(*len))?;
        }
        Ok(())
    }
}

impl std::error::Error for ExprError {}

/// The candidate with the smallest edit distance to `name` (at most a third of its length + 1).
fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let limit = name.chars().count() / 3 + 1;
    candidates
        .into_iter()
        .filter(|c| c.len() <= 256)
        .map(|c| (edit_distance(&name.to_lowercase(), &c.to_lowercase()), c))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().take(256).collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            cur[j + 1] = (prev[j] + usize::from(ca != cb)).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn caret_points_at_the_offset() {
        let e = ExprError::new(ErrorKind::Syntax, "unexpected ')'").at("a + )", 4, 5);
        assert_eq!(e.to_string(), "unexpected ')' (at byte 4)\n    a + )\n        ^");
        assert_eq!(closest("temprature", ["temperature", "time", "wind"]), Some("temperature"));
        assert_eq!(closest("xyz", ["temperature"]), None);
    }
}

//! A small YAML writer for JSON values: block style, every string double-quoted with JSON's
//! escapes (which YAML's double-quoted style shares, so nothing reads as a number, a boolean or
//! YAML 1.1's `yes`/`no`), except multi-line text, written as a literal block (`|`) when it can
//! be read back unchanged.

use serde_json::Value;

/// `docs` as one YAML stream, each document after a `---` line.
pub fn stream(docs: &[Value]) -> String {
    let mut out = String::new();
    for d in docs {
        out.push_str("---\n");
        document(d, &mut out);
    }
    out
}

fn document(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => map(m, 0, out),
        Value::Array(a) if !a.is_empty() => list(a, 0, out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

/// A key as a plain scalar when it is a simple name, else quoted.
fn key(k: &str) -> String {
    let plain = k.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
    if plain
        && !matches!(
            k.to_ascii_lowercase().as_str(),
            "y" | "n" | "yes" | "no" | "on" | "off" | "true" | "false" | "null"
        )
    {
        k.to_string()
    } else {
        quoted(k)
    }
}

fn quoted(s: &str) -> String {
    serde_json::Value::String(s.to_string()).to_string()
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => quoted(s),
        Value::Array(_) => "[]".into(),
        Value::Object(_) => "{}".into(),
    }
}

/// Whether `s` reads back unchanged from a literal block (`|`, clip): one final line break, no
/// carriage return or other control character than tab, no first line starting with a space.
fn literal_block(s: &str) -> bool {
    s.contains('\n')
        && s.ends_with('\n')
        && !s.ends_with("\n\n")
        && !s.starts_with(' ')
        && !s.starts_with('\n')
        && s.chars().all(|c| c == '\n' || c == '\t' || !c.is_control())
}

fn block(s: &str, indent: usize, out: &mut String) {
    out.push_str("|\n");
    for line in s.lines() {
        if !line.is_empty() {
            out.push_str(&" ".repeat(indent));
            out.push_str(line);
        }
        out.push('\n');
    }
}

/// The value after `key:` or `- `: inline, or on the next lines at `indent`.
fn value(v: &Value, indent: usize, out: &mut String) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            map(m, indent, out);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            list(a, indent, out);
        }
        Value::String(s) if literal_block(s) => {
            out.push(' ');
            block(s, indent, out);
        }
        other => {
            out.push(' ');
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
}

fn map(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        out.push_str(&key(k));
        out.push(':');
        value(v, indent + 2, out);
    }
}

fn list(a: &[Value], indent: usize, out: &mut String) {
    for item in a {
        let mut inner = String::new();
        match item {
            Value::Object(m) if !m.is_empty() => map(m, indent + 2, &mut inner),
            Value::Array(l) if !l.is_empty() => list(l, indent + 2, &mut inner),
            other => {
                let mut s = String::new();
                value(other, indent + 2, &mut s);
                // `value` starts with the space after the `-`.
                out.push_str(&" ".repeat(indent));
                out.push('-');
                out.push_str(&s);
                continue;
            }
        }
        // The first line's indentation becomes `- `.
        out.push_str(&" ".repeat(indent));
        out.push_str("- ");
        out.push_str(&inner[indent + 2..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_style_with_quoted_strings() {
        let v = json!({
            "a": 1,
            "b": "yes",
            "c": {"d": [1, {"e": "x", "f": [true]}, []], "g": {}},
            "h": "line 1\n  line 2\n",
            "on": "no\rblock\n",
        });
        let text = stream(&[v]);
        assert_eq!(
            text,
            "---\na: 1\nb: \"yes\"\nc:\n  d:\n    - 1\n    - e: \"x\"\n      f:\n        - true\n    - []\n  g: {}\nh: |\n  line 1\n    line 2\n\"on\": \"no\\rblock\\n\"\n"
        );
    }
}

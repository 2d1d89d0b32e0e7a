//! Where a field is in a scenario's TOML text: the line and column of a dotted path such as
//! `fleet[1].workers`, and the dotted path at a byte offset. Validation works on the typed
//! [`ScenarioFile`](crate::scenario::ScenarioFile), which has no positions; errors are located
//! afterwards by looking the field up in a second, span-preserving parse of the same text
//! (`toml_edit`, which `toml` itself is built on).

use std::ops::Range;

use toml_edit::{ArrayOfTables, ImDocument, Item, Table, Value};

/// A parsed document that can answer "where is this field".
pub(crate) struct Locator<'a> {
    text: &'a str,
    doc: Option<ImDocument<&'a str>>,
}

/// A node of the document.
#[derive(Clone, Copy)]
enum Node<'d> {
    Table(&'d Table),
    Tables(&'d ArrayOfTables),
    Value(&'d Value),
}

impl<'d> Node<'d> {
    fn of(item: &'d Item) -> Option<Node<'d>> {
        match item {
            Item::Table(t) => Some(Node::Table(t)),
            Item::ArrayOfTables(a) => Some(Node::Tables(a)),
            Item::Value(v) => Some(Node::Value(v)),
            Item::None => None,
        }
    }

    fn span(self) -> Option<Range<usize>> {
        match self {
            Node::Table(t) => t.span(),
            Node::Tables(a) => a.span(),
            Node::Value(v) => v.span(),
        }
    }

    /// The span of the child `key`'s key and its node.
    fn child(self, key: &str) -> Option<(Option<Range<usize>>, Node<'d>)> {
        match self {
            Node::Table(t) => {
                let (k, item) = t.get_key_value(key)?;
                Some((k.span(), Node::of(item)?))
            }
            Node::Value(Value::InlineTable(t)) => {
                let (k, item) = t.get_key_value(key)?;
                Some((k.span(), Node::of(item)?))
            }
            _ => None,
        }
    }

    fn index(self, i: usize) -> Option<Node<'d>> {
        match self {
            Node::Tables(a) => a.get(i).map(Node::Table),
            Node::Value(Value::Array(a)) => a.get(i).map(Node::Value),
            _ => None,
        }
    }

    /// Children as `(path segment, key span, node)`.
    fn children(self) -> Vec<(String, Option<Range<usize>>, Node<'d>)> {
        let mut v = Vec::new();
        match self {
            Node::Table(t) => {
                for (k, item) in t.iter() {
                    if let Some(n) = Node::of(item) {
                        v.push((format!(".{k}"), t.key(k).and_then(|k| k.span()), n));
                    }
                }
            }
            Node::Value(Value::InlineTable(t)) => {
                for (k, value) in t.iter() {
                    v.push((
                        format!(".{k}"),
                        t.key(k).and_then(|k| k.span()),
                        Node::Value(value),
                    ));
                }
            }
            Node::Tables(a) => {
                for (i, t) in a.iter().enumerate() {
                    v.push((format!("[{i}]"), None, Node::Table(t)));
                }
            }
            Node::Value(Value::Array(a)) => {
                for (i, x) in a.iter().enumerate() {
                    v.push((format!("[{i}]"), None, Node::Value(x)));
                }
            }
            Node::Value(_) => {}
        }
        v
    }
}

fn contains(span: &Option<Range<usize>>, offset: usize) -> bool {
    span.as_ref()
        .is_some_and(|r| r.start <= offset && offset < r.end.max(r.start + 1))
}

impl<'a> Locator<'a> {
    /// Parses `text` keeping spans; a document that does not parse locates nothing.
    pub(crate) fn new(text: &'a str) -> Self {
        Locator {
            text,
            doc: ImDocument::parse(text).ok(),
        }
    }

    /// 1-based line and column of byte `offset`.
    pub(crate) fn line_col(&self, offset: usize) -> (usize, usize) {
        line_col(self.text, offset)
    }

    /// The byte span of the field at `path` (its value, else its key), or of the nearest enclosing
    /// field that exists (e.g. the `[workload]` header for a missing `workload.concurrency`).
    pub(crate) fn span_of(&self, path: &str) -> Option<Range<usize>> {
        self.walk(path).map(|(span, _)| span)
    }

    /// The span of the field at `path` only if every step of the path exists.
    pub(crate) fn exact_span_of(&self, path: &str) -> Option<Range<usize>> {
        self.walk(path)
            .filter(|(_, exact)| *exact)
            .map(|(span, _)| span)
    }

    /// [`Locator::span_of`], and whether the whole path was found.
    fn walk(&self, path: &str) -> Option<(Range<usize>, bool)> {
        let doc = self.doc.as_ref()?;
        let mut exact = true;
        let mut node = Node::Table(doc.as_table());
        let mut best = None;
        for seg in path.split('.') {
            let (key, index) = match seg.split_once('[') {
                Some((key, rest)) => (key, rest.trim_end_matches(']').parse::<usize>().ok()),
                None => (seg, None),
            };
            let Some((key_span, child)) = node.child(key) else {
                exact = false;
                break;
            };
            best = child.span().or(key_span).or(best);
            node = child;
            if let Some(i) = index {
                let Some(element) = node.index(i) else {
                    exact = false;
                    break;
                };
                best = element.span().or(best);
                node = element;
            }
        }
        best.map(|span| (span, exact))
    }

    /// Line and column of the field at `path`, see [`Locator::span_of`].
    pub(crate) fn position_of(&self, path: &str) -> Option<(usize, usize)> {
        self.span_of(path).map(|r| self.line_col(r.start))
    }

    /// The dotted path of the deepest field whose key or value contains byte `offset`.
    pub(crate) fn path_at(&self, offset: usize) -> Option<String> {
        let doc = self.doc.as_ref()?;
        let mut node = Node::Table(doc.as_table());
        let mut path = String::new();
        'descend: loop {
            for (seg, key_span, child) in node.children() {
                if contains(&key_span, offset)
                    || contains(&child.span(), offset)
                    || inside_table(child, offset)
                {
                    path.push_str(&seg);
                    node = child;
                    continue 'descend;
                }
            }
            break;
        }
        let path = path.trim_start_matches('.').to_string();
        (!path.is_empty()).then_some(path)
    }

    /// The path and span of a string field equal to `value` under `path` (the field a tagged
    /// table's error is about, when the message quotes its value).
    pub(crate) fn string_field(&self, path: &str, value: &str) -> Option<(String, Range<usize>)> {
        let doc = self.doc.as_ref()?;
        let mut node = Node::Table(doc.as_table());
        let mut prefix = String::new();
        // Walk to `path` exactly.
        for part in path.split('.') {
            let (key, index) = match part.split_once('[') {
                Some((key, rest)) => (key, rest.trim_end_matches(']').parse::<usize>().ok()),
                None => (part, None),
            };
            node = node.child(key)?.1;
            prefix.push_str(&format!(".{key}"));
            if let Some(i) = index {
                node = node.index(i)?;
                prefix.push_str(&format!("[{i}]"));
            }
        }
        let mut found = None;
        let search = |node: Node<'_>, prefix: &str, found: &mut Option<(String, Range<usize>)>| {
            for (seg, _, child) in node.children() {
                if let Node::Value(Value::String(s)) = child {
                    if s.value() == value && found.is_none() {
                        *found = child.span().map(|span| (format!("{prefix}{seg}"), span));
                    }
                }
            }
        };
        search(node, &prefix, &mut found);
        for (seg, _, child) in node.children() {
            search(child, &format!("{prefix}{seg}"), &mut found);
        }
        found.map(|(p, span)| (p.trim_start_matches('.').to_string(), span))
    }

    /// The byte offset in the text where the contents of the string at `path` start, if it is a
    /// literal string (`'...'` or `'''...'''`), whose text is its contents byte for byte: that
    /// maps a position inside the string (a JSON error) onto the file.
    pub(crate) fn literal_string_start(&self, path: &str) -> Option<usize> {
        let span = self.span_of(path)?;
        let raw = self.text.get(span.clone())?;
        if let Some(rest) = raw.strip_prefix("'''") {
            // A newline right after the opening delimiter is not part of the string.
            let skip = if rest.starts_with("\r\n") {
                2
            } else {
                usize::from(rest.starts_with('\n'))
            };
            Some(span.start + 3 + skip)
        } else if raw.starts_with('\'') {
            Some(span.start + 1)
        } else {
            None
        }
    }
}

/// Whether `offset` falls in a `[table]` section: after its header and before the next header.
/// Standard tables' spans cover only the header, so their bodies are found through their children.
fn inside_table(node: Node<'_>, offset: usize) -> bool {
    match node {
        Node::Table(t) => t.iter().any(|(k, item)| {
            contains(&t.key(k).and_then(|k| k.span()), offset)
                || Node::of(item)
                    .is_some_and(|n| contains(&n.span(), offset) || inside_table(n, offset))
        }),
        Node::Tables(a) => a
            .iter()
            .any(|t| contains(&t.span(), offset) || inside_table(Node::Table(t), offset)),
        Node::Value(_) => false,
    }
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
pub(crate) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut start = offset.min(text.len());
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    let before = &text[..start];
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    (line, before[line_start..].chars().count() + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "name = \"x\"\n[workload]\nrate = 5\n[[fleet]]\nname = \"a\"\n[[fleet]]\nname = \"b\"\nworkers = 0\nservice_time = { dist = \"constant\", value = \"1ms\" }\n";

    #[test]
    fn finds_fields_by_dotted_path() {
        let l = Locator::new(DOC);
        assert_eq!(l.position_of("workload.rate"), Some((3, 8)));
        assert_eq!(l.position_of("fleet[1].workers"), Some((8, 11)));
        assert_eq!(l.position_of("fleet[1].service_time.value"), Some((9, 45)));
        // Missing field: the nearest enclosing one that exists.
        assert_eq!(l.position_of("fleet[1].count").map(|p| p.0), Some(6));
        assert_eq!(l.position_of("nothing"), None);
    }

    #[test]
    fn finds_the_path_at_an_offset() {
        let l = Locator::new(DOC);
        let at = |needle: &str| DOC.find(needle).unwrap();
        assert_eq!(
            l.path_at(at("0\nservice")).as_deref(),
            Some("fleet[1].workers")
        );
        assert_eq!(
            l.path_at(at("\"1ms\"")).as_deref(),
            Some("fleet[1].service_time.value")
        );
        assert_eq!(l.path_at(at("rate")).as_deref(), Some("workload.rate"));
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 6), (2, 3));
        assert_eq!(line_col("", 10), (1, 1));
    }
}

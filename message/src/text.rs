//! Text from elsewhere made fit to show on one line of a terminal: a server's words with their
//! control characters escaped ([`printable`]), and an error with its causes, each once
//! ([`join_causes`]).

/// `text` with every control character (ESC and the rest of C0 and C1, CR, LF, tab, DEL) and
/// every bidirectional override escaped as Rust writes them (`\u{1b}`, `\r`, `\n`): a status
/// message or a trailer is the server's text, and printed raw an escape sequence in it can clear
/// or retitle the reader's terminal, and a line break split a table's row.
pub fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_bidi_control(c) {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Unicode's explicit bidirectional formatting characters, which reorder what follows them on
/// the line (the "Trojan Source" characters).
fn is_bidi_control(c: char) -> bool {
    matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}')
}

/// An error's message and its causes' joined by `": "`, each once: a cause whose text the line
/// already holds is left out (an error that prints its source, as `thiserror`'s `"{file}:
/// {source}"` does, would otherwise say "No space left on device" twice).
pub fn join_causes(messages: impl IntoIterator<Item = String>) -> String {
    let mut line = String::new();
    for text in messages {
        if line.is_empty() {
            line = text;
        } else if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
    }
    line
}

/// `e` and its sources, each once ([`join_causes`]).
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    join_causes(std::iter::successors(Some(e), |e| e.source()).map(ToString::to_string))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_and_bidi_overrides_are_escaped_and_the_rest_kept() {
        let hostile = "\u{1b}]0;owned\u{7}\u{1b}[2Jboom\r\nsecond\tline\u{7f}\u{9b}";
        let shown = printable(hostile);
        assert_eq!(
            shown,
            "\\u{1b}]0;owned\\u{7}\\u{1b}[2Jboom\\r\\nsecond\\tline\\u{7f}\\u{9b}"
        );
        assert!(!shown.chars().any(char::is_control), "{shown:?}");
        assert_eq!(printable("a \u{202e}b"), "a \\u{202e}b");
        // Ordinary text, non-ASCII included, is as it was.
        assert_eq!(printable("déjà vu: 5 ms → 7 ms"), "déjà vu: 5 ms → 7 ms");
    }

    #[test]
    fn a_cause_the_line_already_holds_is_said_once() {
        let causes = ["writing x: disk full", "disk full", "more"].map(String::from);
        assert_eq!(join_causes(causes), "writing x: disk full: more");
        assert_eq!(join_causes(Vec::new()), "");
    }
}

use std::path::Path;

use super::calls::ghz_template;
use super::*;
use lblab_record::StatusRow;

fn rows(status: &str, message: &str) -> Vec<StatusRow> {
    let row = |status: &str, message: &str, count| StatusRow {
        policy: "rr".into(),
        status: status.into(),
        message: message.into(),
        count,
    };
    vec![row(StatusRow::OK, "", 0), row(status, message, 9)]
}

#[test]
fn ghz_call_templates_are_found_and_plain_braces_are_not() {
    assert_eq!(
        ghz_template(r#"{"name":"n{{.RequestNumber}}"}"#),
        Some("{{.RequestNumber}}")
    );
    assert_eq!(
        ghz_template(r#"{"id":"{{ newUUID }}"}"#),
        Some("{{ newUUID }}")
    );
    assert_eq!(
        ghz_template(r#"{"s":"{{randomString 8}}"}"#),
        Some("{{randomString 8}}")
    );
    assert_eq!(ghz_template(r#"{"a":{"b":{}}}"#), None);
    assert_eq!(ghz_template(r#"{"s":"{{literal}}"}"#), None);
}

#[test]
fn the_echo_hint_comes_only_when_the_server_has_no_such_method() {
    let dir = Path::new("out");
    let said = none_succeeded(&rows("UNIMPLEMENTED", "unknown service"), true, dir);
    assert!(said.contains("--call"), "{said}");
    // A server that serves Echo and failed it otherwise: the hint would be wrong.
    let said = none_succeeded(&rows("UNAVAILABLE", "http2 error"), true, dir);
    assert!(!said.contains("--call"), "{said}");
    // With --call, never.
    let said = none_succeeded(&rows("UNIMPLEMENTED", "unknown service"), false, dir);
    assert!(!said.contains("--call"), "{said}");
    // The server's text is escaped, even read back from a statuses.csv.
    let said = none_succeeded(&rows("INTERNAL", "a\u{1b}[2J\r\nb"), true, dir);
    assert!(said.contains(r"a\u{1b}[2J\r\nb"), "{said}");
}

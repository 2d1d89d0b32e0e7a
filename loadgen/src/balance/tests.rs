use super::service::grpc_timeout;
use std::time::Duration;

use super::outages::Outages;
use super::MAX_OUTAGES_KEPT;

#[test]
fn grpc_timeout_units() {
    let mut h = http::HeaderMap::new();
    for (v, d) in [
        ("1S", Duration::from_secs(1)),
        ("250m", Duration::from_millis(250)),
        ("7u", Duration::from_micros(7)),
        ("2M", Duration::from_secs(120)),
    ] {
        h.insert("grpc-timeout", http::HeaderValue::from_static(v));
        assert_eq!(grpc_timeout(&h), Some(d));
    }
    h.insert("grpc-timeout", http::HeaderValue::from_static("x"));
    assert_eq!(grpc_timeout(&h), None);
}

#[test]
fn outages_record_failed_starts_losses_and_stay_bounded() {
    let mut o = Outages::default();
    // Two failed attempts before the first connection: one outage, not a lost connection.
    o.begin(1, Some("refused".into()), true);
    o.begin(2, Some("refused again".into()), true);
    o.end(3);
    assert_eq!(o.list.len(), 1);
    assert_eq!(
        (o.list[0].lost, o.list[0].failed_attempts, o.list[0].end),
        (false, 2, Some(3))
    );
    assert_eq!(o.list[0].error.as_deref(), Some("refused again"));
    // A working connection lost, then back.
    o.begin(10, Some("reset".into()), false);
    o.end(12);
    assert!(o.list[1].lost);
    // Churn beyond the cap merges into the last record: bounded, and the count is kept.
    for t in 0..(2 * MAX_OUTAGES_KEPT as u64) {
        o.begin(100 + 2 * t, None, false);
        o.end(101 + 2 * t);
    }
    assert_eq!(o.list.len(), MAX_OUTAGES_KEPT);
    let total: u64 = o.list.iter().map(|x| u64::from(x.merged)).sum();
    assert_eq!(total, 2 + 2 * MAX_OUTAGES_KEPT as u64);
    assert!(o.list.last().unwrap().end.is_some());
}

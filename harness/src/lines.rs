//! A real run's harness figures ([`HarnessSummary`], also in `harness.json`) as text lines.

use lblab_record::HarnessSummary;

/// The harness's own numbers as printed after a real run's table: the floor, then per policy
/// the delay error, dispatch lateness, client CPU per call and machine load, and the attempts
/// discarded as disturbed.
pub fn harness_lines(h: &HarnessSummary) -> Vec<String> {
    let mut lines = Vec::new();
    if let Some(f) = &h.floor {
        lines.push(format!(
            "harness floor ({} zero-delay backends, {} req/s): p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms",
            f.backends, f.rate, f.p50_ms, f.p99_ms, f.p999_ms
        ));
    }
    let width = h
        .policies
        .iter()
        .map(|p| p.policy.len())
        .max()
        .unwrap_or(6)
        .max(6);
    lines.push(format!(
        "{:<width$} {:>14} {:>14} {:>16} {:>16} {:>12} {:>9}",
        "policy",
        "delay err p50",
        "delay err p99",
        "dispatch late p50",
        "dispatch late p99",
        "cpu/call",
        "machine%"
    ));
    for p in &h.policies {
        lines.push(format!(
            "{:<width$} {:>11.0} µs {:>11.0} µs {:>13.0} µs {:>13.0} µs {:>9.1} µs {:>8.0}%",
            p.policy,
            p.delay_error.p50_us,
            p.delay_error.p99_us,
            p.dispatch_lateness.p50_us,
            p.dispatch_lateness.p99_us,
            p.client_cpu_per_call_us,
            p.machine.busy_pct
        ));
    }
    lines.push("(machine%: CPU busy with anything, this run included, while the policy ran; details in harness.json)".to_string());
    for p in &h.policies {
        if !p.discarded_attempts.is_empty() {
            let late: Vec<String> = p
                .discarded_attempts
                .iter()
                .map(|l| format!("{l:.0} µs"))
                .collect();
            lines.push(format!(
                "{}: discarded {} disturbed attempt(s), dispatch lateness p99 {}",
                p.policy,
                late.len(),
                late.join(", ")
            ));
        }
    }
    lines
}

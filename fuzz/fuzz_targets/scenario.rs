//! `Scenario::parse` on arbitrary text: never a panic, and every accepted scenario is one the
//! engine can run (bounded sizes, no time arithmetic that overflows); every error renders.
#![no_main]

use lblab_model::scenario::limits;
use lblab_model::units::Dur;
use lblab_model::Scenario;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Scenario::parse(text) {
        Ok(s) => {
            let w = &s.workload;
            assert!(w.clients >= 1 && w.duration > 0 && w.deadline > 0 && w.warmup < w.duration);
            assert!(
                w.end() <= 2 * Dur::MAX.0,
                "run end {} beyond two years",
                w.end()
            );
            assert!(!s.backends.is_empty() && s.backends.len() as u64 <= limits::BACKENDS);
            assert!(!s.policies.is_empty());
            assert!((0.0..=1.0).contains(&w.streaming_share));
            for (b, s0, e) in s.fault_windows() {
                assert!(
                    b < s.backends.len() && s0 < e,
                    "window {s0}..{e} on backend {b}"
                );
            }
            // Timelines answer without overflow at the run's edges.
            for b in &s.backends {
                for t in [0, w.warmup, w.end().saturating_sub(1), w.end()] {
                    let _ = b.timeline.finish_time(t, b.median_service);
                    let _ = b.timeline.error_rate(t);
                }
            }
        }
        Err(e) => {
            let msg = e.to_string();
            assert!(!msg.is_empty());
            if let Some((line, col)) = e.position() {
                assert!(
                    line >= 1 && col >= 1 && line <= text.lines().count().max(1) + 1,
                    "{msg}"
                );
            }
        }
    }
});

//! The parts of lblab's memory estimates that a record's size decides, shared by the estimate of
//! a run (`lblab_model::budget`, from its scenario) and of a merge of runs ([`merged`],
//! [`crate::merge_runs`]): the constants per second, backend and policy of what a run records,
//! an [`Estimate`] and its largest part, and sizes for messages ([`size`]).
//!
//! The constants are fit to the peak resident memory of `lblab sim` measured on a few kinds of
//! input (`scripts/memory-estimates.sh`, `results/memory/`).

/// The process itself, whatever the scenario: the program, its runtime and thread stacks, and
/// the charts being drawn (measured: 21 MiB for three backends for ten seconds; see
/// `results/memory/`).
pub const BASE: u64 = 24 << 20;
/// Per second of the run and policy: the time-series row's fixed part and its interval histogram
/// (hlog line). Fit to a six-hour run (`results/memory/`).
pub const PER_SECOND: u64 = 1536;
/// Per second, policy and backend: one traffic share (8 bytes), its text in `timeseries.csv`
/// while that is written, and its point in the traffic-share chart.
pub const PER_SECOND_BACKEND: u64 = 24;
/// Per policy: its whole-run histogram and recorder, and its results while they are written.
pub const PER_POLICY: u64 = 2 << 20;

/// An estimate and its largest part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Estimate {
    /// Bytes in all.
    pub bytes: u64,
    /// What most of it is, for the message.
    pub largest: String,
}

impl Estimate {
    /// The sum of `parts` (bytes, what they are), naming the largest.
    pub fn of(parts: &[(u64, String)]) -> Estimate {
        Estimate {
            bytes: parts.iter().fold(0u64, |a, p| a.saturating_add(p.0)),
            largest: parts
                .iter()
                .max_by_key(|p| p.0)
                .map(|p| p.1.clone())
                .unwrap_or_default(),
        }
    }
}

/// The memory a merge of real runs needs ([`crate::merge_runs`]), roughly: `policies`
/// policies over `seconds` merged seconds of `backends` backends (a time-series row and interval
/// histograms each), and the `read_rows` time-series rows of the runs, read first.
pub fn merged(policies: usize, seconds: u64, backends: usize, read_rows: usize) -> Estimate {
    let (policies, backends) = (policies as u64, backends as u64);
    let per_second = PER_SECOND.saturating_add(backends.saturating_mul(PER_SECOND_BACKEND));
    let parts = [
        (
            policies.saturating_mul(seconds).saturating_mul(per_second),
            format!("{seconds} merged seconds × {backends} backends for {policies} policies"),
        ),
        (
            (read_rows as u64).saturating_mul(backends.saturating_mul(8).saturating_add(64)),
            format!("{read_rows} time-series rows of the runs"),
        ),
        (
            policies.saturating_mul(PER_POLICY),
            format!("{policies} policies' histograms"),
        ),
        (BASE, "the program itself".to_string()),
    ];
    Estimate::of(&parts)
}

/// `bytes` as a size for messages: in the largest binary unit (TiB, GiB, MiB, KiB) it has at
/// least one of, with one decimal, so that a small size never prints as "0.0 GiB".
pub fn size(bytes: u64) -> String {
    const UNITS: [(&str, u64); 4] = [
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for (unit, scale) in UNITS {
        if bytes >= scale {
            return format!("{:.1} {unit}", bytes as f64 / scale as f64);
        }
    }
    format!("{bytes} B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_in_the_unit_they_have() {
        assert_eq!(size(8 << 30), "8.0 GiB");
        assert_eq!(size(3 << 39), "1.5 TiB");
        assert_eq!(size(20 << 20), "20.0 MiB");
        assert_eq!(size(1536), "1.5 KiB");
        assert_eq!(size(100), "100 B");
    }
}

//! The sim-vs-real agreement rule, in one place: the compare chart draws its band and
//! `lblab compare` and the evidence documents judge agreement with it.

/// Relative tolerance of sim-vs-real agreement.
pub const AGREEMENT_RELATIVE: f64 = 0.20;
/// Absolute tolerance (ms) of sim-vs-real agreement, for small values.
pub const AGREEMENT_ABSOLUTE_MS: f64 = 1.0;

/// Whether a real value agrees with the simulated one: within ±20 % or within 1 ms.
pub fn agrees(sim_ms: f64, real_ms: f64) -> bool {
    (real_ms - sim_ms).abs() <= (AGREEMENT_RELATIVE * sim_ms).max(AGREEMENT_ABSOLUTE_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agreement_tolerance_is_twenty_percent_or_one_ms() {
        assert!(agrees(10.0, 11.9));
        assert!(!agrees(10.0, 12.1));
        assert!(agrees(2.0, 2.9)); // within 1 ms
        assert!(!agrees(2.0, 3.1));
    }
}

//! The latency histogram every recorder, reader and merge uses: its bounds and precision
//! ([`new_histogram`]) and its `.hgrm` text ([`percentile_distribution`]). It sits below the
//! recorder, the `.hlog` code and the files, which all need one histogram shape and would
//! otherwise import it from each other.

use std::fmt::Write as _;

use hdrhistogram::Histogram;
use lblab_policy::NANOS_PER_SEC;

/// Significant decimal digits of every latency histogram: 0.1 % relative error.
const SIGFIG: u8 = 3;
/// Highest latency recorded exactly (1 hour); larger values are clamped.
pub(super) const MAX_LATENCY: u64 = 3_600 * NANOS_PER_SEC;

/// An empty latency histogram with the recorder's bounds and precision.
pub(super) fn new_histogram() -> Histogram<u64> {
    // The bounds are constants that HdrHistogram accepts (1 <= low, high >= 2 * low, sigfig <= 5),
    // so this cannot fail on any input.
    Histogram::new_with_bounds(1, MAX_LATENCY, SIGFIG).expect("valid histogram bounds")
}

/// `h` (values in ns) as HdrHistogram's percentile-distribution text, the `.hgrm` format that
/// `outputPercentileDistribution` prints and HdrHistogram's plotter reads: values in ms, the
/// percentiles 5 ticks per half distance to 100 %, then the mean, standard deviation, maximum,
/// count and the histogram's geometry. An empty histogram gives the header and footer only.
pub fn percentile_distribution(h: &Histogram<u64>) -> String {
    const NS_PER_MS: f64 = 1e6;
    let digits = usize::from(h.sigfig());
    let mut out = format!(
        "{:>12} {:>14} {:>10} {:>14}\n\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    let mut total = 0u64;
    if !h.is_empty() {
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / NS_PER_MS;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:12.digits$} {q:2.12} {total:10} {:14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(out, "{value:12.digits$} {q:2.12} {total:10}");
            }
        }
    }
    let (mean, stdev, max) = if h.is_empty() {
        (0.0, 0.0, 0.0)
    } else {
        (
            h.mean() / NS_PER_MS,
            h.stdev() / NS_PER_MS,
            h.max() as f64 / NS_PER_MS,
        )
    };
    // The sub-bucket count HdrHistogram derives from the precision: the power of two that holds
    // 2 × 10^digits.
    let sub_buckets = (2.0 * 10f64.powi(digits as i32)).log2().ceil().exp2() as u64;
    let _ = writeln!(
        out,
        "#[Mean    = {mean:12.digits$}, StdDeviation   = {stdev:12.digits$}]"
    );
    let _ = writeln!(
        out,
        "#[Max     = {max:12.digits$}, Total count    = {:12}]",
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:12}, SubBuckets     = {sub_buckets:12}]",
        h.buckets()
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_percentile_distribution_is_hdrhistogram_s_text_in_ms() {
        let mut h = new_histogram();
        for v in 1..=1000u64 {
            h.record(v * 1_000_000).unwrap(); // 1 to 1000 ms
        }
        let text = percentile_distribution(&h);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "       Value     Percentile TotalCount 1/(1-Percentile)"
        );
        assert_eq!(lines[1], "");
        // The first line is the lowest value at percentile 0; counts only grow; the last
        // percentile line is 100 % with every value counted and no 1/(1-p) column.
        let rows: Vec<Vec<f64>> = lines[2..]
            .iter()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().map(|x| x.parse().unwrap()).collect())
            .collect();
        assert_eq!(rows[0][..3], [1.0, 0.0, 1.0]);
        assert!(rows
            .windows(2)
            .all(|w| w[0][2] <= w[1][2] && w[0][1] < w[1][1]));
        let last = rows.last().unwrap();
        assert_eq!((last.len(), last[1], last[2]), (3, 1.0, 1000.0));
        assert!((last[0] - 1000.0).abs() < 1.0, "{last:?}");
        // p50 is near 500 ms.
        let p50 = rows.iter().find(|r| r[1] >= 0.5).unwrap();
        assert!((p50[0] - 500.0).abs() < 1.0, "{p50:?}");
        let footer: Vec<&&str> = lines.iter().filter(|l| l.starts_with("#[")).collect();
        assert_eq!(footer.len(), 3);
        assert!(
            footer[0].starts_with("#[Mean    =      500.")
                && footer[0].contains("StdDeviation   =      288.")
        );
        assert!(footer[1].ends_with("Total count    =         1000]"));
        assert!(footer[2].ends_with("SubBuckets     =         2048]"));
        // Empty: header and footer only.
        assert_eq!(percentile_distribution(&new_histogram()).lines().count(), 5);
    }
}

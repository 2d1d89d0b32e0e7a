//! The names of the charts this crate names itself: the file names of a results folder's
//! charts, which the committed results and the documents that link to them depend on.

use std::path::{Path, PathBuf};

/// A chart file's format: every chart is written in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// A PNG bitmap, anti-aliased.
    Png,
    /// An SVG with its text as `<text>` elements.
    Svg,
}

impl Format {
    /// Both formats, in the order every chart is written (and its paths returned).
    pub const ALL: [Format; 2] = [Format::Png, Format::Svg];

    /// The file extension, without the dot: `png`, `svg`.
    pub fn extension(self) -> &'static str {
        match self {
            Format::Png => "png",
            Format::Svg => "svg",
        }
    }
}

/// A chart whose file name this crate chooses, by the folder it is drawn in. (Charts drawn by
/// [`write_heatmap`](crate::write_heatmap), [`write_line_chart`](crate::write_line_chart),
/// [`write_compare_chart`](crate::write_compare_chart) and
/// [`write_interval_chart`](crate::write_interval_chart) are named by their caller's stem.)
///
/// [`stem`](Self::stem) is the file name without the extension, [`file_name`](Self::file_name)
/// and [`path`](Self::path) add one.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChartName {
    /// A run's latency percentile spectrum, `spectrum`.
    Spectrum,
    /// A run's p99 per second with its fault windows, `p99_over_time`.
    P99OverTime,
    /// A run's traffic share per backend, one panel per policy, `traffic_share`.
    TrafficShare,
    /// A compare folder's real vs simulated latency, `compare`.
    Compare,
    /// A scenario-space sweep's p99, `p99`.
    SweepP99,
    /// A sweep's p99.9, `p999`.
    SweepP999,
    /// A sweep's p99 relative to the oracle's, `p99_vs_oracle`.
    SweepP99VsOracle,
    /// A sweep's p99.9 relative to the oracle's, `p999_vs_oracle`.
    SweepP999VsOracle,
    /// A sweep's share of requests sent to faulty backends, `slow_share`.
    SweepSlowShare,
    /// A sweep's share of calls that waited for a worker while a healthy backend had one free, `herd`.
    SweepHerd,
    /// The p99 heatmap of a peak-EWMA parameter grid at one `defaultRtt` (as written, `0.03s`):
    /// `heatmap_p99_rtt<defaultRtt with _ for .>`, e.g. `heatmap_p99_rtt0_03s`.
    GridHeatmap {
        /// The grid's `defaultRtt`, as written.
        default_rtt: String,
    },
}

impl ChartName {
    /// The charts of a run folder, in the order they are written.
    pub const RUN: [ChartName; 3] = [
        ChartName::Spectrum,
        ChartName::P99OverTime,
        ChartName::TrafficShare,
    ];

    /// The file name without its extension.
    pub fn stem(&self) -> String {
        match self {
            ChartName::Spectrum => "spectrum",
            ChartName::P99OverTime => "p99_over_time",
            ChartName::TrafficShare => "traffic_share",
            ChartName::Compare => "compare",
            ChartName::SweepP99 => "p99",
            ChartName::SweepP999 => "p999",
            ChartName::SweepP99VsOracle => "p99_vs_oracle",
            ChartName::SweepP999VsOracle => "p999_vs_oracle",
            ChartName::SweepSlowShare => "slow_share",
            ChartName::SweepHerd => "herd",
            ChartName::GridHeatmap { default_rtt } => {
                return format!("heatmap_p99_rtt{}", default_rtt.replace('.', "_"))
            }
        }
        .to_string()
    }

    /// The file name in `format`: `spectrum.png`.
    pub fn file_name(&self, format: Format) -> String {
        format!("{}.{}", self.stem(), format.extension())
    }

    /// The chart's file in `dir`, in `format`.
    pub fn path(&self, dir: &Path, format: Format) -> PathBuf {
        dir.join(self.file_name(format))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names committed results and the documents' links depend on.
    #[test]
    fn chart_file_names_are_stable() {
        let names: Vec<String> = [
            ChartName::Spectrum,
            ChartName::P99OverTime,
            ChartName::TrafficShare,
            ChartName::Compare,
            ChartName::SweepP99,
            ChartName::SweepP999,
            ChartName::SweepP99VsOracle,
            ChartName::SweepP999VsOracle,
            ChartName::SweepSlowShare,
            ChartName::SweepHerd,
            ChartName::GridHeatmap {
                default_rtt: "0.03s".into(),
            },
        ]
        .iter()
        .map(|n| n.file_name(Format::Png))
        .collect();
        assert_eq!(
            names,
            [
                "spectrum.png",
                "p99_over_time.png",
                "traffic_share.png",
                "compare.png",
                "p99.png",
                "p999.png",
                "p99_vs_oracle.png",
                "p999_vs_oracle.png",
                "slow_share.png",
                "herd.png",
                "heatmap_p99_rtt0_03s.png",
            ]
        );
        assert_eq!(
            ChartName::Spectrum.path(Path::new("r"), Format::Svg),
            Path::new("r/spectrum.svg")
        );
    }
}

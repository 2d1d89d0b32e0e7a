//! One policy's line (or lines) on a chart of a run, styled by its label, and marked when it
//! lies exactly on an earlier policy's.

use crate::render::{line_mark, policy_style, twin_label, twins, Entry, PolicyStyle, TWIN_DASH};

/// One policy's data on a chart; its colour and dash come from its label.
pub(crate) struct Series<T> {
    pub label: String,
    pub data: T,
    pub style: PolicyStyle,
    /// The label of an earlier series with the same data, which this one is drawn over.
    pub twin: Option<String>,
}

impl<T: PartialEq> Series<T> {
    pub(crate) fn new(label: &str, data: T) -> Self {
        Series {
            label: label.to_string(),
            data,
            style: policy_style(label),
            twin: None,
        }
    }

    /// The series with each one that repeats an earlier one's (non-empty) data marked as its
    /// twin, and dashed so that the earlier one shows through.
    pub(crate) fn with_twins(mut series: Vec<Self>, empty: impl Fn(&T) -> bool) -> Vec<Self> {
        let t = twins(&series, |a, b| !empty(&a.data) && a.data == b.data);
        for (i, j) in t.into_iter().enumerate() {
            if let Some(j) = j {
                series[i].twin = Some(series[j].label.clone());
                series[i].style.dash = Some(TWIN_DASH);
            }
        }
        series
    }

    /// The legend entry, marked when it has no data or lies on another.
    pub(crate) fn entry(&self, empty: bool) -> Entry {
        let label = match (&self.twin, empty) {
            (_, true) => format!("{} (no data)", self.label),
            (Some(twin), false) => twin_label(&self.label, twin),
            (None, false) => self.label.clone(),
        };
        Entry::new(label, self.style.colour, line_mark(self.style.dash))
    }
}

#[cfg(test)]
mod tests {
    use crate::chart::p99_over_time::P99OverTime;
    use crate::chart::run_data::fixtures::{data, summary};
    use crate::chart::spectrum::Spectrum;
    use crate::render::TWIN_DASH;

    #[test]
    fn an_identical_series_is_dashed_and_says_so() {
        let s = summary(vec![]);
        let d = [
            data("peak_ewma", 2.0),
            data("od(peak_ewma)", 2.0),
            data("round_robin", 5.0),
        ];
        for entries in [
            Spectrum::new(&s, &d)
                .lines
                .iter()
                .map(|l| (l.entry(false).label, l.style.dash))
                .collect::<Vec<_>>(),
            P99OverTime::new(&s, &d)
                .lines
                .iter()
                .map(|l| (l.entry(false).label, l.style.dash))
                .collect(),
        ] {
            assert_eq!(entries[0], ("peak_ewma".to_string(), None));
            assert_eq!(
                entries[1],
                ("od(peak_ewma) (= peak_ewma)".to_string(), Some(TWIN_DASH))
            );
            assert_eq!(entries[2], ("round_robin".to_string(), None));
        }
    }
}

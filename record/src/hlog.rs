//! HdrHistogram's interval-log format (`.hlog`): one line per one-second interval, each a
//! base64 "V2 compressed" histogram tagged with its policy, so that existing HdrHistogram tools
//! read lblab's logs; reading such a log back ([`read_hlog`]); and HdrHistogram's
//! percentile-distribution text (`.hgrm`, [`percentile_distribution`]).
//!
//! Intervals and tags: an interval is the second in which its calls *ended*; within it, the calls
//! the summary measured (intended at or after the warm-up's end, the summary's own cut) carry
//! `Tag=<policy>`, those it leaves out (intended during the warm-up) `Tag=<policy>-warmup`, so a
//! second around the warm-up's end may have two lines, and `HistogramLogProcessor -tag <policy>`
//! sees exactly what the summary saw. The header also records how many latencies the measured
//! intervals hold (`#[Measured latencies: N]`), so that a truncated log is told apart from a
//! whole one. A tag cannot hold a comma or white space; such characters of a label become `_`.

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;

use super::histogram::new_histogram;
use super::io::read_result_file;
use crate::FileError;

/// One policy's interval log while it is written: a line per one-second interval.
#[derive(Debug)]
pub(super) struct IntervalLog {
    policy: String,
    tag: String,
    warmup_s: f64,
    lines: String,
    /// Latencies in the measured intervals so far.
    measured: u64,
    encoder: IntervalEncoder,
}

/// The tag of the intervals of a warm-up: the policy's tag and this.
const WARMUP_SUFFIX: &str = "-warmup";

/// `label` as an interval tag: HdrHistogram's log format allows no comma or white space in one.
fn hlog_tag(label: &str) -> String {
    label
        .chars()
        .map(|c| {
            if c == ',' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}

impl IntervalLog {
    /// The log of `policy`, whose first `warmup_s` seconds are its warm-up.
    pub(super) fn new(policy: &str, warmup_s: f64) -> Self {
        IntervalLog {
            policy: policy.to_string(),
            tag: hlog_tag(policy),
            warmup_s,
            lines: String::new(),
            measured: 0,
            encoder: IntervalEncoder::new(),
        }
    }

    /// Appends `h` as the one-second interval that starts at `second` from the run start,
    /// tagged as measured (calls intended after the warm-up, which the summary counts) or as
    /// warm-up; an empty histogram, or one that cannot be encoded, is left out.
    pub(super) fn push(&mut self, second: u64, h: &Histogram<u64>, measured: bool) {
        if h.is_empty() {
            return;
        }
        let max_ms = h.max() as f64 / 1e6;
        let warmup = if measured { "" } else { WARMUP_SUFFIX };
        if let Some(bytes) = self.encoder.encode(h) {
            if measured {
                self.measured += h.len();
            }
            let _ = writeln!(
                self.lines,
                "Tag={}{warmup},{second}.000,1.000,{max_ms:.3},{}",
                self.tag,
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
        }
    }

    /// The whole log: the header, then the intervals. Its start is the run's own (`0.000
    /// (seconds since run start)`, a simulated run) until [`with_start_time`] sets it.
    pub(super) fn text(&self) -> String {
        format!(
            "#[Histogram log of policy {} (latency in ms for the max column; values in ns)]\n\
             #[Tags: {tag} for the calls intended from {warmup:.3} s on (what the summary measured), {tag}{WARMUP_SUFFIX} for those intended before; an interval is the second the calls ended in]\n\
             {RUN_START}\n\
             {MEASURED}{measured}]\n\
             \"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{}",
            self.policy,
            self.lines,
            tag = self.tag,
            warmup = self.warmup_s,
            measured = self.measured,
        )
    }
}

/// The StartTime line of a log whose intervals count from the run's own start and whose start
/// in wall-clock time is not known (a simulated run's: its time is virtual).
const RUN_START: &str = "#[StartTime: 0.000 (seconds since run start)]";

/// The header lines of a log that started at the Unix time `unix_s`, in HdrHistogram's
/// convention: `StartTime` is when the log starts, `BaseTime` what the intervals' timestamps
/// count from (here the same instant, so the timestamps stay seconds since the run start).
fn epoch_start(unix_s: f64) -> String {
    format!(
        "#[StartTime: {unix_s:.3} (seconds since epoch)]\n#[BaseTime: {unix_s:.3} (seconds since epoch)]"
    )
}

/// `text`, a log [`IntervalLog::text`] wrote, with its start set to the Unix time `unix_s`
/// (seconds): its `StartTime` line (and a `BaseTime` line set before) replaced. The intervals
/// are unchanged, since they count from the run start either way.
pub(super) fn with_start_time(text: &str, unix_s: f64) -> String {
    let mut out = String::with_capacity(text.len() + 100);
    for line in text.split_inclusive('\n') {
        if line.starts_with(BASE_TIME) {
            continue;
        }
        if line.starts_with(START_TIME) {
            out.push_str(&epoch_start(unix_s));
            out.push('\n');
        } else {
            out.push_str(line);
        }
    }
    out
}

const START_TIME: &str = "#[StartTime: ";
/// The header line that says how many latencies the measured intervals hold.
const MEASURED: &str = "#[Measured latencies: ";
const BASE_TIME: &str = "#[BaseTime: ";

/// The text of a log of intervals already encoded, starting at the Unix time `unix_s` (a merged
/// run's, [`super::merge`]).
pub(super) fn text_from(log: &IntervalLog, unix_s: f64) -> String {
    with_start_time(&log.text(), unix_s)
}

/// One interval of an hlog read back.
#[derive(Debug, Clone)]
pub struct HlogInterval {
    /// Its tag (`Tag=…`), if it has one (logs written before lblab tagged intervals have none).
    pub tag: Option<String>,
    /// Its start, seconds from the log's `StartTime`.
    pub start_s: f64,
    /// Its length, seconds.
    pub length_s: f64,
    /// Its latencies, ns.
    pub histogram: Histogram<u64>,
}

/// An hlog read back ([`read_hlog`]): its start and its intervals, in file order.
#[derive(Debug, Clone)]
pub struct Hlog {
    /// The Unix time (seconds) the log started at, from `#[StartTime: ... (seconds since
    /// epoch)]`; `None` when the log counts from its run's own start only (a simulated run, or a
    /// real one written before lblab recorded starts).
    pub start_unix_s: Option<f64>,
    /// How many latencies the log's measured intervals hold, from `#[Measured latencies: N]`;
    /// `None` in logs written before lblab recorded it (whose tags cut by when calls ended).
    pub measured_latencies: Option<u64>,
    /// The intervals.
    pub intervals: Vec<HlogInterval>,
}

/// What an hlog's header lines say ([`visit_hlog_file`]).
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct HlogHeader {
    /// The Unix time it started at, as [`Hlog::start_unix_s`].
    pub start_unix_s: Option<f64>,
    /// As [`Hlog::measured_latencies`].
    pub measured_latencies: Option<u64>,
}

impl HlogInterval {
    /// Whether this interval of `policy`'s log holds measured latencies (what the summary
    /// counted) rather than the warm-up's: by its tag, `<policy>` or `<policy>-warmup`; an
    /// interval without either tag (a log from before lblab tagged intervals) by whether it
    /// starts at or after `warmup_s`.
    pub fn is_measured(&self, policy: &str, warmup_s: f64) -> bool {
        let tag = hlog_tag(policy);
        match self.tag.as_deref() {
            Some(t) if t == tag => true,
            Some(t) if t.strip_prefix(tag.as_str()) == Some(WARMUP_SUFFIX) => false,
            _ => self.start_s >= warmup_s,
        }
    }
}

/// Reads the hlog at `path` ([`read_result_file`]'s size cap applies); see [`parse_hlog`].
pub fn read_hlog(path: &Path) -> Result<Hlog, FileError> {
    parse_hlog(&read_result_file(path)?, &path.display().to_string())
}

/// The header of the hlog at `path` (its start in Unix seconds, its measured count), read no
/// further than its first interval.
pub(super) fn read_hlog_header(path: &Path) -> Result<HlogHeader, FileError> {
    let text = read_result_file(path)?;
    visit_hlog(&text, &path.display().to_string(), &mut |_| Ok(false))
}

/// Hands every interval of the hlog at `path` to `visit`, in file order, one decoded histogram
/// at a time; returns its header.
pub(super) fn visit_hlog_file(
    path: &Path,
    visit: &mut dyn FnMut(HlogInterval) -> Result<(), FileError>,
) -> Result<HlogHeader, FileError> {
    let text = read_result_file(path)?;
    visit_hlog(&text, &path.display().to_string(), &mut |i| {
        visit(i).map(|()| true)
    })
}

/// Parses an HdrHistogram interval log as lblab writes it: `#` comment lines (of which
/// `#[StartTime: ...]` and `#[BaseTime: ...]` are read), the quoted column header, then one
/// `[Tag=tag,]start,length,max,base64 V2-compressed histogram` line per interval. Errors name
/// `file`, the line and the field.
pub fn parse_hlog(text: &str, file: &str) -> Result<Hlog, FileError> {
    let mut intervals = Vec::new();
    let header = visit_hlog(text, file, &mut |i| {
        intervals.push(i);
        Ok(true)
    })?;
    Ok(Hlog {
        start_unix_s: header.start_unix_s,
        measured_latencies: header.measured_latencies,
        intervals,
    })
}

/// The sum of the measured intervals of `policy`'s hlog `text` ([`HlogInterval::is_measured`]:
/// what its summary measured, as the charts count it; `warmup_s` only for logs without tags),
/// read one interval at a time so that a long log never holds more than one decoded histogram.
/// Errors as [`parse_hlog`]'s.
pub fn sum_measured(
    text: &str,
    file: &str,
    policy: &str,
    warmup_s: f64,
) -> Result<Histogram<u64>, FileError> {
    let mut total = new_histogram();
    visit_hlog(text, file, &mut |i| {
        if i.is_measured(policy, warmup_s) {
            total
                .add(&i.histogram)
                .map_err(|e| FileError::invalid("histogram", format!("{e:?}")))?;
        }
        Ok(true)
    })?;
    Ok(total)
}

/// Reads `text` line by line and hands each interval to `visit`, its start counted from the
/// log's `StartTime` (HdrHistogram writes the header lines before the intervals), until `visit`
/// returns `false`; returns what its header says (its start in Unix seconds, if it has one).
fn visit_hlog(
    text: &str,
    file: &str,
    visit: &mut dyn FnMut(HlogInterval) -> Result<bool, FileError>,
) -> Result<HlogHeader, FileError> {
    let at = |line: usize, field: &str, message: String| FileError::Parse {
        file: file.to_string(),
        field: Some(field.to_string()),
        position: Some((line, 1)),
        message,
    };
    let mut start = None;
    let mut base = None;
    let mut measured_latencies = None;
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = line.trim();
        let header_time = |prefix: &str, field: &str| -> Result<Option<(f64, bool)>, FileError> {
            let Some(rest) = line.strip_prefix(prefix) else {
                return Ok(None);
            };
            let number = rest.split_whitespace().next().unwrap_or_default();
            let value: f64 = number
                .trim_end_matches([']', ','])
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| {
                    at(
                        line_no,
                        field,
                        format!("{number:?} is not a time in seconds"),
                    )
                })?;
            Ok(Some((value, rest.contains("since epoch"))))
        };
        if let Some(t) = header_time(START_TIME, "StartTime")? {
            start = Some(t);
            continue;
        }
        if let Some(t) = header_time(BASE_TIME, "BaseTime")? {
            base = Some(t);
            continue;
        }
        if let Some(rest) = line.strip_prefix(MEASURED) {
            let number = rest.trim_end_matches(']').trim();
            measured_latencies = Some(number.parse::<u64>().map_err(|_| {
                at(
                    line_no,
                    "Measured latencies",
                    format!("{number:?} is not a count"),
                )
            })?);
            continue;
        }
        if line.is_empty() || line.starts_with('#') || line.starts_with('"') {
            continue;
        }
        let (tag, line) = match line.strip_prefix("Tag=") {
            Some(rest) => match rest.split_once(',') {
                Some((tag, rest)) => (Some(tag.to_string()), rest),
                None => return Err(at(line_no, "Tag", "a tag and no interval".into())),
            },
            None => (None, line),
        };
        let fields: Vec<&str> = line.splitn(4, ',').collect();
        let [start_s, length_s, _, encoded] = fields[..] else {
            return Err(at(
                line_no,
                "interval",
                "not `start,length,max,histogram`".into(),
            ));
        };
        let seconds = |s: &str, field: &str| {
            s.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v >= 0.0)
                .ok_or_else(|| at(line_no, field, format!("{s:?} is not a time in seconds")))
        };
        let (start_s, length_s) = (seconds(start_s, "start")?, seconds(length_s, "length")?);
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .map_err(|e| at(line_no, "histogram", format!("not base64: {e}")))?;
        let histogram: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .map_err(|e| {
                at(
                    line_no,
                    "histogram",
                    format!("not a V2-compressed HdrHistogram: {e:?}"),
                )
            })?;
        // Timestamps count from BaseTime when there is one (HdrHistogram's convention): make
        // them count from StartTime.
        let shift = match (start, base) {
            (Some((start, true)), Some((base, true))) => base - start,
            _ => 0.0,
        };
        let more = visit(HlogInterval {
            tag,
            start_s: start_s + shift,
            length_s,
            histogram,
        })?;
        if !more {
            break;
        }
    }
    Ok(HlogHeader {
        start_unix_s: start.and_then(|(s, epoch)| epoch.then_some(s)),
        measured_latencies,
    })
}

/// Encodes interval histograms as HdrHistogram's "V2 compressed" format (what
/// `V2DeflateSerializer` writes and every hlog reader expects), reusing one zlib compressor and
/// its buffers: a fresh compressor per interval (as `V2DeflateSerializer` makes) cost a fifth of
/// the simulator's time in allocation and table setup.
struct IntervalEncoder {
    raw: Vec<u8>,
    out: Vec<u8>,
    zlib: flate2::Compress,
}

/// `V2_COMPRESSED_COOKIE` of the HdrHistogram serialization formats.
const V2_COMPRESSED_COOKIE: u32 = 0x1c84_9314;

impl std::fmt::Debug for IntervalEncoder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IntervalEncoder")
    }
}

impl IntervalEncoder {
    fn new() -> Self {
        IntervalEncoder {
            raw: Vec::new(),
            out: Vec::new(),
            zlib: flate2::Compress::new(flate2::Compression::fast(), true),
        }
    }

    /// The histogram in V2-compressed form, or `None` if it cannot be encoded.
    fn encode(&mut self, h: &Histogram<u64>) -> Option<&[u8]> {
        self.raw.clear();
        V2Serializer::new().serialize(h, &mut self.raw).ok()?;
        self.out.clear();
        self.out
            .extend_from_slice(&V2_COMPRESSED_COOKIE.to_be_bytes());
        self.out.extend_from_slice(&[0; 4]);
        self.out.reserve(self.raw.len() + 64);
        self.zlib.reset();
        loop {
            let consumed = self.zlib.total_in() as usize;
            let status = self
                .zlib
                .compress_vec(
                    &self.raw[consumed..],
                    &mut self.out,
                    flate2::FlushCompress::Finish,
                )
                .ok()?;
            if status == flate2::Status::StreamEnd {
                break;
            }
            self.out.reserve(self.out.capacity().max(64));
        }
        let len = (self.out.len() - 8) as u32;
        self.out[4..8].copy_from_slice(&len.to_be_bytes());
        Some(&self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(values: &[u64]) -> IntervalLog {
        let mut log = IntervalLog::new("p", 0.0);
        for (second, &v) in values.iter().enumerate() {
            let mut h = new_histogram();
            h.record(v).unwrap();
            log.push(second as u64, &h, true);
        }
        log
    }

    #[test]
    fn a_log_without_a_set_start_counts_from_its_run_start() {
        let text = log_of(&[1_000_000]).text();
        assert_eq!(
            text.lines().nth(2),
            Some("#[StartTime: 0.000 (seconds since run start)]")
        );
        let log = parse_hlog(&text, "p.hlog").unwrap();
        assert_eq!(log.start_unix_s, None);
        assert_eq!(log.intervals.len(), 1);
    }

    #[test]
    fn a_set_start_is_written_as_hdrhistogram_does_and_read_back() {
        let text = with_start_time(&log_of(&[1_000_000, 2_000_000]).text(), 1_712_345_678.9);
        // Setting it again replaces it rather than adding lines.
        let text = with_start_time(&text, 1_712_345_678.123_4);
        let header: Vec<&str> = text.lines().take(4).collect();
        assert_eq!(
            header[2..],
            [
                "#[StartTime: 1712345678.123 (seconds since epoch)]",
                "#[BaseTime: 1712345678.123 (seconds since epoch)]"
            ]
        );
        let log = parse_hlog(&text, "p.hlog").unwrap();
        assert_eq!(log.start_unix_s, Some(1_712_345_678.123));
        let starts: Vec<f64> = log.intervals.iter().map(|i| i.start_s).collect();
        assert_eq!(starts, [0.0, 1.0]);
        assert_eq!(log.intervals[1].histogram.max(), 2_000_000 | 1023);
        assert_eq!(sum_measured(&text, "p.hlog", "p", 1.0).unwrap().len(), 2);
        assert_eq!(log.measured_latencies, Some(2));
        // HdrHistogram's own reader sees the same start.
        use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
        let start = IntervalLogIterator::new(text.as_bytes()).find_map(|e| match e {
            Ok(LogEntry::StartTime(t)) => Some(t.as_secs_f64()),
            _ => None,
        });
        assert!((start.unwrap() - 1_712_345_678.123).abs() < 1e-6);
    }

    #[test]
    fn bad_lines_are_errors_naming_the_file_line_and_field() {
        let cases = [
            (
                "#[StartTime: soon (seconds since epoch)]\n",
                1,
                "`StartTime`",
            ),
            (
                "#[StartTime: 1.000 (seconds since epoch)]\nx,1.000,1.0,AAAA\n",
                2,
                "`start`",
            ),
            ("\"StartTimestamp\"\n0.000,1.000,1.0\n", 2, "`interval`"),
            ("0.000,1.000,1.0,@@@@\n", 1, "`histogram`"),
            ("0.000,1.000,1.0,AAAAAAAA\n", 1, "`histogram`"),
        ];
        for (text, line, field) in cases {
            let e = parse_hlog(text, "x.hlog").expect_err(text).to_string();
            assert!(
                e.starts_with(&format!("x.hlog:{line}:1: {field}")),
                "{text}: {e}"
            );
        }
    }
}

//! HdrHistogram's interval-log format (`.hlog`): one line per one-second interval, each a
//! base64 "V2 compressed" histogram, so that existing HdrHistogram tools read lblab's logs; and
//! reading such a log back ([`read_hlog`]).

use std::fmt::Write as _;
use std::path::Path;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2Serializer};
use hdrhistogram::Histogram;

use super::files::read_result_file;
use super::recorder::new_histogram;
use crate::ModelError;

/// One policy's interval log while it is written: a line per one-second interval.
#[derive(Debug)]
pub(super) struct IntervalLog {
    lines: String,
    encoder: IntervalEncoder,
}

impl IntervalLog {
    pub(super) fn new() -> Self {
        IntervalLog {
            lines: String::new(),
            encoder: IntervalEncoder::new(),
        }
    }

    /// Appends `h` as the one-second interval that starts at `second` from the run start; a
    /// histogram that cannot be encoded is left out.
    pub(super) fn push(&mut self, second: u64, h: &Histogram<u64>) {
        let max_ms = h.max() as f64 / 1e6;
        if let Some(bytes) = self.encoder.encode(h) {
            let _ = writeln!(
                self.lines,
                "{second}.000,1.000,{max_ms:.3},{}",
                base64::engine::general_purpose::STANDARD.encode(bytes)
            );
        }
    }

    /// The whole log of `policy`: the header, then the intervals. Its start is the run's own
    /// (`0.000 (seconds since run start)`, a simulated run) until [`with_start_time`] sets it.
    pub(super) fn text(&self, policy: &str) -> String {
        format!(
            "#[Histogram log of policy {} (latency in ms for the max column; values in ns)]\n{RUN_START}\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{}",
            policy, self.lines
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
const BASE_TIME: &str = "#[BaseTime: ";

/// The text of a log of intervals already encoded, starting at the Unix time `unix_s` (a merged
/// run's, [`super::merge`]).
pub(super) fn text_from(log: &IntervalLog, policy: &str, unix_s: f64) -> String {
    with_start_time(&log.text(policy), unix_s)
}

/// One interval of an hlog read back.
#[derive(Debug, Clone)]
pub struct HlogInterval {
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
    /// The intervals.
    pub intervals: Vec<HlogInterval>,
}

impl Hlog {
    /// The sum of the intervals that start at or after `from_s` seconds (a run's warm-up: what
    /// its summary measured, as the charts count it).
    pub fn sum_from(&self, from_s: f64) -> Result<Histogram<u64>, ModelError> {
        let mut total = new_histogram();
        for i in self.intervals.iter().filter(|i| i.start_s >= from_s) {
            total
                .add(&i.histogram)
                .map_err(|e| ModelError::invalid("histogram", format!("{e:?}")))?;
        }
        Ok(total)
    }
}

/// Reads the hlog at `path` ([`read_result_file`]'s size cap applies); see [`parse_hlog`].
pub fn read_hlog(path: &Path) -> Result<Hlog, ModelError> {
    parse_hlog(&read_result_file(path)?, &path.display().to_string())
}

/// Parses an HdrHistogram interval log as lblab writes it: `#` comment lines (of which
/// `#[StartTime: ...]` and `#[BaseTime: ...]` are read), the quoted column header, then one
/// `start,length,max,base64 V2-compressed histogram` line per interval. Errors name `file`, the
/// line and the field.
pub fn parse_hlog(text: &str, file: &str) -> Result<Hlog, ModelError> {
    let at = |line: usize, field: &str, message: String| ModelError::Parse {
        file: file.to_string(),
        field: Some(field.to_string()),
        position: Some((line, 1)),
        message,
    };
    let mut start = None;
    let mut base = None;
    let mut intervals = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line_no = n + 1;
        let line = line.trim();
        let header_time = |prefix: &str, field: &str| -> Result<Option<(f64, bool)>, ModelError> {
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
        if line.is_empty() || line.starts_with('#') || line.starts_with('"') {
            continue;
        }
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
        intervals.push(HlogInterval {
            start_s,
            length_s,
            histogram,
        });
    }
    let start_unix_s = start.and_then(|(s, epoch)| epoch.then_some(s));
    // Timestamps count from BaseTime when there is one (HdrHistogram's convention): make them
    // count from StartTime.
    if let (Some(start), Some((base, true))) = (start_unix_s, base) {
        for i in &mut intervals {
            i.start_s += base - start;
        }
    }
    Ok(Hlog {
        start_unix_s,
        intervals,
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
        let mut log = IntervalLog::new();
        for (second, &v) in values.iter().enumerate() {
            let mut h = new_histogram();
            h.record(v).unwrap();
            log.push(second as u64, &h);
        }
        log
    }

    #[test]
    fn a_log_without_a_set_start_counts_from_its_run_start() {
        let text = log_of(&[1_000_000]).text("p");
        assert_eq!(
            text.lines().nth(1),
            Some("#[StartTime: 0.000 (seconds since run start)]")
        );
        let log = parse_hlog(&text, "p.hlog").unwrap();
        assert_eq!(log.start_unix_s, None);
        assert_eq!(log.intervals.len(), 1);
    }

    #[test]
    fn a_set_start_is_written_as_hdrhistogram_does_and_read_back() {
        let text = with_start_time(&log_of(&[1_000_000, 2_000_000]).text("p"), 1_712_345_678.9);
        // Setting it again replaces it rather than adding lines.
        let text = with_start_time(&text, 1_712_345_678.123_4);
        let header: Vec<&str> = text.lines().take(3).collect();
        assert_eq!(
            header[1..],
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
        assert_eq!(log.sum_from(1.0).unwrap().len(), 1);
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

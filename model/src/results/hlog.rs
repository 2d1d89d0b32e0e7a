//! HdrHistogram's interval-log format (`.hlog`): one line per one-second interval, each a
//! base64 "V2 compressed" histogram, so that existing HdrHistogram tools read lblab's logs.

use std::fmt::Write as _;

use base64::Engine as _;
use hdrhistogram::serialization::{Serializer as _, V2Serializer};
use hdrhistogram::Histogram;

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

    /// The whole log of `policy`: the header, then the intervals.
    pub(super) fn text(&self, policy: &str) -> String {
        format!(
            "#[Histogram log of policy {} (latency in ms for the max column; values in ns)]\n#[StartTime: 0.000 (seconds since run start)]\n\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\"\n{}",
            policy, self.lines
        )
    }
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

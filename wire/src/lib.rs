//! What lblab's real client and real server share, on the wire and in real time.
//!
//! - [`pb`]: the generated protobuf and gRPC code: the lab's `lblab.v1.Echo` service (a unary
//!   `Unary` and a server-streaming `ServerStream`) and the ORCA load report
//!   (`xds.data.orca.v3.OrcaLoadReport`), compiled with `protox`, so no system `protoc` is needed;
//! - [`orca`]: the per-call ORCA load report in the `endpoint-load-metrics-bin` trailer (gRFC A51):
//!   its codec, and the server-side wrapper that moves it from headers to trailers;
//! - [`Clock`]: wall-clock time as model time (nanoseconds since a shared origin), so that the fleet
//!   and the load generator apply one scenario timeline;
//! - [`timer`]: precise timing below tokio's 1 ms granularity (a spinning timer thread, a pacing
//!   sleep), real-time scheduling and CPU pinning;
//! - [`ensure_open_files`]: the file-descriptor limit a run with many sockets needs.
//!
//! Client (`lblab-loadgen`) and server (`lblab-backend`) are peers: both depend on this crate,
//! neither on the other. It holds no behaviour model and no policy.
//!
//! ```
//! use std::time::{Duration, Instant};
//! let clock = lblab_wire::Clock::new(Instant::now());
//! let report = lblab_policy::LoadReport { cpu_utilization: 0.5, ..Default::default() };
//! let value = lblab_wire::orca::header_value(&report);
//! assert_eq!(lblab_wire::orca::from_header_value(&value), Some(report));
//! assert!(clock.instant(1_000) - clock.origin() == Duration::from_nanos(1_000));
//! ```

#![warn(missing_docs)]

mod clock;
mod limits;
pub mod orca;
pub mod timer;

pub use clock::Clock;
pub use limits::{ensure_open_files, OpenFilesError};

/// Generated protobuf and gRPC code.
pub mod pb {
    /// The encoded `FileDescriptorSet` of lblab's protos (Echo, ORCA), for server reflection.
    pub const FILE_DESCRIPTOR_SET: &[u8] =
        include_bytes!(concat!(env!("OUT_DIR"), "/lblab_descriptor.bin"));

    /// `lblab.v1`: the Echo service the fleet serves and the load generator calls.
    #[allow(missing_docs, clippy::all)]
    pub mod echo {
        tonic::include_proto!("lblab.v1");
    }
    /// `xds.data.orca.v3`: the ORCA load report.
    #[allow(missing_docs, clippy::all)]
    pub mod orca {
        tonic::include_proto!("xds.data.orca.v3");
    }
}

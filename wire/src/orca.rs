//! ORCA per-call load reports: the `endpoint-load-metrics-bin` metadata entry holding a serialized
//! `xds.data.orca.v3.OrcaLoadReport`, as gRPC's ORCA implementations send it in response trailers
//! (gRFC A51).
//!
//! Server side, [`OrcaTrailers`] moves the entry a handler put in its response metadata (which
//! tonic sends as *headers*) into the response's *trailers*, where clients look for it. Client side,
//! [`from_header_value`] decodes it into the [`LoadReport`] the policies read.

use std::pin::Pin;
use std::task::{Context, Poll};

use base64::engine::general_purpose::{GeneralPurpose, GeneralPurposeConfig};
use base64::engine::DecodePaddingMode;
use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue};
use http_body::{Body, Frame, SizeHint};
use lblab_policy::LoadReport;
use prost::Message as _;

use crate::pb::orca::OrcaLoadReport;

/// The metadata key of a per-call ORCA load report.
pub const ORCA_KEY: &str = "endpoint-load-metrics-bin";

/// Binary metadata is base64 on the wire; gRPC implementations send it unpadded and must accept
/// both.
const B64: GeneralPurpose = GeneralPurpose::new(
    &base64::alphabet::STANDARD,
    GeneralPurposeConfig::new()
        .with_encode_padding(false)
        .with_decode_padding_mode(DecodePaddingMode::Indifferent),
);

/// The protobuf of a report.
pub fn to_proto(r: &LoadReport) -> OrcaLoadReport {
    OrcaLoadReport {
        cpu_utilization: r.cpu_utilization,
        application_utilization: r.application_utilization,
        rps_fractional: r.rps_fractional,
        eps: r.eps,
        ..OrcaLoadReport::default()
    }
}

/// The fields of a protobuf report the policies read.
pub fn from_proto(p: &OrcaLoadReport) -> LoadReport {
    LoadReport {
        cpu_utilization: p.cpu_utilization,
        application_utilization: p.application_utilization,
        rps_fractional: p.rps_fractional,
        eps: p.eps,
    }
}

/// Serializes a report as an `OrcaLoadReport` protobuf.
pub fn encode(r: &LoadReport) -> Vec<u8> {
    to_proto(r).encode_to_vec()
}

/// Parses an `OrcaLoadReport` protobuf.
pub fn decode(bytes: &[u8]) -> Result<LoadReport, prost::DecodeError> {
    OrcaLoadReport::decode(bytes).map(|p| from_proto(&p))
}

/// The metadata value (base64 of the protobuf) of a report.
pub fn header_value(r: &LoadReport) -> HeaderValue {
    HeaderValue::from_str(&B64.encode(encode(r))).expect("base64 is a valid header value")
}

/// Decodes a report from an `endpoint-load-metrics-bin` header value; `None` if it is not valid
/// base64 or not a valid protobuf (a malformed report is ignored, as gRPC does).
pub fn from_header_value(value: &HeaderValue) -> Option<LoadReport> {
    let bytes = B64.decode(value.as_bytes()).ok()?;
    decode(&bytes).ok()
}

/// Decodes the report in a header map (trailers, or the headers of a trailers-only response).
pub fn from_headers(headers: &HeaderMap) -> Option<LoadReport> {
    headers.get(ORCA_KEY).and_then(from_header_value)
}

/// A tower service wrapper that moves the ORCA entry from a response's headers to its trailers.
/// Trailers-only responses (an error status: `grpc-status` already in the headers) are left as
/// they are, since their headers are the trailers.
#[derive(Debug, Clone)]
pub struct OrcaTrailers<S> {
    inner: S,
}

impl<S> OrcaTrailers<S> {
    /// Wraps `inner`.
    pub fn new(inner: S) -> Self {
        OrcaTrailers { inner }
    }
}

impl<S, Req, B> tower::Service<Req> for OrcaTrailers<S>
where
    S: tower::Service<Req, Response = http::Response<B>>,
    S::Future: Send + 'static,
{
    type Response = http::Response<TrailerBody<B>>;
    type Error = S::Error;
    type Future =
        Pin<Box<dyn std::future::Future<Output = Result<Self::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Req) -> Self::Future {
        let fut = self.inner.call(req);
        Box::pin(async move {
            let resp = fut.await?;
            let (mut parts, body) = resp.into_parts();
            let pending = if parts.headers.contains_key("grpc-status") {
                None
            } else {
                parts.headers.remove(ORCA_KEY)
            };
            Ok(http::Response::from_parts(
                parts,
                TrailerBody {
                    inner: body,
                    pending,
                },
            ))
        })
    }
}

/// A response body that adds one ORCA entry to the trailers frame of the body it wraps.
#[derive(Debug)]
pub struct TrailerBody<B> {
    inner: B,
    pending: Option<HeaderValue>,
}

impl<B> Body for TrailerBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let frame = match frame.into_trailers() {
                    Ok(mut trailers) => {
                        if let Some(v) = this.pending.take() {
                            trailers.insert(ORCA_KEY, v);
                        }
                        Frame::trailers(trailers)
                    }
                    Err(frame) => frame,
                };
                Poll::Ready(Some(Ok(frame)))
            }
            other => other,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn report_round_trips_through_a_header_value() {
        let r = LoadReport {
            cpu_utilization: 0.25,
            application_utilization: 0.0,
            rps_fractional: 123.5,
            eps: 2.0,
        };
        let v = header_value(&r);
        assert!(!v.as_bytes().contains(&b'='), "sent unpadded");
        assert_eq!(from_header_value(&v), Some(r));
        // A padded value decodes too.
        let padded = base64::engine::general_purpose::STANDARD.encode(encode(&r));
        assert_eq!(
            from_header_value(&HeaderValue::from_str(&padded).expect("ascii")),
            Some(r)
        );
        assert_eq!(from_header_value(&HeaderValue::from_static("!!")), None);
    }
}

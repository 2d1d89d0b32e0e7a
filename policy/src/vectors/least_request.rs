//! The vectors of least_request_experimental (gRFC A48): config cases and sequences (outstanding counts).

use serde_json::{json, Value};

use super::format::{config_cases, document};
use super::recorder::{Sequences, MS};
use super::subject::Shows;
use crate::{Connectivity, RpcKind, Status};

/// The policy these vectors are for.
pub(super) const POLICY: &str = crate::least_request::NAME;
/// What its expectations show for each endpoint.
pub(super) const SHOWS: Shows = Shows::Outstanding;

pub(super) fn file() -> Value {
    use Connectivity::*;
    use RpcKind::*;
    use Status::*;
    let policy = POLICY;
    let cases = config_cases(
        policy,
        &[
            json!({}),
            json!({"choiceCount": 4}),
            json!({"choiceCount": 11}),
            json!({"decayTime": "1s"}),
        ],
        &[json!({"choiceCount": 1}), json!({"choiceCount": 2.5})],
    );
    let mut s = Sequences {
        policy,
        shows: SHOWS,
        out: Vec::new(),
        pin: None,
    };
    s.add(
        "counting",
        "Every RPC counts as outstanding from its pick to its completion, unary or streaming, \
         whatever the status (CANCELLED too). Draws are with replacement: the same index may be \
         drawn twice; ties go to the earlier draw.",
        json!({}),
        |r| {
            r.ready_all(0, &[0, 1, 2]);
            let a = r.unary(0, &[1, 1]);
            let b = r.pick(0, Streaming, &[1, 0]).expect("picked");
            let c = r.unary(0, &[1, 2]);
            let d = r.unary(0, &[2, 0]);
            r.done(MS, a, Ok, MS);
            r.done(2 * MS, b, Cancelled, 2 * MS);
            let e = r.unary(3 * MS, &[0, 1]);
            r.done(4 * MS, c, DeadlineExceeded, 4 * MS);
            r.done(4 * MS, d, Error, 4 * MS);
            r.done(5 * MS, e, Ok, 2 * MS);
        },
    );
    s.add(
        "connectivity_and_removal",
        "A call on an endpoint that leaves READY still counts until it completes; a removed \
         endpoint's calls complete harmlessly; one READY endpoint is picked without a draw.",
        json!({"choiceCount": 3}),
        |r| {
            r.ready_all(0, &[0, 1, 2]);
            let a = r.unary(0, &[0, 0, 0]);
            let b = r.unary(0, &[0, 1, 2]);
            r.state(MS, 1, TransientFailure);
            r.state(MS, 2, Connecting);
            let c = r.unary(2 * MS, &[]);
            r.state(3 * MS, 1, Ready);
            r.done(4 * MS, b, Ok, 4 * MS);
            r.set_endpoints(5 * MS, &[1, 2]);
            r.done(6 * MS, a, Ok, 6 * MS);
            r.done(6 * MS, c, Ok, 4 * MS);
        },
    );
    document(
        policy,
        "least_request_experimental (gRFC A48): the fewest outstanding requests among \
         choiceCount draws with replacement.",
        cases,
        s.out,
    )
}

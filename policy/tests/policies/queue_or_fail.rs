//! What a pick returns when nothing is READY, under every policy: queue while something may still
//! connect, fail when everything is in TRANSIENT_FAILURE or there is nothing.

use lblab_policy::{Connectivity, Pick, RpcKind};

use crate::harness::{Lab, EVERY_POLICY};

fn kind_of(p: Pick) -> &'static str {
    match p {
        Pick::Endpoint(_) => "endpoint",
        Pick::Queue => "queue",
        Pick::Fail => "fail",
    }
}

#[test]
fn queue_while_something_may_connect_fail_when_nothing_can() {
    use Connectivity::*;
    for &(label, entry) in EVERY_POLICY {
        let mut lab = Lab::new(entry);
        let expect = |lab: &mut Lab, states: &[Connectivity], want: &str| {
            for (e, &s) in states.iter().enumerate() {
                lab.set_state(e as u32, s);
            }
            for kind in [RpcKind::Unary, RpcKind::Streaming] {
                let got = match lab.pick(kind) {
                    Pick::Endpoint(t) => {
                        lab.done(t, lblab_policy::Status::Cancelled, 0);
                        "endpoint"
                    }
                    p => kind_of(p),
                };
                assert_eq!(got, want, "{label}: {states:?} {kind:?}");
            }
        };
        expect(&mut lab, &[], "fail"); // no endpoints at all
        lab.set_endpoints(&[0, 1, 2]);
        expect(&mut lab, &[Idle, Idle, Idle], "queue"); // new endpoints start IDLE
        expect(
            &mut lab,
            &[TransientFailure, Connecting, TransientFailure],
            "queue",
        );
        expect(
            &mut lab,
            &[TransientFailure, TransientFailure, Idle],
            "queue",
        );
        expect(
            &mut lab,
            &[TransientFailure, TransientFailure, TransientFailure],
            "fail",
        );
        expect(
            &mut lab,
            &[TransientFailure, Ready, TransientFailure],
            "endpoint",
        );
        expect(
            &mut lab,
            &[Connecting, TransientFailure, TransientFailure],
            "queue",
        );
        lab.set_endpoints(&[]);
        expect(&mut lab, &[], "fail");
    }
}

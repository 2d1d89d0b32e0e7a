//! `least_request_experimental` (A48): fewest outstanding of `choiceCount` draws with replacement.

use lblab_policy::{EndpointId, Pick, RpcKind, Status};

use crate::harness::{Lab, Script};

const LR: &str = r#"{"least_request_experimental":{}}"#;

fn pick_scripted(lab: &mut Lab, n: usize, draws: &[usize]) -> EndpointId {
    let mut script = Script::indices(n, draws);
    let got = match lab.pick_with(RpcKind::Unary, &mut script) {
        Pick::Endpoint(t) => {
            let e = t.endpoint();
            lab.done(t, Status::Cancelled, 0);
            e
        }
        other => panic!("{other:?}"),
    };
    assert!(script.is_empty(), "the picker drew fewer than {draws:?}");
    got
}

#[test]
fn fewest_outstanding_of_the_draws_wins() {
    let mut lab = Lab::ready(LR, 3);
    // Outstanding: endpoint 0 has 2, endpoint 1 has 1, endpoint 2 has 0.
    let held: Vec<_> = [0, 0, 1]
        .iter()
        .map(
            |&i| match lab.pick_with(RpcKind::Unary, &mut Script::indices(3, &[i, i])) {
                Pick::Endpoint(t) => t,
                other => panic!("{other:?}"),
            },
        )
        .collect();
    assert_eq!([0, 1, 2].map(|e| lab.view(e).outstanding), [2, 1, 0]);
    assert_eq!(pick_scripted(&mut lab, 3, &[0, 1]), EndpointId(1));
    assert_eq!(pick_scripted(&mut lab, 3, &[1, 0]), EndpointId(1));
    assert_eq!(pick_scripted(&mut lab, 3, &[0, 2]), EndpointId(2));
    assert_eq!(pick_scripted(&mut lab, 3, &[0, 0]), EndpointId(0)); // drawn twice: no choice
    for t in held {
        lab.done(t, Status::Ok, 0);
    }
}

#[test]
fn ties_go_to_the_earlier_draw() {
    let mut lab = Lab::ready(LR, 3);
    assert_eq!(pick_scripted(&mut lab, 3, &[2, 0]), EndpointId(2));
    assert_eq!(pick_scripted(&mut lab, 3, &[0, 2]), EndpointId(0));
    assert_eq!(pick_scripted(&mut lab, 3, &[1, 2]), EndpointId(1));
}

#[test]
fn choice_count_is_the_number_of_draws() {
    let mut lab = Lab::ready(r#"{"least_request_experimental":{"choiceCount":4}}"#, 5);
    let held = match lab.pick_with(RpcKind::Unary, &mut Script::indices(5, &[0, 0, 0, 0])) {
        Pick::Endpoint(t) => t,
        other => panic!("{other:?}"),
    };
    // Endpoint 0 has one call outstanding, the others none: all four draws are looked at (the
    // script must be used up), and among equals the first draw wins.
    assert_eq!(pick_scripted(&mut lab, 5, &[0, 0, 0, 3]), EndpointId(3));
    assert_eq!(pick_scripted(&mut lab, 5, &[4, 0, 1, 3]), EndpointId(4));
    lab.done(held, Status::Ok, 0);
}

#[test]
fn every_kind_and_status_is_counted() {
    let mut lab = Lab::ready(LR, 1);
    let tickets: Vec<_> = [
        RpcKind::Unary,
        RpcKind::Streaming,
        RpcKind::Unary,
        RpcKind::Streaming,
    ]
    .into_iter()
    .map(|k| lab.ticket(k))
    .collect();
    assert_eq!(lab.view(0).outstanding, 4);
    for (t, status) in tickets.into_iter().zip([
        Status::Ok,
        Status::Error,
        Status::Cancelled,
        Status::DeadlineExceeded,
    ]) {
        let before = lab.view(0).outstanding;
        lab.done(t, status, 1_000);
        assert_eq!(lab.view(0).outstanding, before - 1, "{status:?}");
    }
    assert_eq!(lab.view(0).cost, Some(0.0));
}

#[test]
fn balances_outstanding_under_load() {
    let mut lab = Lab::ready(LR, 4);
    lab.backend(0).latency = 200 * crate::harness::MS;
    lab.drive(10 * crate::harness::SEC, 400);
    // The slow endpoint accumulates outstanding calls and is avoided.
    assert!(lab.share(0) < 0.15, "{}", lab.share(0));
}

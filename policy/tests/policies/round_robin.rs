//! `round_robin`: READY endpoints in turn from a random offset.

use lblab_policy::{Connectivity, EndpointId, Status};

use crate::harness::Lab;

const RR: &str = r#"{"round_robin":{}}"#;

fn next(lab: &mut Lab) -> u32 {
    let t = lab.unary();
    let e = t.endpoint().0;
    lab.done(t, Status::Ok, 0);
    e
}

#[test]
fn takes_turns_in_list_order() {
    let mut lab = Lab::new(RR);
    lab.set_endpoints(&[4, 2, 0, 3, 1]);
    for e in 0..5 {
        lab.set_state(e, Connectivity::Ready);
    }
    let order = [4, 2, 0, 3, 1];
    let first = next(&mut lab);
    let start = order.iter().position(|&e| e == first).unwrap();
    for k in 1..500 {
        assert_eq!(next(&mut lab), order[(start + k) % 5], "pick {k}");
    }
}

#[test]
fn turns_are_even() {
    let mut lab = Lab::ready(RR, 5);
    lab.burst(1000);
    for e in 0..5 {
        assert_eq!(lab.picks(e), 200);
    }
}

#[test]
fn starts_at_a_random_offset() {
    let mut firsts = [0u32; 5];
    for seed in 0..500 {
        let mut lab = Lab::with_seed(RR, seed);
        lab.set_endpoints(&[0, 1, 2, 3, 4]);
        for e in 0..5 {
            lab.set_state(e, Connectivity::Ready);
        }
        firsts[next(&mut lab) as usize] += 1;
    }
    assert!(firsts.iter().all(|&n| n > 60), "{firsts:?}");
}

#[test]
fn skips_endpoints_that_are_not_ready() {
    let mut lab = Lab::ready(RR, 5);
    lab.set_state(1, Connectivity::Connecting);
    lab.set_state(3, Connectivity::TransientFailure);
    lab.burst(300);
    assert_eq!([0, 1, 2, 3, 4].map(|e| lab.picks(e)), [100, 0, 100, 0, 100]);
    lab.set_state(4, Connectivity::Idle);
    lab.reset_picks();
    lab.burst(100);
    assert_eq!([0, 1, 2, 3, 4].map(|e| lab.picks(e)), [50, 0, 50, 0, 0]);
    lab.set_state(3, Connectivity::Ready);
    lab.reset_picks();
    lab.burst(99);
    assert_eq!([0, 1, 2, 3, 4].map(|e| lab.picks(e)), [33, 0, 33, 33, 0]);
    let _ = EndpointId(0);
}

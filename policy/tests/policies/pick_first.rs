//! `pick_first`: the first READY endpoint in list order.

use lblab_policy::Connectivity;

use crate::harness::Lab;

#[test]
fn picks_the_first_ready_endpoint_in_list_order() {
    let mut lab = Lab::new(r#"{"pick_first":{}}"#);
    lab.set_endpoints(&[3, 1, 2]);
    lab.set_state(2, Connectivity::Ready);
    lab.set_state(1, Connectivity::Ready);
    lab.burst(10);
    assert_eq!((lab.picks(1), lab.picks(2), lab.picks(3)), (10, 0, 0));

    lab.set_state(3, Connectivity::Ready);
    lab.reset_picks();
    lab.burst(10);
    assert_eq!(lab.picks(3), 10);

    lab.set_state(3, Connectivity::TransientFailure);
    lab.reset_picks();
    lab.burst(10);
    assert_eq!(lab.picks(1), 10);

    // A new list order decides.
    lab.set_endpoints(&[2, 3, 1]);
    lab.reset_picks();
    lab.burst(10);
    assert_eq!(lab.picks(2), 10);
}

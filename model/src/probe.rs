//! What an out-of-band latency probe sees of a backend: the model behind the question whether a
//! client can learn that a backend healed without sending it a user call.
//!
//! Two probes need nothing from the application:
//! - [`Probe::HealthCheck`]: a unary `grpc.health.v1.Health/Check` on the endpoint's own
//!   connection. It is an RPC, so the server's keepalive enforcement does not limit it; it runs a
//!   trivial handler ([`HEALTH_CHECK_WORK`] of CPU work) outside the application's workers and
//!   queue, and the health service answers SERVING whatever the application's calls do.
//! - [`Probe::Ping`]: an HTTP/2 PING round trip, answered by the transport with no handler at
//!   all. Servers allow a client's pings only every few minutes while no call is active
//!   (grpc-go's `EnforcementPolicy.MinTime` is 5 minutes by default and earlier pings earn a
//!   GOAWAY), so on an endpoint that a policy avoids it is usable that rarely.
//!
//! Given a backend's fault timeline, [`seen`] says what a probe sent at a time gets back. What
//! follows from the model (each line is a test below):
//!
//! | fault | health Check | PING |
//! |---|---|---|
//! | stop-the-world pause (`gc_pauses`) | sees it: waits for the pause to end | sees it |
//! | CPU throttling (`cpu_throttle`) | sees it once the quota is spent | sees it |
//! | uniform slowdown ×k, noisy neighbour, cold start | its own 20 µs of work ×k: tiny beside the calls' milliseconds | no |
//! | a queue of waiting calls | no: it does not wait for a worker | no |
//! | one method slow (a slow dependency) | no | no |
//! | fail fast | no: the health service still answers SERVING | no |
//! | crash | refused, as calls are | refused |
//! | black hole (accepts, never answers) | never answered | answered by the transport: no |
//! | a slow network path | sees it whole | sees it whole |
//!
//! So a probe can tell a client that a *stall* (a pause, throttling, a black hole, a crash, the
//! network) has ended, not that a backend whose calls are slow for the application's own reasons
//! has become fast again: for those, only a user call can say, and the arithmetic of learning
//! through user calls holds (`docs/design.md`).

use lblab_policy::Nanos;

use crate::fault::Timeline;

/// The CPU work of a health Check's handler: a lookup and a small reply.
pub const HEALTH_CHECK_WORK: Nanos = 20_000;

/// An out-of-band probe a client can send on an endpoint's connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Probe {
    /// A unary `grpc.health.v1.Health/Check`.
    HealthCheck,
    /// An HTTP/2 PING.
    Ping,
}

/// What a probe gets back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// An answer after this round trip (ns), network included.
    Rtt(Nanos),
    /// The connection is refused: the backend is down.
    Refused,
    /// No answer, ever.
    NoAnswer,
}

/// What `probe`, sent at `now` to a backend with fault timeline `timeline` behind a network
/// round trip of `network_rtt`, gets back.
pub fn seen(probe: Probe, timeline: &Timeline, now: Nanos, network_rtt: Nanos) -> Seen {
    let half = network_rtt / 2;
    let arrive = now.saturating_add(half);
    if timeline.down_at(arrive) {
        return Seen::Refused;
    }
    if probe == Probe::HealthCheck && timeline.black_hole_at(arrive) {
        return Seen::NoAnswer;
    }
    // A PING is answered by the transport: no work of its own, but a stopped process (speed 0)
    // answers nothing until it runs again; 1 ns of work says so.
    let work = match probe {
        Probe::HealthCheck => HEALTH_CHECK_WORK,
        Probe::Ping => 1,
    };
    let done = timeline.finish_time(arrive, work);
    if done == Nanos::MAX {
        return Seen::NoAnswer;
    }
    Seen::Rtt(done.saturating_add(network_rtt - half) - now)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fault::FaultSpec;
    use crate::method::Methods;
    use crate::units::Dur;

    const MS: Nanos = 1_000_000;

    fn timeline(fault: FaultSpec) -> Timeline {
        Timeline::new(&[&fault], 1, 10_000 * MS, &Methods::default())
    }

    fn slowdown(factor: f64) -> FaultSpec {
        FaultSpec::Slowdown {
            targets: vec![],
            factor,
            methods: vec![],
            start: Dur(0),
            end: None,
        }
    }

    #[test]
    fn a_healthy_backend_answers_a_check_in_its_work_and_a_ping_at_once() {
        let t = Timeline::default();
        assert_eq!(
            seen(Probe::HealthCheck, &t, 0, MS),
            Seen::Rtt(MS + HEALTH_CHECK_WORK)
        );
        assert_eq!(seen(Probe::Ping, &t, 0, MS), Seen::Rtt(MS + 1));
    }

    #[test]
    fn a_pause_is_seen_by_both_probes() {
        let t = timeline(FaultSpec::GcPauses {
            targets: vec![],
            every: Dur(2_000 * MS),
            pause: Dur(150 * MS),
            start: Dur(0),
            end: None,
        });
        // Sent 10 ms into a pause whose phase the seed fixed: find one by probing each ms.
        let paused = (0..2_000)
            .map(|ms| ms * MS)
            .find(|&at| matches!(seen(Probe::Ping, &t, at, 0), Seen::Rtt(rtt) if rtt > 100 * MS));
        let at = paused.expect("a probe meets a pause within one period");
        for probe in [Probe::Ping, Probe::HealthCheck] {
            match seen(probe, &t, at, 0) {
                Seen::Rtt(rtt) => assert!(rtt > 100 * MS, "{probe:?} {rtt}"),
                other => panic!("{probe:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_slowdown_stretches_only_the_checks_own_work() {
        let t = timeline(slowdown(10.0));
        assert_eq!(
            seen(Probe::HealthCheck, &t, 0, 0),
            Seen::Rtt(10 * HEALTH_CHECK_WORK)
        );
        // 200 µs: a tenth of a healthy call's 2 ms, so the check says little about the calls.
        assert!(matches!(seen(Probe::Ping, &t, 0, 0), Seen::Rtt(rtt) if rtt <= 10));
    }

    #[test]
    fn throttling_is_seen_once_the_quota_is_spent() {
        let t = timeline(FaultSpec::CpuThrottle {
            targets: vec![],
            quota: Dur(20 * MS),
            period: Dur(100 * MS),
            start: Dur(0),
            end: None,
        });
        assert_eq!(
            seen(Probe::HealthCheck, &t, 0, 0),
            Seen::Rtt(HEALTH_CHECK_WORK)
        );
        // 50 ms into the period the quota is spent: the answer waits for the next one.
        assert_eq!(
            seen(Probe::HealthCheck, &t, 50 * MS, 0),
            Seen::Rtt(50 * MS + HEALTH_CHECK_WORK)
        );
    }

    #[test]
    fn failing_fast_is_not_seen_and_a_black_hole_only_by_a_check() {
        let fail = timeline(FaultSpec::FailFast {
            targets: vec![],
            error_rate: 0.9,
            start: Dur(0),
            end: None,
        });
        assert_eq!(
            seen(Probe::HealthCheck, &fail, 0, 0),
            Seen::Rtt(HEALTH_CHECK_WORK)
        );
        let hole = timeline(FaultSpec::BlackHole {
            targets: vec![],
            start: Dur(0),
            end: None,
        });
        assert_eq!(seen(Probe::HealthCheck, &hole, 0, 0), Seen::NoAnswer);
        assert_eq!(seen(Probe::Ping, &hole, 0, 0), Seen::Rtt(1));
    }

    #[test]
    fn a_crashed_backend_refuses_both() {
        let t = timeline(FaultSpec::Crash {
            targets: vec![],
            at: Dur(0),
            restart_after: None,
        });
        assert_eq!(seen(Probe::HealthCheck, &t, MS, 0), Seen::Refused);
        assert_eq!(seen(Probe::Ping, &t, MS, 0), Seen::Refused);
    }

    #[test]
    fn a_slow_network_path_is_seen_whole() {
        let t = Timeline::default();
        assert_eq!(seen(Probe::Ping, &t, 0, 40 * MS), Seen::Rtt(40 * MS + 1));
    }
}

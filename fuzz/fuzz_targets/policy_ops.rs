//! Random operation sequences against every policy, outlier detection wrapping each child:
//! endpoint list changes, connectivity changes, picks, completions of outstanding tickets in any
//! order, timers, load reports (NaN and infinities included) and a clock that jumps back and forth.
//! Never a panic, never a pick of an endpoint the owner has not seen READY, never a NaN cost.
#![no_main]

use arbitrary::Arbitrary;
use lblab_policy::config::{parse_service_config, PolicyConfig};
use lblab_policy::{
    Connectivity, EndpointId, LoadReport, Nanos, Outcome, Pick, RpcKind, Status, Ticket,
};
use libfuzzer_sys::fuzz_target;
use rand::rngs::SmallRng;
use rand::SeedableRng;

/// The endpoints an input can name.
const IDS: u32 = 12;

#[derive(Debug, Arbitrary)]
enum Child {
    PickFirst,
    RoundRobin,
    LeastRequest {
        choices: u8,
    },
    PeakEwma {
        choices: u8,
        decay_ms: u32,
        rtt_us: u32,
        on_read: bool,
        distinct: bool,
        streams: u8,
    },
    EnvoyPeakEwma {
        decay_ms: u32,
        interval_ms: u16,
        max_samples: u16,
        rtt_ms: u16,
        penalty: u16,
    },
    Wrr {
        oob: bool,
        oob_ms: u32,
        blackout_ms: u32,
        expire_ms: u32,
        update_ms: u32,
        penalty: u8,
    },
}

#[derive(Debug, Arbitrary)]
struct Od {
    interval_ms: u32,
    base_ms: u32,
    max_ms: Option<u32>,
    max_percent: u8,
    success_rate: Option<(u16, u8, u8, u16)>,
    failure_percentage: Option<(u8, u8, u8, u16)>,
}

#[derive(Debug, Arbitrary)]
enum Op {
    SetEndpoints(u16),
    Connectivity(u8, u8),
    Pick(bool),
    Done {
        index: u8,
        status: u8,
        elapsed_us: u32,
        load: Option<(u8, u8, u16, u8)>,
    },
    Timer,
    TimerAt(u32),
    LoadReport {
        endpoint: u8,
        cpu: f64,
        app: f64,
        qps: f64,
        eps: f64,
    },
    Advance(u32),
    Back(u32),
    View,
}

#[derive(Debug, Arbitrary)]
struct Input {
    child: Child,
    od: Option<Od>,
    seed: u64,
    ops: Vec<Op>,
}

fn dur(ms: u32) -> String {
    format!("{}.{:03}s", ms / 1000, ms % 1000)
}

fn child_json(c: &Child) -> String {
    match *c {
        Child::PickFirst => r#"{"pick_first":{}}"#.into(),
        Child::RoundRobin => r#"{"round_robin":{}}"#.into(),
        Child::LeastRequest { choices } => format!(
            r#"{{"least_request_experimental":{{"choiceCount":{}}}}}"#,
            2 + choices % 12
        ),
        Child::PeakEwma {
            choices,
            decay_ms,
            rtt_us,
            on_read,
            distinct,
            streams,
        } => format!(
            r#"{{"peak_ewma_experimental":{{"choiceCount":{},"decayTime":"{}","defaultRtt":"{}.{:06}s","lblabAblation":{{"decay":"{}","sampling":"{}","streams":"{}"}}}}}}"#,
            2 + choices % 12,
            dur(1 + decay_ms % 120_000),
            (1 + u64::from(rtt_us)) / 1_000_000,
            (1 + u64::from(rtt_us)) % 1_000_000,
            if on_read { "on_read" } else { "time_weighted" },
            if distinct {
                "distinct"
            } else {
                "with_replacement"
            },
            ["ignore", "outstanding", "count"][usize::from(streams % 3)],
        ),
        Child::EnvoyPeakEwma {
            decay_ms,
            interval_ms,
            max_samples,
            rtt_ms,
            penalty,
        } => format!(
            r#"{{"envoy_peak_ewma":{{"decayTime":"{}","aggregationInterval":"{}","maxSamplesPerHost":{},"defaultRtt":"{}","penaltyValue":{}}}}}"#,
            dur(1 + decay_ms % 120_000),
            dur(1 + u32::from(interval_ms)),
            1 + max_samples % 2000,
            dur(1 + u32::from(rtt_ms)),
            1 + u32::from(penalty),
        ),
        Child::Wrr {
            oob,
            oob_ms,
            blackout_ms,
            expire_ms,
            update_ms,
            penalty,
        } => format!(
            r#"{{"weighted_round_robin":{{"enableOobLoadReport":{oob},"oobReportingPeriod":"{}","blackoutPeriod":"{}","weightExpirationPeriod":"{}","weightUpdatePeriod":"{}","errorUtilizationPenalty":{}}}}}"#,
            dur(oob_ms % 60_000),
            dur(blackout_ms % 60_000),
            dur(expire_ms % 600_000),
            dur(update_ms % 10_000),
            f64::from(penalty) / 16.0,
        ),
    }
}

fn config(input: &Input) -> PolicyConfig {
    let child = child_json(&input.child);
    let entry = match &input.od {
        None => child,
        Some(od) => {
            let mut fields = vec![
                format!(r#""interval":"{}""#, dur(1 + od.interval_ms % 60_000)), // 0s is rejected
                format!(r#""baseEjectionTime":"{}""#, dur(od.base_ms % 600_000)),
                format!(r#""maxEjectionPercent":{}"#, od.max_percent % 101),
            ];
            if let Some(m) = od.max_ms {
                fields.push(format!(r#""maxEjectionTime":"{}""#, dur(m % 600_000)));
            }
            if let Some((f, e, h, v)) = od.success_rate {
                fields.push(format!(r#""successRateEjection":{{"stdevFactor":{f},"enforcementPercentage":{},"minimumHosts":{},"requestVolume":{v}}}"#, e % 101, h % 16));
            }
            if let Some((t, e, h, v)) = od.failure_percentage {
                fields.push(format!(r#""failurePercentageEjection":{{"threshold":{},"enforcementPercentage":{},"minimumHosts":{},"requestVolume":{v}}}"#, t % 101, e % 101, h % 16));
            }
            fields.push(format!(r#""childPolicy":[{child}]"#));
            format!(
                r#"{{"outlier_detection_experimental":{{{}}}}}"#,
                fields.join(",")
            )
        }
    };
    let json = format!(r#"{{"loadBalancingConfig":[{entry}]}}"#);
    parse_service_config(&json).unwrap_or_else(|e| panic!("generated config {json} rejected: {e}"))
}

fuzz_target!(|input: Input| {
    let cfg = config(&input);
    let mut now: Nanos = 1_000_000_000;
    let mut policy = cfg.build(now);
    let mut rng = SmallRng::seed_from_u64(input.seed);
    // The owner's view: the endpoint list and the last state reported for each endpoint on it.
    let mut listed: Vec<EndpointId> = Vec::new();
    let mut state = [Connectivity::Idle; IDS as usize];
    let mut tickets: Vec<Ticket> = Vec::new();
    let mut timer_calls = 0u32;
    for op in input.ops.iter().take(2000) {
        match *op {
            Op::SetEndpoints(mask) => {
                let next: Vec<EndpointId> = (0..IDS)
                    .filter(|i| mask & (1 << i) != 0)
                    .map(EndpointId)
                    .collect();
                for id in 0..IDS {
                    let e = EndpointId(id);
                    if !next.contains(&e) || !listed.contains(&e) {
                        state[id as usize] = Connectivity::Idle;
                    }
                }
                listed = next;
                policy.set_endpoints(now, &listed);
            }
            Op::Connectivity(e, s) => {
                let e = u32::from(e) % (IDS + 1); // sometimes an endpoint never listed
                let s = [
                    Connectivity::Idle,
                    Connectivity::Connecting,
                    Connectivity::Ready,
                    Connectivity::TransientFailure,
                ][s as usize % 4];
                if (e as usize) < state.len() && listed.contains(&EndpointId(e)) {
                    state[e as usize] = s;
                }
                policy.on_connectivity(now, EndpointId(e), s);
            }
            Op::Pick(streaming) => {
                let kind = if streaming {
                    RpcKind::Streaming
                } else {
                    RpcKind::Unary
                };
                match policy.pick(now, kind, &mut rng) {
                    Pick::Endpoint(t) => {
                        let e = t.endpoint();
                        assert!(
                            listed.contains(&e),
                            "picked {e}, not in the list {listed:?}"
                        );
                        assert_eq!(
                            state[e.0 as usize],
                            Connectivity::Ready,
                            "picked {e}, which is not READY"
                        );
                        tickets.push(t);
                    }
                    Pick::Queue | Pick::Fail => {}
                }
            }
            Op::Done {
                index,
                status,
                elapsed_us,
                load,
            } => {
                if tickets.is_empty() {
                    continue;
                }
                let t = tickets.swap_remove(index as usize % tickets.len());
                let status = [
                    Status::Ok,
                    Status::DeadlineExceeded,
                    Status::Cancelled,
                    Status::Error,
                ][status as usize % 4];
                let mut outcome = Outcome::new(status, u64::from(elapsed_us) * 1000);
                if let Some((cpu, app, qps, eps)) = load {
                    outcome = outcome.with_load(LoadReport {
                        cpu_utilization: f64::from(cpu) / 100.0,
                        application_utilization: f64::from(app) / 100.0,
                        rps_fractional: f64::from(qps),
                        eps: f64::from(eps),
                    });
                }
                policy.on_done(now, t, outcome);
            }
            Op::Timer => {
                if let Some(at) = policy.next_timer() {
                    now = now.max(at);
                    policy.on_timer(now, &mut rng);
                    timer_calls += 1;
                }
            }
            Op::TimerAt(dt) => {
                policy.on_timer(
                    now.saturating_add(u64::from(dt) * 1000)
                        .saturating_sub(500_000_000),
                    &mut rng,
                );
            }
            Op::LoadReport {
                endpoint,
                cpu,
                app,
                qps,
                eps,
            } => {
                let report = LoadReport {
                    cpu_utilization: cpu,
                    application_utilization: app,
                    rps_fractional: qps,
                    eps,
                };
                policy.on_load_report(now, EndpointId(u32::from(endpoint) % (IDS + 1)), &report);
            }
            Op::Advance(dt) => now = now.saturating_add(u64::from(dt) * 1000),
            Op::Back(dt) => now = now.saturating_sub(u64::from(dt) * 1000),
            Op::View => {
                for &e in &listed {
                    if let Some(v) = policy.endpoint_view(now, e) {
                        if let Some(c) = v.cost {
                            assert!(!c.is_nan(), "NaN cost for {e}: {v:?}");
                        }
                    }
                }
            }
        }
        // A timer never asks to be called again and again at the same instant.
        if let Some(at) = policy.next_timer() {
            assert!(timer_calls < 100_000 || at > now, "timer stuck at {at}");
        }
    }
    for t in tickets {
        policy.on_done(now, t, Outcome::new(Status::Ok, 1));
    }
    for &e in &listed {
        if let Some(v) = policy.endpoint_view(now, e) {
            assert!(
                v.cost.is_none_or(|c| !c.is_nan()),
                "NaN cost for {e}: {v:?}"
            );
        }
    }
});

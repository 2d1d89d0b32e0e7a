//! An algorithm's fingerprint: what a policy config *does*, as a short hash, so that a result
//! file can say which algorithm it measured after the code behind a name has changed.
//!
//! A normalized config names the semantics only as far as its fields go: when a default's hidden
//! rules change (a new estimate, another constant), the same `{"peak_ewma_experimental":{}}`
//! means another algorithm. [`PolicyConfig::fingerprint`] therefore runs the built policy through
//! one fixed, deterministic trace — five endpoints with different and changing latencies,
//! failures, a stream, an endpoint that fails and comes back, idle time, load reports — and
//! hashes every pick it makes and every cost it reports, with the normalized config. Two codes
//! that give the same fingerprint made the same decisions on that trace; a change to the
//! semantics almost always changes some pick or cost there, so a committed result whose
//! fingerprint is not the code's measured something else.

use sha2::{Digest as _, Sha256};

use crate::config::PolicyConfig;
use crate::{Connectivity, EndpointId, LoadReport, Nanos, Outcome, Pick, RngCore, RpcKind, Status};

/// SplitMix64: a fixed, portable sequence of draws (a crate's generator may change its stream
/// between versions, and the fingerprint must not).
struct SplitMix(u64);

impl RngCore for SplitMix {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        for chunk in dst.chunks_mut(8) {
            let v = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
}

const MS: Nanos = 1_000_000;
const ENDPOINTS: u32 = 5;
const STEPS: u64 = 3_000;

/// How long a call to `endpoint` sent at step `step` takes: endpoint 0 slow throughout, endpoint
/// 1 slow for a spell and then healed, the others a few ms apart and varying.
fn latency(endpoint: u32, step: u64, draw: u64) -> Nanos {
    let base = match endpoint {
        0 => 40 * MS,
        1 if (800..1_600).contains(&step) => 60 * MS,
        e => u64::from(e) * MS,
    };
    base + (draw % 3_000) * 1_000
}

impl PolicyConfig {
    /// The algorithm's fingerprint ([module docs](crate::fingerprint)): 16 hex digits of a
    /// SHA-256 over the normalized config and the policy's picks and costs on a fixed trace.
    pub fn fingerprint(&self) -> String {
        let mut hash = Sha256::new();
        hash.update(self.to_json().to_string().as_bytes());
        let mut rng = SplitMix(0x006c_626c_6162);
        let mut now: Nanos = 0;
        let mut policy = self.build(now);
        let ids: Vec<EndpointId> = (0..ENDPOINTS).map(EndpointId).collect();
        policy.set_endpoints(now, &ids);
        for &id in &ids {
            policy.on_connectivity(now, id, Connectivity::Connecting);
            policy.on_connectivity(now, id, Connectivity::Ready);
        }
        // Calls in flight: (when it ends, ticket, outcome).
        let mut pending: Vec<(Nanos, crate::Ticket, Outcome)> = Vec::new();
        let record = |hash: &mut Sha256, tag: u8, value: u64| {
            hash.update([tag]);
            hash.update(value.to_le_bytes());
        };
        for step in 0..STEPS {
            now += MS;
            if step == 2_000 {
                // Idle for half a minute: what decays with time must show it.
                now += 30_000 * MS;
            }
            match step {
                500 => policy.on_connectivity(now, ids[2], Connectivity::TransientFailure),
                700 => policy.on_connectivity(now, ids[2], Connectivity::Ready),
                _ => {}
            }
            while policy.next_timer().is_some_and(|t| t <= now) {
                policy.on_timer(now, &mut rng);
            }
            pending.sort_by_key(|p| p.0);
            while pending.first().is_some_and(|p| p.0 <= now) {
                let (end, ticket, outcome) = pending.remove(0);
                record(&mut hash, b'd', ticket.endpoint().0.into());
                policy.on_done(end, ticket, outcome);
            }
            let kind = if step % 50 == 0 {
                RpcKind::Streaming
            } else {
                RpcKind::Unary
            };
            match policy.pick_method(now, kind, (step % 3) as u32, &mut rng) {
                Pick::Endpoint(ticket) => {
                    let e = ticket.endpoint().0;
                    record(&mut hash, b'p', e.into());
                    let elapsed = latency(e, step, rng.next_u64());
                    let status = if e == 3 && step % 5 == 0 {
                        Status::Error
                    } else if step % 97 == 0 {
                        Status::Cancelled
                    } else {
                        Status::Ok
                    };
                    let load = LoadReport {
                        cpu_utilization: 0.2 + 0.15 * f64::from(e),
                        application_utilization: 0.0,
                        rps_fractional: 100.0,
                        eps: if e == 3 { 20.0 } else { 0.0 },
                    };
                    pending.push((
                        now + elapsed,
                        ticket,
                        Outcome::new(status, elapsed).with_load(load),
                    ));
                }
                Pick::Queue => record(&mut hash, b'q', 0),
                Pick::Fail => record(&mut hash, b'f', 0),
            }
            if step % 100 == 0 {
                for &id in &ids {
                    if let Some(view) = policy.endpoint_view(now, id) {
                        record(&mut hash, b'o', view.outstanding.into());
                        // Nine significant digits: what the rules decide, not the last bit
                        // of a platform's `exp`.
                        let cost = view.cost.map_or_else(String::new, |c| format!("{c:.8e}"));
                        hash.update(b"c");
                        hash.update(cost.as_bytes());
                    }
                }
            }
        }
        let digest = hash.finalize();
        digest[..8].iter().map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::config::parse_service_config;

    fn fp(text: &str) -> String {
        parse_service_config(text).expect("valid").fingerprint()
    }

    #[test]
    fn the_same_config_gives_the_same_fingerprint_and_another_algorithm_another() {
        let pe = r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{}}]}"#;
        assert_eq!(fp(pe), fp(pe));
        assert_eq!(fp(pe).len(), 16);
        let mut seen = std::collections::BTreeSet::new();
        for other in [
            pe,
            r#"{"loadBalancingConfig":[{"round_robin":{}}]}"#,
            r#"{"loadBalancingConfig":[{"least_request_experimental":{}}]}"#,
            r#"{"loadBalancingConfig":[{"peak_ewma_experimental":{"decayTime":"1s"}}]}"#,
            r#"{"loadBalancingConfig":[{"weighted_round_robin":{"blackoutPeriod":"0s"}}]}"#,
        ] {
            assert!(seen.insert(fp(other)), "{other}");
        }
    }

    #[test]
    fn every_policy_has_a_fingerprint() {
        for name in crate::config::SUPPORTED {
            let text = if *name == "outlier_detection_experimental" {
                r#"{"loadBalancingConfig":[{"outlier_detection_experimental":{"childPolicy":[{"round_robin":{}}]}}]}"#.to_string()
            } else {
                format!(r#"{{"loadBalancingConfig":[{{"{name}":{{}}}}]}}"#)
            };
            assert_eq!(fp(&text).len(), 16, "{name}");
        }
    }
}

//! The policy under test, as the generator and the replayer drive it.

use serde_json::{json, Map, Value};

use super::format::state_name;
use crate::config::{self, PolicyConfig};
use crate::outlier_detection::OutlierDetection;
use crate::{Connectivity, EndpointId, Nanos, Pick, Policy};

/// What a vector file's expectations show for one endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shows {
    /// State, outstanding, estimate and cost (peak_ewma_experimental).
    Estimate,
    /// State and outstanding (least_request_experimental).
    Outstanding,
    /// State as the child sees it, whether ejected, outstanding, and the next sweep.
    Ejection,
}

pub(super) enum Subject {
    Any(Box<dyn Policy>),
    Outlier(Box<OutlierDetection>),
}

impl Subject {
    pub(super) fn build(policy: &str, config: &Value) -> Result<Subject, String> {
        let parsed = config::parse_policy(policy, config, "").map_err(|e| e.to_string())?;
        Ok(match parsed {
            PolicyConfig::OutlierDetection(c) => {
                let child = c.child_policy.build(0);
                Subject::Outlier(Box::new(OutlierDetection::new(c, child, 0)))
            }
            other => Subject::Any(other.build(0)),
        })
    }

    pub(super) fn policy(&mut self) -> &mut dyn Policy {
        match self {
            Subject::Any(p) => p.as_mut(),
            Subject::Outlier(p) => p.as_mut(),
        }
    }

    fn view_policy(&self) -> &dyn Policy {
        match self {
            Subject::Any(p) => p.as_ref(),
            Subject::Outlier(p) => p.as_ref(),
        }
    }

    /// The endpoints the picker sees as READY, in list order.
    pub(super) fn ready(&self, now: Nanos, list: &[EndpointId]) -> Vec<EndpointId> {
        list.iter()
            .copied()
            .filter(|&e| {
                self.view_policy()
                    .endpoint_view(now, e)
                    .is_some_and(|v| v.state == Connectivity::Ready)
            })
            .collect()
    }

    /// The expectations after a step: every listed endpoint in list order (and the next sweep).
    pub(super) fn expect(
        &self,
        shows: Shows,
        now: Nanos,
        list: &[EndpointId],
    ) -> Map<String, Value> {
        let endpoints: Vec<Value> = list
            .iter()
            .filter_map(|&e| {
                let v = self.view_policy().endpoint_view(now, e)?;
                let mut m = Map::new();
                m.insert("endpoint".into(), json!(e.0));
                m.insert("state".into(), json!(state_name(v.state)));
                if shows == Shows::Ejection {
                    let ejected = matches!(self, Subject::Outlier(p) if p.is_ejected(e));
                    m.insert("ejected".into(), json!(ejected));
                }
                m.insert("outstanding".into(), json!(v.outstanding));
                if shows == Shows::Estimate {
                    let cost = v.cost.unwrap_or(f64::NAN);
                    m.insert(
                        "estimate_ns".into(),
                        json!(cost / (f64::from(v.outstanding) + 1.0)),
                    );
                    m.insert("cost_ns".into(), json!(cost));
                }
                Some(Value::Object(m))
            })
            .collect();
        let mut m = Map::new();
        m.insert("endpoints".into(), Value::Array(endpoints));
        if shows == Shows::Ejection {
            m.insert(
                "next_timer_ns".into(),
                json!(self.view_policy().next_timer()),
            );
        }
        m
    }
}

pub(super) fn pick_json(p: &Pick) -> Value {
    match p {
        Pick::Endpoint(t) => json!({"result": "endpoint", "endpoint": t.endpoint().0}),
        Pick::Queue => json!({"result": "queue"}),
        Pick::Fail => json!({"result": "fail"}),
    }
}

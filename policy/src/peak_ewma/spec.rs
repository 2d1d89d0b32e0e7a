//! `peak_ewma_experimental`'s service config: parsing (with every `lblabAblation` field and its
//! checks), normalization back to JSON, and building the policy.

use serde_json::{json, Value};

use super::{
    per_method, Ablation, Config, Failures, Idle, IdleMax, Initial, Peak, PeakEwmaPolicy, Probes,
    Streams,
};
use crate::config::fields::{choice_name, ConfigError, Fields};
use crate::config::spec::Spec;
use crate::estimator::DecayMode;
use crate::p2c::Sampling;
use crate::{duration, Nanos, Policy};

/// `lblabAblation.decay`'s values.
const DECAYS: &[(&str, DecayMode)] = &[
    ("time_weighted", DecayMode::TimeWeighted),
    ("on_read", DecayMode::OnRead),
];

/// `lblabAblation.sampling`'s values.
const SAMPLINGS: &[(&str, Sampling)] = &[
    ("distinct", Sampling::Distinct),
    ("with_replacement", Sampling::WithReplacement),
];

/// `lblabAblation.streams`'s values.
const STREAMS: &[(&str, Streams)] = &[
    ("ignore", Streams::Ignore),
    ("outstanding", Streams::Outstanding),
    ("count", Streams::Count),
];

/// `lblabAblation.initial`'s values.
const INITIALS: &[(&str, Initial)] = &[
    ("prior", Initial::Prior),
    ("first_sample", Initial::FirstSample),
    ("penalty", Initial::Penalty),
    ("zero", Initial::Zero),
];

/// `lblabAblation.idle`'s values.
const IDLES: &[(&str, Idle)] = &[
    ("to_zero", Idle::ToZero),
    ("frozen", Idle::Frozen),
    ("pick_clock", Idle::PickClock),
];

/// `lblabAblation.probes`' values.
const PROBES: &[(&str, Probes)] = &[("many", Probes::Many), ("one", Probes::One)];

/// `lblabAblation.failures`' values.
const FAILURES: &[(&str, Failures)] = &[
    ("sample", Failures::Sample),
    ("hold", Failures::Hold),
    ("ignore", Failures::Ignore),
];

/// `lblabAblation.peak`'s values.
const PEAKS: &[(&str, Peak)] = &[
    ("jump", Peak::Jump),
    ("blend", Peak::Blend),
    ("decaying", Peak::Decaying),
    ("refutable", Peak::Refutable),
    ("stalled", Peak::Stalled),
];

impl Spec for Config {
    fn parse(f: &mut Fields<'_>) -> Result<Self, ConfigError> {
        let d = Config::default();
        let choice_count = f.choice_count()?;
        let decay_time = f.positive_duration("decayTime", d.decay_time)?;
        let default_rtt = f.positive_duration("defaultRtt", d.default_rtt)?;
        let ablation = f
            .lab_object("lblabAblation", |a| {
                let d = Ablation::default();
                let decay = a.choice("decay", DECAYS, d.decay)?;
                // tower's and Finagle's decay on read is a decay toward 0.
                let idle = match decay {
                    DecayMode::OnRead => Idle::ToZero,
                    DecayMode::TimeWeighted => d.idle,
                };
                // tower's and Finagle's decay on read keeps Finagle's first estimate.
                let initial_default = match decay {
                    DecayMode::OnRead => Initial::Penalty,
                    DecayMode::TimeWeighted => d.initial,
                };
                let initial = a.choice("initial", INITIALS, initial_default)?;
                let idle_choice = a.choice("idle", IDLES, idle)?;
                // The semantics as first written and tower's had no error-aware cost, and took a
                // failure's time as a sample like any other.
                let as_defined = decay == DecayMode::OnRead || initial == Initial::Prior;
                let error_default = if as_defined { None } else { d.error_penalty };
                // Nor the peak that jumps only on a stall, nor the stall-aware cost.
                let (failures_default, error_samples_default, peak_default, stall_default) =
                    if as_defined {
                        (Failures::Sample, None, Peak::Jump, false)
                    } else {
                        (d.failures, d.error_samples, d.peak, d.stall)
                    };
                let ablation = Ablation {
                    decay,
                    sampling: a.choice("sampling", SAMPLINGS, d.sampling)?,
                    streams: a.choice("streams", STREAMS, d.streams)?,
                    initial,
                    idle: idle_choice,
                    // Not given: IDLE_PICK_RATE per second of decayTime.
                    idle_picks: if a.has("idlePicks") {
                        Some(a.u32("idlePicks", 0)?)
                    } else {
                        d.idle_picks
                    },
                    probes: a.choice("probes", PROBES, d.probes)?,
                    peak: a.choice("peak", PEAKS, peak_default)?,
                    peak_decay_time: optional_duration(a, "peakDecayTime")?,
                    peak_ratio: samples(a, "peakRatio")?,
                    idle_decay_time: optional_duration(a, "idleDecayTime")?,
                    // Given: "0s" is no bound. Not given: the default bound with the pick clock
                    // (a multiple of decayTime).
                    idle_max: if a.has("idleMaxTime") {
                        match a.duration("idleMaxTime", 0)? {
                            0 => IdleMax::Unbounded,
                            t => IdleMax::Time(t),
                        }
                    } else if idle_choice == Idle::PickClock {
                        d.idle_max
                    } else {
                        IdleMax::Unbounded
                    },
                    blend_time: optional_duration(a, "blendTime")?,
                    error_penalty: if a.has("errorPenalty") {
                        let p = a.f64("errorPenalty", 0.0)?;
                        if !(0.0..=1000.0).contains(&p) {
                            return Err(a.err(
                                "errorPenalty",
                                format!("{p} is outside 0 to 1000 (1 costs a failure as a retry)"),
                            ));
                        }
                        // 0 is no error-aware cost at all, not a factor of 1 on another path.
                        Some((p * 100.0).round() as u32).filter(|&p| p > 0)
                    } else {
                        error_default
                    },
                    failures: a.choice("failures", FAILURES, failures_default)?,
                    blend_samples: samples(a, "blendSamples")?,
                    error_samples: if a.has("errorSamples") {
                        samples(a, "errorSamples")?
                    } else {
                        error_samples_default
                    },
                    stall: a.bool("stall", stall_default)?,
                    probe_interval: optional_duration(a, "probeInterval")?,
                    per_method: a.bool("perMethod", d.per_method)?,
                };
                if ablation.decay == DecayMode::OnRead && ablation.split() {
                    return Err(a.err(
                        "decay",
                        "\"on_read\" has one time constant; it does not combine with peak \"decaying\", idleDecayTime, idleMaxTime, blendTime, blendSamples, errorSamples, errorPenalty or failures \"hold\"",
                    ));
                }
                if ablation.idle_max != IdleMax::Unbounded && ablation.idle != Idle::PickClock {
                    return Err(a.err(
                        "idleMaxTime",
                        "bounds the pick clock's idle decay: give it with idle \"pick_clock\"",
                    ));
                }
                if ablation.peak_ratio.is_some()
                    && !matches!(ablation.peak, Peak::Jump | Peak::Stalled)
                {
                    return Err(a.err(
                        "peakRatio",
                        "is a threshold of the peak's jump: give it with peak \"jump\" or \"stalled\"",
                    ));
                }
                if ablation.probe_interval.is_some() && (!ablation.stall || ablation.per_method) {
                    return Err(a.err(
                        "probeInterval",
                        "a probe's answer is progress for the stall-aware cost: give it with stall true and without perMethod",
                    ));
                }
                if ablation.idle_picks == Some(0) {
                    return Err(a.err("idlePicks", "0 picks: give at least 1"));
                }
                if ablation.decay == DecayMode::OnRead && ablation.idle != Idle::ToZero {
                    return Err(a.err(
                        "decay",
                        format!(
                            "\"on_read\" decays toward 0 on every read; it does not combine with idle \"{}\"",
                            choice_name(IDLES, ablation.idle)
                        ),
                    ));
                }
                Ok(ablation)
            })?
            .unwrap_or_default();
        Ok(Config {
            choice_count,
            decay_time,
            default_rtt,
            ablation,
        })
    }

    fn to_json(&self) -> Value {
        let mut ablation = json!({
            "decay": choice_name(DECAYS, self.ablation.decay),
            "sampling": choice_name(SAMPLINGS, self.ablation.sampling),
            "streams": choice_name(STREAMS, self.ablation.streams),
            "initial": choice_name(INITIALS, self.ablation.initial),
            "idle": choice_name(IDLES, self.ablation.idle),
            "probes": choice_name(PROBES, self.ablation.probes),
            "peak": choice_name(PEAKS, self.ablation.peak),
            "failures": choice_name(FAILURES, self.ablation.failures),
            "stall": self.ablation.stall,
        });
        for (key, value) in [
            ("peakDecayTime", self.ablation.peak_decay_time),
            ("idleDecayTime", self.ablation.idle_decay_time),
            // Only the pick clock has a bound; "0s" is none; the default (a multiple of
            // decayTime) is not stated.
            (
                "idleMaxTime",
                match (self.ablation.idle, self.ablation.idle_max) {
                    (Idle::PickClock, IdleMax::Unbounded) => Some(0),
                    (Idle::PickClock, IdleMax::Time(t)) => Some(t),
                    _ => None,
                },
            ),
            ("blendTime", self.ablation.blend_time),
            ("probeInterval", self.ablation.probe_interval),
        ] {
            if let Some(d) = value {
                ablation[key] = json!(duration::format(d));
            }
        }
        // Given only: the default is a rate per second of decayTime.
        if let Some(p) = self.ablation.idle_picks {
            ablation["idlePicks"] = json!(p);
        }
        if let Some(p) = self.ablation.error_penalty {
            ablation["errorPenalty"] = json!(f64::from(p) / 100.0);
        }
        for (key, value) in [
            ("blendSamples", self.ablation.blend_samples),
            ("errorSamples", self.ablation.error_samples),
            ("peakRatio", self.ablation.peak_ratio),
        ] {
            if let Some(n) = value {
                ablation[key] = json!(n);
            }
        }
        if self.ablation.per_method {
            ablation["perMethod"] = json!(true);
        }
        json!({
            "choiceCount": self.choice_count,
            "decayTime": duration::format(self.decay_time),
            "defaultRtt": duration::format(self.default_rtt),
            "lblabAblation": ablation,
        })
    }

    fn build(&self, _now: Nanos) -> Box<dyn Policy> {
        if self.ablation.per_method {
            return Box::new(per_method::PerMethod::new(*self));
        }
        Box::new(PeakEwmaPolicy::new(*self))
    }

    fn build_concurrent(&self) -> Option<std::sync::Arc<dyn crate::shared::ConcurrentPolicy>> {
        if self.ablation.per_method {
            return None;
        }
        let policy = super::shared::SharedPeakEwma::with_config(*self).ok()?;
        Some(std::sync::Arc::new(policy))
    }
}

impl Ablation {
    /// Its decay and sampling as their `lblabAblation` values, e.g.
    /// `time_weighted+with_replacement`: how the grid sweep labels a variant.
    pub fn decay_and_sampling(&self) -> String {
        format!(
            "{}+{}",
            choice_name(DECAYS, self.decay),
            choice_name(SAMPLINGS, self.sampling)
        )
    }
}

/// An optional count of samples (`blendSamples`, `errorSamples`) or ratio (`peakRatio`): `None`
/// when absent or 0 (off), else at least 2 (an answer's least weight is its inverse).
fn samples(f: &mut Fields<'_>, key: &'static str) -> Result<Option<u32>, ConfigError> {
    if !f.has(key) {
        return Ok(None);
    }
    match f.u32(key, 0)? {
        0 => Ok(None),
        1 => Err(f.err(
            key,
            format!("give 0 (off) or at least 2 (an answer's least weight is 1 / {key})"),
        )),
        n => Ok(Some(n)),
    }
}

/// An optional positive duration field: `None` when absent.
fn optional_duration(f: &mut Fields<'_>, key: &'static str) -> Result<Option<Nanos>, ConfigError> {
    if !f.has(key) {
        return Ok(None);
    }
    f.positive_duration(key, 1).map(Some)
}

//! The load flags: rate, concurrency, schedules and lengths, and what they override in a
//! scenario.

use std::time::Duration;

use lblab_loadgen::schedule::{RateSchedule, Shape};
use lblab_model::overrides::LoadOverrides;
use lblab_model::units::Dur;

use lblab_lab::{LabError, Result};

/// The load's shape.
#[derive(Debug, clap::Args)]
pub struct Load {
    /// Offered calls per second over all clients, open loop [default without a scenario: 100].
    #[arg(
        short = 'r',
        long,
        visible_alias = "rps",
        conflicts_with = "concurrency"
    )]
    pub rate: Option<f64>,
    /// Closed loop instead: calls each client keeps in flight.
    #[arg(short = 'c', long)]
    pub concurrency: Option<u32>,
    /// Clients, each with its own policy instance and connections [default without a scenario:
    /// 1].
    #[arg(long)]
    pub clients: Option<u32>,
    /// Evenly spaced arrivals instead of Poisson ones (open loop).
    #[arg(long)]
    pub constant: bool,
    /// Send this many calls per policy, without warm-up unless --warmup is given: open loop,
    /// evenly spaced over total / rate; closed loop (-c), as fast as the calls in flight allow
    /// (--duration then only bounds the run).
    #[arg(short = 'n', long, conflicts_with_all = ["load_schedule"])]
    pub total: Option<u64>,
    /// Per-call deadline [default without a scenario: 20s, as ghz's --timeout].
    #[arg(short = 't', long, visible_alias = "timeout", value_name = "DURATION")]
    pub deadline: Option<Dur>,
    /// Measured duration per policy, replacing the scenario's (e.g. 20s).
    #[arg(short = 'z', long)]
    pub duration: Option<Dur>,
    /// Warm-up before measurement, replacing the scenario's.
    #[arg(long)]
    pub warmup: Option<Dur>,
    /// Change the offered rate during the run (open loop): step (--load-start, then
    /// --load-step more every --load-step-duration, up to --load-end) or line (--load-start,
    /// --load-step more per second, up to --load-end).
    #[arg(long, value_name = "SHAPE", value_parser = ["const", "step", "line"], requires = "load_start", conflicts_with = "rate")]
    pub load_schedule: Option<String>,
    /// Calls per second when the schedule starts.
    #[arg(long, value_name = "RATE")]
    pub load_start: Option<f64>,
    /// Rate change per step (step) or per second (line).
    #[arg(
        long,
        value_name = "RATE",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub load_step: f64,
    /// How long each step lasts.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub load_step_duration: Dur,
    /// Where the rate stops changing.
    #[arg(long, value_name = "RATE")]
    pub load_end: Option<f64>,
    /// Change a closed loop's calls in flight per client during the run: step
    /// (--concurrency-start, then --concurrency-step more every --concurrency-step-duration, up
    /// or down to --concurrency-end) or line (--concurrency-step more per second); a negative
    /// step lowers them.
    #[arg(long, value_name = "SHAPE", value_parser = ["const", "step", "line"], requires = "concurrency_start", conflicts_with_all = ["concurrency", "rate", "load_schedule", "total"])]
    pub concurrency_schedule: Option<String>,
    /// Calls in flight per client when the schedule starts.
    #[arg(long, value_name = "N")]
    pub concurrency_start: Option<f64>,
    /// More calls in flight per step (step) or per second (line); negative: fewer.
    #[arg(
        long,
        value_name = "N",
        default_value = "0",
        allow_negative_numbers = true
    )]
    pub concurrency_step: f64,
    /// How long each step lasts.
    #[arg(long, value_name = "DURATION", default_value = "1s")]
    pub concurrency_step_duration: Dur,
    /// Where the calls in flight stop rising (or falling).
    #[arg(long, value_name = "N")]
    pub concurrency_end: Option<f64>,
}

impl Load {
    /// The concurrency schedule, if one is asked for.
    pub fn concurrency_schedule(&self) -> Option<RateSchedule> {
        let kind = self.concurrency_schedule.as_deref()?;
        Some(RateSchedule {
            shape: match kind {
                "step" => Shape::Step {
                    every: Duration::from_nanos(self.concurrency_step_duration.0),
                },
                _ => Shape::Line,
            },
            start: self.concurrency_start?,
            step: if kind == "const" {
                0.0
            } else {
                self.concurrency_step
            },
            end: self.concurrency_end,
        })
    }

    /// The rate schedule, if one is asked for.
    pub fn rate_schedule(&self) -> Option<RateSchedule> {
        let shape = match self.load_schedule.as_deref()? {
            "step" => Shape::Step {
                every: Duration::from_nanos(self.load_step_duration.0),
            },
            "line" => Shape::Line,
            _ => Shape::Line,
        };
        let start = self.load_start?;
        let constant = self.load_schedule.as_deref() == Some("const");
        Some(RateSchedule {
            shape,
            start,
            step: if constant { 0.0 } else { self.load_step },
            end: self.load_end,
        })
    }

    /// The scenario changes of these flags, with `policies`; the rate of a `--total` run is
    /// `rate` (the scenario's, when the flags give none).
    pub fn overrides(
        &self,
        policies: Option<Vec<lblab_model::scenario::PolicySpec>>,
        seed: Option<u64>,
        scenario_rate: f64,
    ) -> Result<LoadOverrides> {
        let mut o = LoadOverrides {
            rate: self.rate,
            concurrency: self.concurrency,
            clients: self.clients,
            constant: self.constant,
            deadline: self.deadline,
            seed,
            duration: self.duration,
            warmup: self.warmup,
            policies,
        };
        if let Some(n) = self.total {
            if n == 0 {
                return Err(LabError::Message("--total must be at least 1".into()));
            }
            o.warmup = Some(self.warmup.unwrap_or(Dur(0)));
            if self.concurrency.is_some() {
                // A closed loop ends when its calls are sent; this only bounds it.
                o.duration = Some(self.duration.unwrap_or(Dur(3_600 * 1_000_000_000)));
            } else {
                let rate = self.rate.unwrap_or(scenario_rate);
                if rate <= 0.0 {
                    return Err(LabError::Message(
                        "--total needs --rate or --concurrency".into(),
                    ));
                }
                let needed = Dur((n as f64 / rate * 1e9).ceil() as u64);
                o.duration = Some(match self.duration {
                    Some(z) if z.0 < needed.0 => {
                        lblab_lab::errln!(
                            "warning: -z {z} ends each run before its -n {n} calls at {rate} calls/s \
                             (which take {needed}): about {} calls are sent",
                            (rate * z.0 as f64 / 1e9).floor()
                        );
                        z
                    }
                    Some(z) if z.0 > needed.0 => {
                        lblab_lab::errln!(
                            "note: -n {n} calls at {rate} calls/s take {needed}, so each run ends \
                             then, before -z {z}"
                        );
                        needed
                    }
                    _ => needed,
                });
                o.constant = true;
            }
        }
        Ok(o)
    }
}

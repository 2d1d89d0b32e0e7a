//! The start barrier's decisions, without a clock or a socket ([`Barrier`]).

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{BarrierError, Group, PodId};

/// A connection to the starter, numbered by its shell.
pub type Conn = u64;

/// What a starter waits for, and when it starts and gives up.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The groups of pods it waits for, each named once.
    pub groups: Vec<Group>,
    /// The earliest start, Unix seconds: the wall-clock start the deployment was given.
    pub not_before: u64,
    /// The least time between the last check-in and the start.
    pub margin: Duration,
    /// When it gives up if some pod has not checked in.
    pub give_up_at: SystemTime,
    /// How long it stays after the start (or after giving up), telling pods that check in then
    /// that they are late (or that it gave up).
    pub linger: Duration,
}

impl Plan {
    /// Checks the groups: at least one, each named once.
    pub fn check(&self) -> Result<(), BarrierError> {
        let names: BTreeSet<&str> = self.groups.iter().map(|g| g.name.as_str()).collect();
        if self.groups.is_empty() || names.len() != self.groups.len() {
            let given: Vec<String> = self.groups.iter().map(Group::to_string).collect();
            return Err(BarrierError::Groups(format!("[{}]", given.join(", "))));
        }
        Ok(())
    }

    /// How many pods it waits for.
    pub fn expected(&self) -> usize {
        self.groups.iter().map(|g| g.count).sum()
    }

    /// Whether `id` is one of the pods it waits for.
    pub fn expects(&self, id: &PodId) -> bool {
        self.groups.iter().any(|g| g.has(id))
    }

    /// The groups as the starter says them: `fleet=20, loadgen=2`.
    pub fn groups_text(&self) -> String {
        let groups: Vec<String> = self.groups.iter().map(Group::to_string).collect();
        groups.join(", ")
    }
}

/// How a barrier ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Every pod checked in, the last at `at`; the slots start at `start`.
    Released {
        /// The common start, Unix seconds.
        start: u64,
        /// When the last pod checked in.
        at: SystemTime,
    },
    /// The deadline passed with `missing` not checked in.
    GaveUp {
        /// The pods that had not checked in, sorted.
        missing: Vec<PodId>,
        /// When it gave up.
        at: SystemTime,
    },
}

/// What the starter tells a pod.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Start at this Unix second.
    Start(u64),
    /// It came after the release; the others start at this Unix second.
    Late(u64),
    /// The barrier gave up without these pods.
    GaveUp {
        /// The pods that had not checked in.
        missing: Vec<PodId>,
        /// How many pods it waited for.
        expected: usize,
    },
    /// It is not one of the pods the barrier waits for, whose groups are these.
    Unknown(String),
}

/// The start barrier: which pods have checked in on which connections, and how it ended.
///
/// Call order: [`Barrier::on_join`] for each pod that checks in and [`Barrier::on_leave`] for
/// each connection that closes before its answer, and [`Barrier::on_timer`] whenever
/// [`Barrier::next_timer`] has come; send each returned answer on its connection (then close
/// it), and stop once [`Barrier::finished`]. Every `now` passed is the wall clock, never earlier
/// than one passed before.
#[derive(Debug)]
pub struct Barrier {
    plan: Plan,
    /// The pods checked in and waiting, each on its open connections.
    waiting: BTreeMap<PodId, BTreeSet<Conn>>,
    outcome: Option<Outcome>,
}

impl Barrier {
    /// A barrier that waits for the pods of `plan`.
    pub fn new(plan: Plan) -> Barrier {
        Barrier {
            plan,
            waiting: BTreeMap::new(),
            outcome: None,
        }
    }

    /// Its plan.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// How it ended, if it has.
    pub fn outcome(&self) -> Option<&Outcome> {
        self.outcome.as_ref()
    }

    /// How many pods are checked in and waiting.
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    /// Pod `id` checks in on connection `conn` at `now`: the answers to send now, to it alone or,
    /// when it was the last pod missing, to every waiting pod.
    pub fn on_join(&mut self, now: SystemTime, conn: Conn, id: PodId) -> Vec<(Conn, Answer)> {
        if !self.plan.expects(&id) {
            return vec![(conn, Answer::Unknown(self.plan.groups_text()))];
        }
        match &self.outcome {
            Some(Outcome::Released { start, .. }) => return vec![(conn, Answer::Late(*start))],
            Some(Outcome::GaveUp { missing, .. }) => {
                let answer = Answer::GaveUp {
                    missing: missing.clone(),
                    expected: self.plan.expected(),
                };
                return vec![(conn, answer)];
            }
            None => {}
        }
        self.waiting.entry(id).or_default().insert(conn);
        if self.waiting.len() < self.plan.expected() {
            return Vec::new();
        }
        let earliest = unix_seconds_up(now + self.plan.margin);
        let start = earliest.max(self.plan.not_before);
        self.outcome = Some(Outcome::Released { start, at: now });
        self.answer_all(Answer::Start(start))
    }

    /// Connection `conn` closed before its answer: its pod no longer counts as checked in
    /// unless it waits on another connection too.
    pub fn on_leave(&mut self, conn: Conn) {
        self.waiting.retain(|_, conns| {
            conns.remove(&conn);
            !conns.is_empty()
        });
    }

    /// At `now`: gives up if the deadline has passed before every pod checked in, telling every
    /// waiting pod which are missing.
    pub fn on_timer(&mut self, now: SystemTime) -> Vec<(Conn, Answer)> {
        if self.outcome.is_some() || now < self.plan.give_up_at {
            return Vec::new();
        }
        let missing: Vec<PodId> = self
            .plan
            .groups
            .iter()
            .flat_map(Group::ids)
            .filter(|id| !self.waiting.contains_key(id))
            .collect();
        self.outcome = Some(Outcome::GaveUp {
            missing: missing.clone(),
            at: now,
        });
        let expected = self.plan.expected();
        self.answer_all(Answer::GaveUp { missing, expected })
    }

    /// When [`Barrier::on_timer`] has something to do next, or [`Barrier::finished`] becomes
    /// true: the deadline while it waits, the end of its stay after.
    pub fn next_timer(&self) -> SystemTime {
        match &self.outcome {
            None => self.plan.give_up_at,
            Some(Outcome::Released { start, .. }) => {
                UNIX_EPOCH + Duration::from_secs(*start) + self.plan.linger
            }
            Some(Outcome::GaveUp { at, .. }) => *at + self.plan.linger,
        }
    }

    /// Whether its work is done at `now`: it ended, and its stay after the start (or after it
    /// gave up) is over.
    pub fn finished(&self, now: SystemTime) -> bool {
        self.outcome.is_some() && now >= self.next_timer()
    }

    /// `answer` to every waiting pod's connections, which are then no longer waiting.
    fn answer_all(&mut self, answer: Answer) -> Vec<(Conn, Answer)> {
        let waiting = std::mem::take(&mut self.waiting);
        waiting
            .into_values()
            .flatten()
            .map(|conn| (conn, answer.clone()))
            .collect()
    }
}

/// `t` as Unix seconds, rounded up to a whole second.
fn unix_seconds_up(t: SystemTime) -> u64 {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

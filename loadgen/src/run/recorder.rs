//! The recorder side of a run: calls report their end to a [`Sink`]; one recorder thread
//! collects the reports every 10 ms, puts the sends back in time order and feeds the results
//! schema's [`Recorder`], dispatch lateness and the overload counts.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use lblab_model::fault::Timeline;
use lblab_model::scenario::Workload;
use lblab_policy::{Nanos, RpcKind, NANOS_PER_SEC};
use lblab_record::{PolicyResult, Recorder, RequestResult};

use super::live::{Live, P99_EVERY};
use crate::incidents::{self, OverloadDrops};

pub(super) enum Event {
    /// A call ended: where it went (if it was sent), how, when, and how late it left.
    Done {
        intended: Nanos,
        backend: Option<u32>,
        kind: RpcKind,
        end: Nanos,
        result: RequestResult,
        lateness: Option<u64>,
        /// Not sent because the load generator could not keep to its schedule.
        overload: Overload,
    },
}

impl Event {
    /// A call that was not sent, or whose task was dropped before it ended.
    pub(super) fn dropped(
        intended: Nanos,
        kind: RpcKind,
        lateness: Option<u64>,
        overload: Overload,
    ) -> Event {
        Event::Done {
            intended,
            backend: None,
            kind,
            end: intended,
            result: RequestResult::Dropped,
            lateness,
            overload,
        }
    }
}

/// Why a call was not sent, if the load generator was to blame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Overload {
    /// Not an overload drop.
    No,
    /// It would have left a whole deadline after its intended time.
    Behind,
    /// The cap on calls in flight was reached.
    InFlight,
}

/// Where calls report their end. Pushing takes a lock but wakes no thread: the recorder thread
/// collects every 10 ms, so the run adds no cross-thread wake-up per call (costly on a VM).
#[derive(Clone)]
pub(super) struct Sink(Arc<SinkInner>);

struct SinkInner {
    events: std::sync::Mutex<Vec<Event>>,
    closed: AtomicBool,
}

impl Sink {
    pub(super) fn new() -> Sink {
        Sink(Arc::new(SinkInner {
            events: std::sync::Mutex::new(Vec::new()),
            closed: AtomicBool::new(false),
        }))
    }

    pub(super) fn send(&self, ev: Event) {
        self.0
            .events
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ev);
    }

    /// No more events will come (the recorder then drains and ends).
    pub(super) fn close(&self) {
        self.0.closed.store(true, Ordering::Release);
    }

    /// Waits for a batch; `None` when closed and empty.
    fn next_batch(&self, spare: &mut Vec<Event>) -> Option<()> {
        loop {
            let closed = self.0.closed.load(Ordering::Acquire);
            std::mem::swap(
                &mut *self.0.events.lock().unwrap_or_else(|e| e.into_inner()),
                spare,
            );
            if !spare.is_empty() {
                return Some(());
            }
            if closed {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

/// Counts a call as dropped if its task is dropped before it ends (runtime shut down).
pub(super) struct Pending {
    intended: Nanos,
    kind: RpcKind,
    events: Sink,
    in_flight: Arc<AtomicUsize>,
    done: bool,
}

impl Pending {
    /// A call intended at `intended` is under way: counted in flight until it ends.
    pub(super) fn start(
        intended: Nanos,
        kind: RpcKind,
        events: &Sink,
        in_flight: &Arc<AtomicUsize>,
    ) -> Pending {
        in_flight.fetch_add(1, Ordering::AcqRel);
        Pending {
            intended,
            kind,
            events: events.clone(),
            in_flight: in_flight.clone(),
            done: false,
        }
    }

    /// The call ended as `event` says.
    pub(super) fn finish(mut self, event: Event) {
        self.done = true;
        self.events.send(event);
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        self.in_flight.fetch_sub(1, Ordering::AcqRel);
        if !self.done {
            self.events
                .send(Event::dropped(self.intended, self.kind, None, Overload::No));
        }
    }
}

/// Reorders per-call send records by intended time before they reach the [`Recorder`], whose
/// per-second traffic shares expect sends in order. Calls report when they end, so records are held
/// for `window` of intended time.
pub(super) struct RecorderThread {
    recorder: Recorder,
    timelines: Option<Vec<Timeline>>,
    held: BinaryHeap<Reverse<(Nanos, u32)>>,
    window: Nanos,
    lateness: Histogram<u64>,
    /// Calls intended after the warm-up start here: the incidents count what the table counts.
    warmup: Nanos,
    /// Dispatch lateness of the calls intended after the warm-up.
    measured_lateness: Histogram<u64>,
    /// Calls intended during the warm-up that left more than [`incidents::LATE`] late.
    warmup_late: u64,
    /// Intended times of the first and the last call after the warm-up sent more than
    /// [`incidents::LATE`] late.
    late_span: Option<(Nanos, Nanos)>,
    overload: OverloadDrops,
    sends: Vec<u64>,
    live: Option<Arc<Live>>,
}

/// What the recorder thread leaves.
pub(super) struct Recorded {
    pub result: PolicyResult,
    pub lateness: Histogram<u64>,
    pub measured_lateness: Histogram<u64>,
    pub warmup_late: u64,
    pub late_span: Option<(Nanos, Nanos)>,
    pub overload: OverloadDrops,
    pub sends: Vec<u64>,
}

fn lateness_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 3_600 * NANOS_PER_SEC, 3).expect("valid bounds")
}

impl RecorderThread {
    /// A recorder for policy `label` against `targets` targets; `timelines` (one per target, if
    /// the targets are the scenario's backends) say which sends went to a faulty backend.
    pub(super) fn new(
        label: &str,
        targets: usize,
        workload: &Workload,
        timelines: Option<Vec<Timeline>>,
        live: Option<Arc<Live>>,
    ) -> Self {
        RecorderThread {
            recorder: Recorder::new(label, targets, workload.warmup),
            timelines,
            held: BinaryHeap::new(),
            window: workload.deadline + 10 * NANOS_PER_SEC,
            lateness: lateness_histogram(),
            warmup: workload.warmup,
            measured_lateness: lateness_histogram(),
            warmup_late: 0,
            late_span: None,
            overload: OverloadDrops::default(),
            sends: vec![0; targets],
            live,
        }
    }

    fn release(&mut self, upto: Nanos) {
        while let Some(&Reverse((t, b))) = self.held.peek() {
            if t > upto {
                break;
            }
            self.held.pop();
            let faulty = self
                .timelines
                .as_ref()
                .and_then(|tl| tl.get(b as usize))
                .is_some_and(|tl| tl.faulty_at(t));
            self.recorder.on_send(t, b as usize, faulty);
        }
    }

    /// Runs the recorder on its own thread until `rx` is closed and drained.
    pub(super) fn spawn(
        self,
        rx: Sink,
    ) -> Result<std::thread::JoinHandle<Recorded>, crate::LoadgenError> {
        std::thread::Builder::new()
            .name("lblab-recorder".into())
            .spawn(move || self.run(rx))
            .map_err(|cause| crate::LoadgenError::Io {
                what: "starting the recorder thread".into(),
                cause,
            })
    }

    fn run(mut self, rx: Sink) -> Recorded {
        let mut newest = 0;
        let mut batch = Vec::new();
        let mut p99_at = Instant::now();
        while rx.next_batch(&mut batch).is_some() {
            let (mut ended, mut newest_end) = (0, 0);
            for ev in batch.drain(..) {
                let Event::Done { result, end, .. } = &ev;
                if *result != RequestResult::Dropped {
                    ended += 1;
                    newest_end = newest_end.max(*end);
                }
                self.on_event(ev, &mut newest);
            }
            if let Some(live) = &self.live {
                live.add_ended(ended, newest_end);
                if p99_at.elapsed() >= P99_EVERY {
                    p99_at = Instant::now();
                    self.publish_p99(live);
                }
            }
        }
        if let Some(live) = &self.live {
            self.publish_p99(live);
        }
        self.release(Nanos::MAX);
        Recorded {
            result: self.recorder.finish(),
            lateness: self.lateness,
            measured_lateness: self.measured_lateness,
            warmup_late: self.warmup_late,
            late_span: self.late_span,
            overload: self.overload,
            sends: self.sends,
        }
    }

    fn publish_p99(&self, live: &Live) {
        let h = self.recorder.measured_latencies();
        if !h.is_empty() {
            live.set_p99(h.value_at_quantile(0.99));
        }
    }

    fn on_event(&mut self, ev: Event, newest: &mut Nanos) {
        {
            let Event::Done {
                intended,
                backend,
                kind,
                end,
                result,
                lateness,
                overload,
            } = ev;
            let measured = intended >= self.warmup;
            if let Some(l) = lateness {
                let _ = self.lateness.record(l.max(1));
                if measured {
                    let _ = self.measured_lateness.record(l.max(1));
                }
                if l > incidents::LATE {
                    if measured {
                        let (first, last) = self.late_span.get_or_insert((intended, intended));
                        *first = (*first).min(intended);
                        *last = (*last).max(intended);
                    } else {
                        self.warmup_late += 1;
                    }
                }
            }
            if overload != Overload::No {
                self.overload
                    .add(intended, overload == Overload::Behind, measured);
            }
            if let Some(b) = backend {
                if let Some(c) = self.sends.get_mut(b as usize) {
                    *c += 1;
                }
                self.held.push(Reverse((intended, b)));
            }
            *newest = (*newest).max(intended);
            self.release(newest.saturating_sub(self.window));
            match kind {
                RpcKind::Unary => self.recorder.on_result(intended, end, result),
                RpcKind::Streaming => self.recorder.on_stream_result(intended, result),
            }
            if let Some(b) = backend {
                self.recorder
                    .on_backend_result(b as usize, intended, end, result);
            }
        }
    }
}

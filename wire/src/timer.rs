//! Precise wall-clock timing: a dedicated timer thread that sleeps until shortly before each
//! deadline and spins the rest, and [`sleep_until`] for threads that pace themselves.
//!
//! tokio's timer wheel has 1 ms granularity and rounds up, so a 2 ms service time slept with
//! `tokio::time::sleep` takes 2–3 ms. Here a thread with a timer slack of 1 ns sleeps on a condition
//! variable until [`DEFAULT_SPIN`] before the deadline, then busy-waits; the error is the
//! scheduler's wake-up latency plus whatever the woken task takes to run, which the backend measures
//! and reports (the backend crate's `DelayAccuracy`).

use std::collections::BinaryHeap;
use std::future::Future;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use lblab_policy::heap::{Earliest, HeapKey};

/// How long before a deadline the timer stops sleeping and starts spinning.
pub const DEFAULT_SPIN: Duration = Duration::from_micros(120);

type Action = Box<dyn FnOnce() + Send>;

struct Entry {
    at: Instant,
    seq: u64,
    action: Action,
}

impl HeapKey for Entry {
    /// The earliest first, then the first scheduled.
    type Key = (Instant, u64);
    fn key(&self) -> (Instant, u64) {
        (self.at, self.seq)
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Earliest<Entry>>,
    seq: u64,
    stop: bool,
}

struct Inner {
    state: Mutex<State>,
    wake: Condvar,
    spin: Duration,
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, State> {
        // A panicking action cannot leave the heap inconsistent: recover the guard.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A timer thread that runs actions at precise instants. Actions run on the timer thread, in
/// deadline order (ties in scheduling order), and must be short: they delay every later action.
/// Dropping the timer stops the thread; actions not yet due are dropped without running.
pub struct PreciseTimer {
    handle: TimerHandle,
    thread: Option<JoinHandle<()>>,
}

impl std::fmt::Debug for PreciseTimer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PreciseTimer")
            .field("spin", &self.handle.inner.spin)
            .finish()
    }
}

/// A cheap, cloneable handle that schedules actions on a [`PreciseTimer`].
#[derive(Clone)]
pub struct TimerHandle {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for TimerHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TimerHandle")
    }
}

impl PreciseTimer {
    /// Starts the timer thread, spinning for the last `spin` before each deadline.
    /// With `realtime`, the thread asks for [`set_realtime`] at that priority (and runs at normal
    /// priority if it may not).
    /// With `cpu`, the thread pins itself to that CPU ([`pin_to_cpu`]).
    pub fn start(
        name: &str,
        spin: Duration,
        realtime: Option<i32>,
        cpu: Option<usize>,
    ) -> std::io::Result<PreciseTimer> {
        let inner = Arc::new(Inner {
            state: Mutex::new(State::default()),
            wake: Condvar::new(),
            spin,
        });
        let thread_inner = inner.clone();
        let thread = std::thread::Builder::new()
            .name(name.to_string())
            .spawn(move || {
                if let Some(p) = realtime {
                    let _ = set_realtime(p);
                }
                if let Some(c) = cpu {
                    let _ = pin_to_cpu(c);
                }
                run(&thread_inner)
            })?;
        Ok(PreciseTimer {
            handle: TimerHandle { inner },
            thread: Some(thread),
        })
    }

    /// A handle to schedule actions with.
    pub fn handle(&self) -> TimerHandle {
        self.handle.clone()
    }
}

impl Drop for PreciseTimer {
    fn drop(&mut self) {
        self.handle.inner.lock().stop = true;
        self.handle.inner.wake.notify_all();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

impl TimerHandle {
    /// Runs `action` on the timer thread at `at` (at once if `at` has passed).
    pub fn at(&self, at: Instant, action: impl FnOnce() + Send + 'static) {
        let mut st = self.inner.lock();
        if st.stop {
            return;
        }
        let seq = st.seq;
        st.seq += 1;
        let earliest = st.heap.peek().is_none_or(|e| at < e.at);
        st.heap.push(Earliest(Entry {
            at,
            seq,
            action: Box::new(action),
        }));
        drop(st);
        if earliest {
            self.inner.wake.notify_one();
        }
    }

    /// A future that completes at `at`, woken by the timer thread. If the timer stops first, it
    /// completes then.
    pub fn sleep_until(&self, at: Instant) -> impl Future<Output = ()> + Send + 'static {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        self.at(at, move || {
            let _ = tx.send(());
        });
        async move {
            let _ = rx.await;
        }
    }
}

/// Makes the calling thread's timed sleeps precise: sets its timer slack to 1 ns (Linux; the
/// default of 50 µs would add up to that much to every wake-up). Harmless elsewhere.
pub fn set_precise_timer_slack() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_TIMERSLACK) only changes a scheduling attribute of the calling thread.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
}

/// Puts the calling thread in the real-time FIFO scheduling class at `priority` (1–99), so that
/// it preempts ordinary processes (other builds and benchmarks on a shared machine) the moment it is
/// runnable. Needs root or CAP_SYS_NICE; the kernel's real-time throttling (by default 95 % of each
/// second) still leaves the rest of the machine time to run. Linux only; elsewhere an error.
pub fn set_realtime(priority: i32) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        let param = libc::sched_param {
            sched_priority: priority,
        };
        // SAFETY: pid 0 is the calling thread; `param` is a valid pointer for the call.
        let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = priority;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "real-time scheduling is Linux-only here",
        ))
    }
}

/// Pins the calling thread to one CPU. Threads that hand work to each other (a timer thread and
/// the runtime worker it wakes) wake each other much faster on one CPU than across two: on a
/// virtual machine a cross-CPU wake-up is an inter-processor interrupt, tens of microseconds.
/// Linux only; elsewhere an error.
pub fn pin_to_cpu(cpu: usize) -> std::io::Result<()> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: cpu_set_t is plain data; CPU_SET stays within the set's bounds for cpu <
        // CPU_SETSIZE, which we check; pid 0 is the calling thread.
        unsafe {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "no such CPU",
                ));
            }
            let mut set: libc::cpu_set_t = std::mem::zeroed();
            libc::CPU_SET(cpu, &mut set);
            if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0 {
                Ok(())
            } else {
                Err(std::io::Error::last_os_error())
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = cpu;
        Err(std::io::Error::new(
            std::io::ErrorKind::Unsupported,
            "CPU pinning is Linux-only here",
        ))
    }
}

/// Whether this process may use [`set_realtime`] (tried on a short-lived thread).
pub fn realtime_available() -> bool {
    std::thread::spawn(|| set_realtime(1).is_ok())
        .join()
        .unwrap_or(false)
}

/// Priority of threads that pace or time things (the timer thread, the load generator's
/// dispatcher) when running real-time: below [`RT_WORKER_PRIORITY`], so that the runtime threads
/// that do the actual I/O preempt them.
pub const RT_TIMER_PRIORITY: i32 = 10;
/// Priority of runtime worker threads when running real-time.
pub const RT_WORKER_PRIORITY: i32 = 20;

/// Waits, spinning, until `at`; yields the CPU on every turn so that a thread of equal real-time
/// priority is not locked out.
fn spin_until(at: Instant) -> Instant {
    loop {
        let now = Instant::now();
        if now >= at {
            return now;
        }
        std::thread::yield_now();
    }
}

/// Blocks the calling thread until `at`: sleeps until `spin` before it, then busy-waits. Returns
/// the instant it woke. Call [`set_precise_timer_slack`] once on the thread first.
pub fn sleep_until(at: Instant, spin: Duration) -> Instant {
    let now = Instant::now();
    if at > now + spin {
        std::thread::sleep(at - now - spin);
    }
    spin_until(at)
}

/// A thread that paces itself along a schedule (the load generator's dispatcher): sleeps until
/// shortly before each deadline and spins the rest, like [`sleep_until`], but spins only as long
/// as its sleeps have lately overslept, never longer than the configured spin.
///
/// A fixed spin costs its whole length before every deadline: 120 µs before each of 6,000 sends
/// a second is most of a core, though a sleep with a timer slack of 1 ns usually wakes within
/// a few µs of when it was asked to. The margin here is a peak that decays: it rises at once to
/// any oversleep it sees and otherwise shrinks by 1/32 per sleep (to half in about 22 sleeps), so
/// after a burst of late wake-ups (other work on the machine) it spins long again and a deadline
/// is rarely missed, while on a quiet machine it spins for little more than the usual wake-up
/// latency.
#[derive(Debug, Clone)]
pub struct Pacer {
    /// The longest spin.
    max_spin: Duration,
    /// The current margin: how long before a deadline the thread stops sleeping.
    margin: Duration,
}

impl Pacer {
    /// A pacer that spins at most `max_spin` before each deadline (and starts there). Call
    /// [`set_precise_timer_slack`] once on the thread first.
    pub fn new(max_spin: Duration) -> Self {
        Pacer {
            max_spin,
            margin: max_spin,
        }
    }

    /// How long before the next deadline the thread will stop sleeping.
    pub fn margin(&self) -> Duration {
        self.margin
    }

    /// Blocks until `at`; returns the instant it woke (never before `at`).
    pub fn sleep_until(&mut self, at: Instant) -> Instant {
        let now = Instant::now();
        if at > now + self.margin {
            let wake = at - self.margin;
            std::thread::sleep(wake - now);
            let overslept = Instant::now().saturating_duration_since(wake);
            self.margin = self.next_margin(overslept);
        }
        spin_until(at)
    }

    /// The margin after a sleep that overslept by `overslept`.
    fn next_margin(&self, overslept: Duration) -> Duration {
        let decayed = self.margin - self.margin / 32;
        // A little above the oversleep itself, so that one just like it is still caught.
        let wanted = overslept + overslept / 4;
        decayed.max(wanted).min(self.max_spin)
    }
}

fn run(inner: &Inner) {
    set_precise_timer_slack();
    let mut st = inner.lock();
    loop {
        if st.stop {
            return;
        }
        let Some(next) = st.heap.peek().map(|e| e.at) else {
            st = inner.wake.wait(st).unwrap_or_else(|e| e.into_inner());
            continue;
        };
        let now = Instant::now();
        if next <= now {
            let Earliest(entry) = st.heap.pop().expect("peeked");
            drop(st);
            (entry.action)();
            st = inner.lock();
            continue;
        }
        let left = next - now;
        if left > inner.spin {
            st = inner
                .wake
                .wait_timeout(st, left - inner.spin)
                .unwrap_or_else(|e| e.into_inner())
                .0;
            continue;
        }
        // Spin without the lock so that handlers can keep scheduling; an earlier deadline
        // scheduled meanwhile is at most `spin` late.
        drop(st);
        spin_until(next);
        st = inner.lock();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn actions_run_in_deadline_order_and_not_early() {
        let timer = PreciseTimer::start("t", DEFAULT_SPIN, None, None).expect("thread");
        let h = timer.handle();
        let (tx, rx) = mpsc::channel();
        let base = Instant::now() + Duration::from_millis(5);
        for (i, ms) in [(0u32, 3u64), (1, 1), (2, 2), (3, 1)] {
            let tx = tx.clone();
            let at = base + Duration::from_millis(ms);
            h.at(at, move || {
                let _ = tx.send((i, Instant::now() >= at));
            });
        }
        drop(tx);
        let got: Vec<(u32, bool)> = rx.iter().collect();
        assert_eq!(got, vec![(1, true), (3, true), (2, true), (0, true)]);
    }

    #[test]
    fn a_pacer_is_never_early_and_its_margin_stays_within_the_spin() {
        set_precise_timer_slack();
        let spin = Duration::from_micros(120);
        let mut pacer = Pacer::new(spin);
        for _ in 0..50 {
            let at = Instant::now() + Duration::from_micros(500);
            assert!(pacer.sleep_until(at) >= at);
            assert!(pacer.margin() <= spin);
        }
    }

    #[test]
    fn a_pacers_margin_jumps_to_an_oversleep_and_decays_without_one() {
        let mut pacer = Pacer::new(Duration::from_micros(120));
        pacer.margin = Duration::from_micros(4);
        pacer.margin = pacer.next_margin(Duration::from_micros(40));
        assert_eq!(pacer.margin, Duration::from_micros(50));
        for _ in 0..22 {
            pacer.margin = pacer.next_margin(Duration::ZERO);
        }
        assert!(
            pacer.margin < Duration::from_micros(25),
            "{:?}",
            pacer.margin
        );
        // Never beyond the configured spin, whatever the oversleep.
        pacer.margin = pacer.next_margin(Duration::from_millis(5));
        assert_eq!(pacer.margin, Duration::from_micros(120));
        // A zero spin never spins.
        let zero = Pacer::new(Duration::ZERO);
        assert_eq!(zero.next_margin(Duration::from_micros(40)), Duration::ZERO);
    }

    #[test]
    fn sleep_until_is_never_early() {
        set_precise_timer_slack();
        for _ in 0..20 {
            let at = Instant::now() + Duration::from_micros(700);
            assert!(sleep_until(at, DEFAULT_SPIN) >= at);
        }
    }
}

//! CPU time of a chosen set of threads (the load generator's runtime), read from each thread's
//! CPU-time clock. Per-thread clocks keep the fleet's CPU out of the client's figure when both run
//! in one process, which `getrusage(RUSAGE_SELF)` could not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

#[derive(Debug, Default)]
struct State {
    live: HashMap<ThreadId, libc::clockid_t>,
    exited_ns: u64,
}

/// Sums the CPU time of the threads registered with it, alive or exited.
#[derive(Debug, Clone, Default)]
pub struct CpuMeter {
    state: Arc<Mutex<State>>,
}

/// CPU time the calling thread has used, ns.
pub fn current_thread_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}

/// CPU time this process has used (all its threads), ns.
pub fn process_ns() -> u64 {
    clock_ns(libc::CLOCK_PROCESS_CPUTIME_ID).unwrap_or(0)
}

fn clock_ns(clock: libc::clockid_t) -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid out-pointer; an invalid clock id only makes the call fail.
    let rc = unsafe { libc::clock_gettime(clock, &mut ts) };
    (rc == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

impl CpuMeter {
    /// A meter with no threads.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts counting the calling thread (e.g. from tokio's `on_thread_start`).
    pub fn register_current(&self) {
        let mut clock: libc::clockid_t = 0;
        // SAFETY: pthread_self() is the calling thread, and `clock` a valid out-pointer.
        let rc = unsafe { libc::pthread_getcpuclockid(libc::pthread_self(), &mut clock) };
        if rc == 0 {
            self.lock().live.insert(std::thread::current().id(), clock);
        }
    }

    /// Stops counting the calling thread, keeping the time it used (e.g. from `on_thread_stop`).
    pub fn unregister_current(&self) {
        let used = current_thread_ns();
        let mut st = self.lock();
        if st.live.remove(&std::thread::current().id()).is_some() {
            st.exited_ns += used;
        }
    }

    /// CPU time used so far by every registered thread, ns.
    pub fn total_ns(&self) -> u64 {
        let st = self.lock();
        st.exited_ns + st.live.values().filter_map(|&c| clock_ns(c)).sum::<u64>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_busy_thread() {
        let meter = CpuMeter::new();
        let m = meter.clone();
        std::thread::spawn(move || {
            m.register_current();
            // Spin until the thread has used 20 ms of CPU by its own clock: a wall-clock loop
            // gets far less CPU than its length when the machine is busy, which made this flaky.
            let start = current_thread_ns();
            let mut x = 0u64;
            while current_thread_ns() - start < 20_000_000 {
                x = x.wrapping_add(1);
                std::hint::black_box(x);
            }
            m.unregister_current();
        })
        .join()
        .expect("thread");
        assert!(meter.total_ns() >= 20_000_000, "{}", meter.total_ns());
    }
}

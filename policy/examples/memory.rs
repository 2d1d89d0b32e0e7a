//! Memory per endpoint of every policy: the bytes a policy holds after it was given 10,000 READY
//! endpoints and took 20 calls per endpoint, minus what it held with none, divided by 10,000.
//! Counted by a global allocator that tracks live bytes, so it is what the policy allocates
//! (tables, maps, schedules), not an estimate. Prints CSV.
//!
//! ```sh
//! cargo run --release -p lblab-policy --example memory
//! ```

#![allow(clippy::disallowed_macros)] // prints its own output, not lblab's
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

use lblab_policy::peak_ewma::{shared::SharedPeakEwma, Config};
use lblab_policy::shared::{LeastRequest, RoundRobin, SharedPicker};
use lblab_policy::{config, Connectivity, EndpointId, Outcome, Pick, RpcKind, Status};
use rand::{rngs::SmallRng, SeedableRng};

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicIsize = AtomicIsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: forwards the caller's layout to the system allocator unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const N: u32 = 10_000;

const POLICIES: &[(&str, &str)] = &[
    ("pick_first", r#"{"pick_first":{}}"#),
    ("round_robin", r#"{"round_robin":{}}"#),
    ("least_request", r#"{"least_request_experimental":{}}"#),
    ("weighted_round_robin", r#"{"weighted_round_robin":{}}"#),
    ("peak_ewma", r#"{"peak_ewma_experimental":{}}"#),
    ("finagle_peak_ewma", r#"{"finagle_peak_ewma":{}}"#),
    ("envoy_peak_ewma", r#"{"envoy_peak_ewma":{}}"#),
    (
        "outlier_detection(peak_ewma)",
        r#"{"outlier_detection_experimental":{"successRateEjection":{},"childPolicy":[{"peak_ewma_experimental":{}}]}}"#,
    ),
];

fn live() -> isize {
    LIVE.load(Ordering::Relaxed)
}

fn sans_io(entry: &str) -> f64 {
    let doc = format!(r#"{{"loadBalancingConfig":[{entry}]}}"#);
    let parsed = config::parse_service_config(&doc).expect("a valid config");
    let ids: Vec<EndpointId> = (0..N).map(EndpointId).collect();
    let before = live();
    let mut policy = parsed.build(0);
    policy.set_endpoints(0, &ids);
    for &id in &ids {
        policy.on_connectivity(0, id, Connectivity::Ready);
    }
    let mut rng = SmallRng::seed_from_u64(1);
    let mut now = 0;
    for _ in 0..20 * N {
        now += 1_000;
        if let Pick::Endpoint(t) = policy.pick(now, RpcKind::Unary, &mut rng) {
            policy.on_done(now, t, Outcome::new(Status::Ok, 1_000_000));
        }
    }
    while let Some(t) = policy.next_timer().filter(|&t| t <= now + 2_000_000_000) {
        policy.on_timer(t, &mut rng);
    }
    let bytes = live() - before;
    drop(policy);
    bytes as f64 / f64::from(N)
}

fn shared(build: impl FnOnce() -> Box<dyn SharedPicker>) -> (&'static str, f64) {
    let before = live();
    let picker = build();
    let bytes = live() - before;
    (picker.name(), bytes as f64 / f64::from(N))
}

fn main() {
    println!("policy,kind,bytes_per_endpoint");
    for &(name, entry) in POLICIES {
        println!("{name},sans-io,{:.1}", sans_io(entry));
    }
    let pickers = [
        shared(|| Box::new(RoundRobin::new(N, 0))),
        shared(|| Box::new(LeastRequest::new(N, 2))),
        shared(|| Box::new(SharedPeakEwma::new(Config::default(), N).expect("supported"))),
    ];
    for (name, bytes) in pickers {
        println!("{name},shared,{bytes:.1}");
    }
}

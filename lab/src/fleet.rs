//! `lblab backend`'s job: a scenario's fleet of gRPC backends (or some of them) served until
//! stopped, its addresses and delay error printed.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use lblab_backend::{Fleet, FleetOptions};
use lblab_model::scenario::BackendSpec;
use lblab_model::units::Dur;
use lblab_model::Scenario;
use lblab_wire::timer;

use crate::error::{ensure, Context, Result};
use crate::{Lab, Names, Setting};

/// How the fleet is served.
#[derive(Debug, Clone, Copy)]
pub struct Serve {
    /// Where it listens (port 0: ephemeral ports; port P: backend i on P+i).
    pub listen: SocketAddr,
    /// Stop on its own this long after the fleet is listening.
    pub run_for: Option<Dur>,
    /// Time 0 of the fault timeline as Unix time in seconds [default: now].
    pub start_at: Option<f64>,
    /// Its timeline's time 0 ([`origin_of`] of `start_at`).
    pub origin: Instant,
    /// Whether its threads run in the real-time scheduling class.
    pub realtime: bool,
}

/// The `Instant` of a Unix time in seconds, or now; an error spells the setting with `names`.
pub fn origin_of(start_at: Option<f64>, names: Names) -> Result<Instant> {
    let Some(at) = start_at else {
        return Ok(Instant::now());
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    // Processes that share a timeline start within moments of each other: a day either way
    // catches a value in the wrong unit (ms, ns) without limiting any real use.
    const DAY: f64 = 86_400.0;
    ensure!(
        at.is_finite() && (at - now).abs() <= DAY,
        "{} {at}: must be a Unix time in seconds within a day of now ({now:.0})",
        names(Setting::StartAt)
    );
    let now_i = Instant::now();
    let origin = if at >= now {
        now_i.checked_add(Duration::from_secs_f64(at - now))
    } else {
        now_i.checked_sub(Duration::from_secs_f64(now - at))
    };
    Ok(origin.unwrap_or(now_i))
}

/// The backends `only` names (all if empty), in scenario order; an error spells the setting
/// with `names`.
pub fn select(
    scenario: &lblab_model::Scenario,
    only: &[String],
    names: Names,
) -> Result<Vec<lblab_model::scenario::BackendSpec>> {
    let named = |b: &lblab_model::scenario::BackendSpec, n: &str| {
        b.name == n || b.name.split('/').next() == Some(n)
    };
    for name in only {
        let known = scenario.backends.iter().any(|b| named(b, name));
        ensure!(
            known,
            "{} {name:?}: no backend or fleet group of that name in {}; it has {}",
            names(Setting::Only),
            scenario.file.name,
            scenario
                .backends
                .iter()
                .map(|b| b.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    Ok(scenario
        .backends
        .iter()
        .filter(|b| only.is_empty() || only.iter().any(|n| named(b, n)))
        .cloned()
        .collect())
}

/// Serves `backends` of `scenario` until the stop flag is set (or `serve.run_for` has passed),
/// printing their addresses, the `--targets` to give a load generator and, at the end, the delay
/// error (each line to `out`).
pub fn serve(
    lab: &Lab,
    scenario: &Scenario,
    backends: &[BackendSpec],
    serve: Serve,
    out: &mut dyn FnMut(&str),
) -> Result<()> {
    let (stop, realtime, origin) = (lab.stop, serve.realtime, serve.origin);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .thread_name("lblab-fleet")
        .enable_all()
        .on_thread_start(move || {
            if realtime {
                let _ = timer::set_realtime(timer::RT_WORKER_PRIORITY);
            }
        })
        .build()
        .context("building the runtime")?;
    let options = FleetOptions {
        listen: serve.listen,
        origin: Some(origin),
        realtime: realtime.then_some(timer::RT_TIMER_PRIORITY),
        ..FleetOptions::default()
    };
    let fleet = runtime
        .block_on(Fleet::start(backends, &options))
        .with_context(|| {
            format!(
                "starting the fleet of {} on {}",
                scenario.file.name, serve.listen
            )
        })?;
    for (spec, addr) in backends.iter().zip(fleet.addrs()) {
        out(&format!("{:<16} {addr}", spec.name));
    }
    let targets: Vec<String> = fleet.addrs().iter().map(|a| a.to_string()).collect();
    out(&format!(
        "{} {}",
        (lab.names)(Setting::Targets),
        targets.join(",")
    ));
    out(&format!(
        "serving {}; fault timeline starts at {}",
        match serve.run_for {
            Some(d) => format!("for {d} (or until Ctrl-C)"),
            None => "until Ctrl-C".into(),
        },
        match serve.start_at {
            Some(t) => format!("Unix time {t}"),
            None => "now".into(),
        }
    ));
    let until = serve
        .run_for
        .map(|d| Instant::now() + Duration::from_nanos(d.0));
    runtime.block_on(async {
        while !stop.load(Ordering::Relaxed) && until.is_none_or(|u| Instant::now() < u) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let acc = runtime.block_on(fleet.shutdown());
    out(&format!(
        "served {} unary requests; delay error p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
        acc.count, acc.p50_us, acc.p99_us, acc.p999_us, acc.max_us
    ));
    Ok(())
}

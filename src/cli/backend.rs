//! `lblab backend`: serve a scenario's fleet until interrupted.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;
use lblab_backend::{Fleet, FleetOptions};
use lblab_model::units::Dur;
use lblab_wire::timer;

/// Arguments of `lblab backend`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Scenario file (TOML): its fleet and faults are served.
    scenario: PathBuf,
    /// Where to listen; port 0 gives every backend an ephemeral port, port P gives backend i
    /// port P+i.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Serve only these backends (repeatable): a backend's name (`main/3`) or a fleet group's
    /// (`main`). To run a fleet as several processes, as a real deployment would [default: all].
    #[arg(long = "only", value_name = "NAME")]
    only: Vec<String>,
    /// Stop on its own this long after the fleet is listening (counted from then, not from
    /// `--start-at`); Ctrl-C or SIGTERM still stops it earlier [default: only on a signal].
    #[arg(long = "for")]
    run_for: Option<Dur>,
    /// Time 0 of the fault timeline as Unix time in seconds (give `lblab loadgen` the same value
    /// so both agree on when faults happen) [default: now].
    #[arg(long)]
    start_at: Option<f64>,
    #[command(flatten)]
    realtime: super::args::Realtime,
}

/// The `Instant` of a Unix time in seconds, or now.
pub fn origin_of(start_at: Option<f64>) -> anyhow::Result<Instant> {
    let Some(at) = start_at else {
        return Ok(Instant::now());
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_secs_f64();
    // Processes that share a timeline start within moments of each other: a day either way
    // catches a value in the wrong unit (ms, ns) without limiting any real use.
    const DAY: f64 = 86_400.0;
    anyhow::ensure!(
        at.is_finite() && (at - now).abs() <= DAY,
        "--start-at {at}: must be a Unix time in seconds within a day of now ({now:.0})"
    );
    let now_i = Instant::now();
    let origin = if at >= now {
        now_i.checked_add(Duration::from_secs_f64(at - now))
    } else {
        now_i.checked_sub(Duration::from_secs_f64(now - at))
    };
    Ok(origin.unwrap_or(now_i))
}

/// The backends `only` names (all if empty), in scenario order.
fn select(
    scenario: &lblab_model::Scenario,
    only: &[String],
) -> anyhow::Result<Vec<lblab_model::scenario::BackendSpec>> {
    let named = |b: &lblab_model::scenario::BackendSpec, n: &str| {
        b.name == n || b.name.split('/').next() == Some(n)
    };
    for name in only {
        let known = scenario.backends.iter().any(|b| named(b, name));
        anyhow::ensure!(
            known,
            "--only {name:?}: no backend or fleet group of that name in {}; it has {}",
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

pub fn run(mut args: Args) -> anyhow::Result<ExitCode> {
    args.scenario = super::args::scenario_path(&args.scenario)?;
    if args.run_for.is_some_and(|d| d.0 == 0) {
        anyhow::bail!(
            "--for 0s: give a positive duration, or leave --for out to serve until Ctrl-C"
        );
    }
    let scenario = lblab_model::Scenario::load(&args.scenario)?;
    let backends = select(&scenario, &args.only)?;
    super::args::warn_if_listening_off_host(args.listen);
    // A listener per backend, and the connections clients will open to it.
    let needed =
        64 + backends.len() as u64 * (1 + u64::from(scenario.file.workload.clients.max(1)));
    lblab_wire::ensure_open_files(needed).map_err(anyhow::Error::msg)?;
    let origin = origin_of(args.start_at)?;
    let stop = super::stop::stop_flag_saying("stopping the fleet");
    let realtime = args.realtime.enabled();
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
        listen: args.listen,
        origin: Some(origin),
        realtime: realtime.then_some(timer::RT_TIMER_PRIORITY),
        ..FleetOptions::default()
    };
    let fleet = runtime
        .block_on(Fleet::start(&backends, &options))
        .with_context(|| {
            format!(
                "starting the fleet of {} on {}",
                scenario.file.name, args.listen
            )
        })?;
    for (spec, addr) in backends.iter().zip(fleet.addrs()) {
        outln!("{:<16} {addr}", spec.name);
    }
    let targets: Vec<String> = fleet.addrs().iter().map(|a| a.to_string()).collect();
    outln!("--targets {}", targets.join(","));
    outln!(
        "serving {}; fault timeline starts at {}",
        match args.run_for {
            Some(d) => format!("for {d} (or until Ctrl-C)"),
            None => "until Ctrl-C".into(),
        },
        match args.start_at {
            Some(t) => format!("Unix time {t}"),
            None => "now".into(),
        }
    );
    let until = args
        .run_for
        .map(|d| Instant::now() + Duration::from_nanos(d.0));
    runtime.block_on(async {
        while !stop.load(Ordering::Relaxed) && until.is_none_or(|u| Instant::now() < u) {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let acc = runtime.block_on(fleet.shutdown());
    outln!(
        "served {} unary requests; delay error p50 {:.0} µs, p99 {:.0} µs, p99.9 {:.0} µs, max {:.0} µs",
        acc.count, acc.p50_us, acc.p99_us, acc.p999_us, acc.max_us
    );
    Ok(ExitCode::SUCCESS)
}

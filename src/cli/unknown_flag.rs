//! What `lblab` says about a flag it does not take, in place of clap's own tip: which other
//! command takes it, what lblab offers for a ghz flag it does not have, or the nearest flag of
//! the command, never one that weakens security (clap's tip turned `--skipFirst` into
//! `--skip-tls-verify`).

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::Command;

/// Flags a tip never points at: each turns a check off, and a typo must not do that.
const NEVER_SUGGESTED: [&str; 3] = ["skip-tls-verify", "skipTLS", "insecure"];

/// ghz's flags that `lblab loadgen` does not take, and what to use instead (ghz 0.120's flags).
const GHZ: [(&str, &str); 27] = [
    ("skipFirst", "leaves the first N calls out of the statistics; give --warmup DURATION instead: the calls of the warm-up are sent and not measured"),
    ("count-errors", "counts failed calls in the latency statistics; lblab's percentiles count the OK calls and those that reached their deadline (at the deadline, so a stall stays in the tail), and every other failure in the error share and the status table"),
    ("connections", "spreads a client's calls over N connections; each of lblab's --clients N has its own policy and one connection per server, as N gRPC channels have"),
    ("cname", "sets the name the server's certificate is checked against; give --authority NAME, which sets it and the calls' :authority"),
    ("binary", "sends a binary protobuf request; give the request as JSON with --data or --data-file"),
    ("binary-file", "reads a binary protobuf request; give the request as JSON with --data-file"),
    ("enable-compression", "compresses requests with gzip, which lblab does not"),
    ("output", "writes the output to a file; lblab writes every run to its results folder (--out) and prints --format on stdout, so redirect it: > FILE"),
    ("async", "sends calls without waiting for those in flight; that is lblab's open loop (-r RATE), and -c N is its closed loop"),
    ("max-duration", "bounds a -n run's time; give -z DURATION, which with -n bounds the run"),
    ("duration-stop", "says what happens to calls in flight at the end of -z; lblab waits for them up to their deadline and counts them"),
    ("load-max-duration", "bounds a load schedule's time; give -z DURATION"),
    ("concurrency-max-duration", "bounds a concurrency schedule's time; give -z DURATION"),
    ("lb-strategy", "picks grpc-go's balancer; give --policy (a name such as round_robin, or a service config)"),
    ("name", "names the run in its report; lblab names the run by its scenario or --call, and --out chooses its folder"),
    ("tags", "tags the run in its report; lblab records the command line in summary.json"),
    ("cpus", "limits the cores ghz uses; run lblab under taskset to pin it"),
    ("config", "reads ghz's JSON or TOML config; lblab's is a scenario file (TOML), given as the first argument"),
    ("stream-interval", "paces the messages of a client or bidi stream; lblab calls unary and server-streaming methods only"),
    ("stream-call-duration", "ends a stream after a time; lblab calls unary and server-streaming methods only"),
    ("stream-call-count", "ends a stream after a count of messages; lblab calls unary and server-streaming methods only"),
    ("stream-dynamic-messages", "renders a stream's messages as templates; lblab calls unary and server-streaming methods only"),
    ("reflect-metadata", "sends metadata with reflection requests; lblab's reflection requests carry the --metadata of the calls"),
    ("rmd", "sends metadata with reflection requests; lblab's reflection requests carry the --metadata of the calls"),
    ("debug", "writes a debug log; lblab prints its incidents and writes incidents.csv"),
    ("si", "is ghz's --stream-interval; lblab calls unary and server-streaming methods only"),
    ("e", "is ghz's --enable-compression (gzip), which lblab does not do"),
];

/// ghz's short flags that `lblab loadgen` does not take: the long flag each stands for.
const GHZ_SHORT: [(char, &str); 5] = [
    ('b', "binary"),
    ('B', "binary-file"),
    ('o', "output"),
    ('x', "max-duration"),
    ('e', "enable-compression"),
];

/// The message for `e` when it is an unknown flag of `command` (a subcommand's name): `None` for
/// any other parse error, whose clap message stands.
pub fn message(e: &clap::Error, all: &Command, command: Option<&str>) -> Option<String> {
    if command == Some("loadgen") {
        if let Some(m) = ghz_usage(e) {
            return Some(m);
        }
    }
    if e.kind() == ErrorKind::InvalidSubcommand {
        let Some(ContextValue::String(given)) = e.get(ContextKind::InvalidSubcommand) else {
            return None;
        };
        let names: Vec<&str> = all.get_subcommands().map(Command::get_name).collect();
        let near = names
            .iter()
            .map(|n| (strsim::jaro(given, n), *n))
            .filter(|(score, _)| *score > 0.7)
            .max_by(|a, b| a.0.total_cmp(&b.0));
        return Some(format!(
            "no command {given:?}{}; the commands: {} (`lblab --help` says what each does)",
            near.map_or(String::new(), |(_, n)| format!(
                ": did you mean `lblab {n}`?"
            )),
            names.join(", ")
        ));
    }
    if e.kind() != ErrorKind::UnknownArgument {
        return None;
    }
    let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
        return None;
    };
    let command = command?;
    let sub = all.find_subcommand(command)?;
    let name = if let Some(long) = arg.strip_prefix("--") {
        long.split('=').next()?.to_string()
    } else {
        // A short flag (-o, or -oFILE): ghz's, or none of ours.
        let c = arg.strip_prefix('-')?.chars().next()?;
        let (_, long) = GHZ_SHORT.iter().find(|(s, _)| *s == c)?;
        if command != "loadgen" {
            return None;
        }
        return Some(ghz_message(command, &format!("-{c}"), long));
    };
    let takes: Vec<&str> = all
        .get_subcommands()
        .filter(|c| {
            c.get_arguments()
                .any(|a| a.get_long() == Some(name.as_str()))
        })
        .map(Command::get_name)
        .collect();
    if !takes.is_empty() && !takes.contains(&command) {
        let mut message = format!(
            "`lblab {command}` has no --{name} (`lblab {command} --help` lists its flags); it is a flag of lblab {}",
            takes.join(", lblab ")
        );
        if command == "sweep" && (name == "duration" || name == "warmup") {
            message.push_str(&format!(
                "; a sweep sets it as a scenario field: --vary workload.{name}=20s"
            ));
        }
        return Some(message);
    }
    if command == "loadgen" && GHZ.iter().any(|(g, _)| *g == name) {
        return Some(ghz_message(command, &format!("--{name}"), &name));
    }
    let mut message = format!("`lblab {command}` has no --{name}");
    if let Some(near) = nearest(sub, &name) {
        message.push_str(&format!("; did you mean --{near}?"));
    }
    message.push_str(&format!(" (`lblab {command} --help` lists its flags)"));
    Some(message)
}

/// ghz's ways of using flags that lblab takes otherwise: `-O` formats lblab does not print,
/// and `-c` with `-r` (ghz's workers behind a rate limiter).
fn ghz_usage(e: &clap::Error) -> Option<String> {
    match e.kind() {
        ErrorKind::InvalidValue => {
            let Some(ContextValue::String(arg)) = e.get(ContextKind::InvalidArg) else {
                return None;
            };
            let Some(ContextValue::String(value)) = e.get(ContextKind::InvalidValue) else {
                return None;
            };
            let format = ["csv", "pretty", "influx-summary", "influx-details"];
            (arg.contains("--format") && format.contains(&value.as_str())).then(|| {
                format!(
                    "`lblab loadgen` has no -O {value}: it prints summary, json, prometheus or \
                     html, and writes CSV files beside them in the results folder (summary.csv, \
                     timeseries.csv, targets.csv, statuses.csv, failures.csv), with every \
                     latency in the .hlog and .hgrm files"
                )
            })
        }
        ErrorKind::ArgumentConflict => {
            let rendered = e.to_string();
            (rendered.contains("--concurrency") && rendered.contains("--rate")).then(|| {
                "`lblab loadgen` takes -c or -r, not both: -r RATE alone is an open loop that sends \
                 each call at its time however many are in flight (ghz's -c workers behind -r \
                 would wait for a free worker and hide the service's slowness from the \
                 latencies); -c N alone keeps N calls in flight per client"
                    .to_string()
            })
        }
        _ => None,
    }
}

fn ghz_message(command: &str, given: &str, long: &str) -> String {
    let what = GHZ
        .iter()
        .find(|(g, _)| *g == long)
        .map_or("is not a flag here", |(_, w)| w);
    format!("`lblab {command}` has no {given}: ghz's --{long} {what}")
}

/// The flag of `sub` nearest to `name` (Jaro similarity above 0.8; clap's own tip takes 0.7),
/// among its long flags and their aliases, never one of [`NEVER_SUGGESTED`]: each such
/// flag is reached through its own name only.
fn nearest(sub: &Command, name: &str) -> Option<String> {
    let mut best: Option<(f64, &str)> = None;
    for a in sub.get_arguments() {
        let Some(long) = a.get_long() else { continue };
        if NEVER_SUGGESTED.contains(&long) {
            continue;
        }
        let aliases = a.get_all_aliases().unwrap_or_default();
        for candidate in std::iter::once(long).chain(aliases) {
            if NEVER_SUGGESTED.contains(&candidate) {
                continue;
            }
            let score = strsim::jaro(name, candidate);
            if score > 0.8 && best.is_none_or(|(b, _)| score > b) {
                best = Some((score, long));
            }
        }
    }
    best.map(|(_, long)| long.to_string())
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::*;
    use crate::cli::Cli;

    fn said(argv: &[&str]) -> Option<String> {
        let e = Cli::try_parse_from(argv).unwrap_err();
        message(&e, &Cli::command(), Some(argv[1]))
    }

    #[test]
    fn a_flag_of_another_command_says_which_commands_take_it() {
        let m = said(&["lblab", "sweep", "one-slow", "--duration", "5s"]).expect("a message");
        assert!(m.contains("`lblab sweep` has no --duration"), "{m}");
        assert!(
            m.contains("lblab sim") && m.contains("lblab compare"),
            "{m}"
        );
        assert!(m.contains("--vary workload.duration=20s"), "{m}");
        assert!(!m.contains("-- --duration"), "{m}");
    }

    #[test]
    fn ghz_flags_say_what_to_use_and_no_tip_weakens_security() {
        let m = said(&["lblab", "loadgen", "--skipFirst", "10"]).expect("a message");
        assert!(m.contains("--warmup"), "{m}");
        assert!(!m.contains("tls") && !m.contains("insecure"), "{m}");
        let m = said(&["lblab", "loadgen", "--connections", "4"]).expect("a message");
        assert!(m.contains("--clients"), "{m}");
        assert!(!m.contains("--connect-timeout"), "{m}");
        let m = said(&["lblab", "loadgen", "-o", "out.json"]).expect("a message");
        assert!(m.contains("ghz's --output") && m.contains("> FILE"), "{m}");
        // Near misses of the flags that turn a check off are never suggested.
        for typo in ["--skip-tls", "--skipTls", "--insecur", "--skip-tls-verfy"] {
            let m = said(&["lblab", "loadgen", typo]).expect("a message");
            assert!(!m.contains("did you mean"), "{typo}: {m}");
        }
        // An ordinary typo gets its tip.
        let m = said(&["lblab", "loadgen", "--concurency", "4"]).expect("a message");
        assert!(m.contains("did you mean --concurrency?"), "{m}");
        let m = said(&["lblab", "loadgen", "-O", "csv"]).expect("a message");
        assert!(
            m.contains("has no -O csv") && m.contains("summary.csv"),
            "{m}"
        );
        let m = said(&["lblab", "loadgen", "-c", "4", "-r", "100"]).expect("a message");
        assert!(m.contains("takes -c or -r, not both"), "{m}");
        let m = said(&["lblab", "sin", "x"]).expect("a message");
        assert!(m.contains("did you mean `lblab sim`?"), "{m}");
        // A flag nothing resembles: no tip.
        let m = said(&["lblab", "sim", "x", "--nonsense"]).expect("a message");
        assert!(
            m.contains("`lblab sim` has no --nonsense") && !m.contains("did you"),
            "{m}"
        );
    }
}

//! `lblab check`: validate a service config.

use std::io::Read as _;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use lblab_policy::config;

/// Arguments of `lblab check`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// A service config: a path to a JSON file, or the JSON text itself (starting with `{`).
    config: String,
}

pub fn run(args: Args) -> anyhow::Result<ExitCode> {
    let (source, text) = if args.config.trim_start().starts_with('{') {
        ("<argument>".to_string(), args.config.clone())
    } else {
        let path = Path::new(&args.config);
        let mut text = String::new();
        // A service config is a few hundred bytes: read at most 1 MiB (a device or a huge file
        // given by mistake must not hang or exhaust memory).
        std::fs::File::open(path)
            .and_then(|f| std::io::Read::take(f, (1 << 20) + 1).read_to_string(&mut text))
            .with_context(|| format!("cannot read service config file {}", path.display()))?;
        anyhow::ensure!(
            text.len() <= 1 << 20,
            "service config file {} is larger than 1 MiB",
            path.display()
        );
        (path.display().to_string(), text)
    };
    match config::parse_service_config(&text) {
        Ok(policy) => {
            let normalized = serde_json::json!({ "loadBalancingConfig": [policy.to_json()] });
            println!("{}", serde_json::to_string_pretty(&normalized)?);
            Ok(ExitCode::SUCCESS)
        }
        Err(err) => {
            eprintln!("error: invalid service config in {source}: {err}");
            Ok(ExitCode::from(1))
        }
    }
}

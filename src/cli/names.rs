//! How the libraries' messages name settings here: as this command line's flags. The libraries
//! say which setting a message is about ([`Setting`]); this is the one place that spells each as
//! a flag, for the lines and warnings of the jobs (through [`lblab_lab::Lab::names`]) and for the
//! errors the binary prints ([`message`]).

use lblab_lab::Setting;

/// The flag of `setting`.
pub fn flag(setting: Setting) -> &'static str {
    match setting {
        Setting::Out => "--out",
        Setting::Repeat => "--repeat",
        Setting::Warmup => "--warmup",
        Setting::Duration => "--duration",
        Setting::MemoryBudget => "--memory-budget",
        Setting::ChartBudget => "--chart-budget",
        Setting::Policy => "--policy",
        Setting::Seed => "--seed",
        Setting::Seeds => "--seeds",
        Setting::SeedOffset => "--seed-offset",
        Setting::Baseline => "--baseline",
        Setting::WriteBaseline => "--write-baseline",
        Setting::Report => "--report",
        Setting::Confidence => "--confidence",
        Setting::MinChange => "--min-change",
        Setting::MinShareChange => "--min-share-change",
        Setting::MinSecondsChange => "--min-seconds-change",
        Setting::Vary => "--vary",
        Setting::X => "--x",
        Setting::Shard => "--shard",
        Setting::Merge => "--merge",
        Setting::Targets => "--targets",
        Setting::StartAt => "--start-at",
        Setting::Only => "--only",
        Setting::Listen => "--listen",
        Setting::Tls => "--tls",
        Setting::Cert => "--cert",
        Setting::Key => "--key",
        Setting::Proto => "--proto",
        Setting::ImportPath => "--import-path",
        Setting::Protoset => "--protoset",
        Setting::Name => "--name",
        Setting::Image => "--image",
        Setting::Port => "--port",
        Setting::StorageClass => "--storage-class",
        Setting::AccessMode => "--access-mode",
        Setting::OneLoadgenPerNode => "--one-loadgen-per-node",
        // A setting added to the libraries before it has a flag here reads as they spell it.
        other => other.word(),
    }
}

/// The error and its causes on one line, each once (`lblab_lab::error::join_causes`), the
/// settings they name spelt as flags.
pub fn message(err: &anyhow::Error) -> String {
    lblab_lab::error::join_causes(err.chain().map(|e| {
        if let Some(e) = e.downcast_ref::<lblab_deploy::DeployError>() {
            return lblab_lab::Named::named(e, flag);
        }
        lblab_lab::error::named(e, flag)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The long flags of `command` and of its subcommands, without their dashes.
    fn longs(command: &clap::Command, into: &mut std::collections::BTreeSet<String>) {
        for arg in command.get_arguments() {
            into.extend(arg.get_long().map(String::from));
        }
        for sub in command.get_subcommands() {
            longs(sub, into);
        }
    }

    #[test]
    fn every_setting_is_a_flag_of_some_command() {
        let mut flags = std::collections::BTreeSet::new();
        longs(
            &<super::super::Cli as clap::CommandFactory>::command(),
            &mut flags,
        );
        for setting in Setting::ALL {
            let spelt = flag(setting);
            let long = spelt.strip_prefix("--").unwrap_or(spelt);
            assert!(
                flags.contains(long),
                "{setting:?} is spelt {spelt}, which no command has"
            );
        }
    }
}

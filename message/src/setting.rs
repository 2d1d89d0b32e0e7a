//! The settings of a job that a message may have to name (the results folder, the warm-up, a
//! baseline file): which one is typed here, how it is spelt is the caller's. A library's error
//! or note says "`out` …" through [`Setting::word`] when it is displayed on its own; the binary
//! renders the same message with its own spelling (its command-line flags) through
//! [`Named::named`], so that no library names a flag.

/// A setting a message may name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Setting {
    /// The results folder of a run.
    Out,
    /// How many times a run is made.
    Repeat,
    /// The warm-up before measuring.
    Warmup,
    /// How long a run measures.
    Duration,
    /// The memory a run may need.
    MemoryBudget,
    /// The time a run's charts may take.
    ChartBudget,
    /// The policies selected.
    Policy,
    /// The run seed.
    Seed,
    /// How many seeds a run takes.
    Seeds,
    /// The shift of every seed.
    SeedOffset,
    /// The regression baseline compared with.
    Baseline,
    /// The regression baseline to write.
    WriteBaseline,
    /// The regression report file.
    Report,
    /// The confidence of a regression comparison.
    Confidence,
    /// The smallest relative change counted as worse.
    MinChange,
    /// The smallest change of a share counted as worse.
    MinShareChange,
    /// The smallest change of a time counted as worse.
    MinSecondsChange,
    /// The scenario fields a sweep varies.
    Vary,
    /// The x axis of a sweep's charts.
    X,
    /// A sweep's shard.
    Shard,
    /// The folders a merge combines.
    Merge,
    /// The servers a load generator calls.
    Targets,
    /// The wall-clock start of a run.
    StartAt,
    /// The backends a fleet serves.
    Only,
    /// The address a fleet listens on.
    Listen,
    /// Whether calls use TLS.
    Tls,
    /// A client certificate.
    Cert,
    /// A client certificate's key.
    Key,
    /// `.proto` files of a method's schema.
    Proto,
    /// Where `.proto` imports are found.
    ImportPath,
    /// A compiled protoset of a method's schema.
    Protoset,
    /// A deployment's name.
    Name,
    /// A deployment's container image.
    Image,
    /// A deployment's backend port.
    Port,
    /// A deployment's storage class.
    StorageClass,
    /// How a deployment's results volume may be mounted.
    AccessMode,
    /// Whether a deployment's load generators each get a node of their own.
    OneLoadgenPerNode,
}

impl Setting {
    /// Every setting, in declaration order.
    pub const ALL: [Setting; 37] = [
        Setting::Out,
        Setting::Repeat,
        Setting::Warmup,
        Setting::Duration,
        Setting::MemoryBudget,
        Setting::ChartBudget,
        Setting::Policy,
        Setting::Seed,
        Setting::Seeds,
        Setting::SeedOffset,
        Setting::Baseline,
        Setting::WriteBaseline,
        Setting::Report,
        Setting::Confidence,
        Setting::MinChange,
        Setting::MinShareChange,
        Setting::MinSecondsChange,
        Setting::Vary,
        Setting::X,
        Setting::Shard,
        Setting::Merge,
        Setting::Targets,
        Setting::StartAt,
        Setting::Only,
        Setting::Listen,
        Setting::Tls,
        Setting::Cert,
        Setting::Key,
        Setting::Proto,
        Setting::ImportPath,
        Setting::Protoset,
        Setting::Name,
        Setting::Image,
        Setting::Port,
        Setting::StorageClass,
        Setting::AccessMode,
        Setting::OneLoadgenPerNode,
    ];

    /// The setting in words, as a library's messages name it when displayed on their own:
    /// `out`, `write_baseline`.
    pub fn word(self) -> &'static str {
        match self {
            Setting::Out => "out",
            Setting::Repeat => "repeat",
            Setting::Warmup => "warmup",
            Setting::Duration => "duration",
            Setting::MemoryBudget => "memory_budget",
            Setting::ChartBudget => "chart_budget",
            Setting::Policy => "policy",
            Setting::Seed => "seed",
            Setting::Seeds => "seeds",
            Setting::SeedOffset => "seed_offset",
            Setting::Baseline => "baseline",
            Setting::WriteBaseline => "write_baseline",
            Setting::Report => "report",
            Setting::Confidence => "confidence",
            Setting::MinChange => "min_change",
            Setting::MinShareChange => "min_share_change",
            Setting::MinSecondsChange => "min_seconds_change",
            Setting::Vary => "vary",
            Setting::X => "x",
            Setting::Shard => "shard",
            Setting::Merge => "merge",
            Setting::Targets => "targets",
            Setting::StartAt => "start_at",
            Setting::Only => "only",
            Setting::Listen => "listen",
            Setting::Tls => "tls",
            Setting::Cert => "cert",
            Setting::Key => "key",
            Setting::Proto => "proto",
            Setting::ImportPath => "import_path",
            Setting::Protoset => "protoset",
            Setting::Name => "name",
            Setting::Image => "image",
            Setting::Port => "port",
            Setting::StorageClass => "storage_class",
            Setting::AccessMode => "access_mode",
            Setting::OneLoadgenPerNode => "one_loadgen_per_node",
        }
    }
}

/// How a message spells a setting: [`Setting::word`], or the binary's flags.
pub type Names = fn(Setting) -> &'static str;

/// A message that names settings, rendered with the caller's spelling of them; its `Display`
/// is [`Named::named`] with [`Setting::word`].
pub trait Named {
    /// The message with each setting spelt by `names`.
    fn named(&self, names: Names) -> String;
}

/// Implements `Display` for [`Named`] types: [`Named::named`] with [`Setting::word`].
#[macro_export]
macro_rules! display_named {
    ($($t:ty),* $(,)?) => {
        $(impl ::std::fmt::Display for $t {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(&$crate::setting::Named::named(
                    self,
                    $crate::setting::Setting::word,
                ))
            }
        })*
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_setting_has_its_own_word() {
        let words: std::collections::BTreeSet<&str> =
            Setting::ALL.iter().map(|s| s.word()).collect();
        assert_eq!(words.len(), Setting::ALL.len());
    }
}

//! The machinery behind the policy table in `lib.rs`: from one list of `Variant(module)` lines,
//! [`policies!`] declares each policy's module and generates the [`PolicyConfig`] enum,
//! [`SUPPORTED`] and the table the parser selects from (`KINDS`). `config` re-exports the public
//! ones; nothing here is written by hand per policy.
//!
//! [`PolicyConfig`]: crate::config::PolicyConfig
//! [`SUPPORTED`]: crate::config::SUPPORTED

/// The policy table: one line per policy, `Variant(module)`, in the order `SUPPORTED` lists
/// them. `module` is a file `src/<module>.rs` with a `NAME` (its gRPC name) and a `Config`
/// implementing `config::spec::Spec`; from this one list come the `pub mod` declarations, the
/// `PolicyConfig` enum, `SUPPORTED`, and the table `config::parse_policy` selects from.
macro_rules! policies {
    ($($(#[$doc:meta])* $variant:ident($module:ident),)*) => {
        $(pub mod $module;)*

        /// What the policy table generates; `config` re-exports the public items.
        mod table {
            use crate::config::spec::Spec;
            use crate::config::ConfigError;
            use crate::config::fields::Fields;

            /// A validated policy tree.
            #[derive(Debug, Clone, PartialEq)]
            #[non_exhaustive]
            pub enum PolicyConfig {
                $($(#[$doc])* $variant(crate::$module::Config),)*
            }

            /// The policy names this crate implements, in gRPC's spelling.
            pub const SUPPORTED: &[&str] = &[$(crate::$module::NAME,)*];

            /// One line of the policy table: a name and how to parse its config.
            pub(crate) struct Kind {
                pub(crate) name: &'static str,
                pub(crate) parse: fn(&mut Fields<'_>) -> Result<PolicyConfig, ConfigError>,
                #[cfg(test)]
                pub(crate) default: fn() -> PolicyConfig,
            }

            /// [`SUPPORTED`] with what each name parses into.
            pub(crate) const KINDS: &[Kind] = &[$(Kind {
                name: crate::$module::NAME,
                parse: |f| {
                    <crate::$module::Config as Spec>::parse(f).map(PolicyConfig::$variant)
                },
                #[cfg(test)]
                default: || PolicyConfig::$variant(Default::default()),
            },)*];

            impl PolicyConfig {
                /// The policy's gRPC name.
                pub fn name(&self) -> &'static str {
                    match self {
                        $(PolicyConfig::$variant(_) => crate::$module::NAME,)*
                    }
                }

                /// The variant's config, for what every policy's config does.
                pub(crate) fn spec(&self) -> &dyn Spec {
                    match self {
                        $(PolicyConfig::$variant(c) => c,)*
                    }
                }
            }
        }
    };
}

//! The one error type of the lab's jobs: a message of its own, an error of a library crate as it
//! is, or either with what was being done ([`Context::context`]). Displayed, each says what it
//! is; its causes follow through [`std::error::Error::source`], as the binary prints them.
//! Errors that name a setting (a results folder, the memory budget) are the libraries' [`Named`]
//! errors; [`named`] renders one with the caller's spelling of the settings.

use lblab_message::setting::{Named, Names};

/// An error of a lab job.
#[derive(Debug, thiserror::Error)]
pub enum LabError {
    /// A message of the lab's own (an invalid option, a refused run).
    #[error("{0}")]
    Message(String),
    /// What was being done, caused by `source`.
    #[error("{context}")]
    Context {
        /// What was being done ("writing results into lblab-out/one-slow/sim").
        context: String,
        /// What went wrong.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// An error of a library crate, as it is.
    #[error(transparent)]
    Library(Box<dyn std::error::Error + Send + Sync + 'static>),
}

/// A lab job's result.
pub type Result<T, E = LabError> = std::result::Result<T, E>;

macro_rules! library_errors {
    ($($t:ty),* $(,)?) => {
        $(impl From<$t> for LabError {
            fn from(e: $t) -> LabError {
                LabError::Library(Box::new(e))
            }
        })*
    };
}

library_errors!(
    std::io::Error,
    serde_json::Error,
    csv::Error,
    lblab_record::FileError,
    crate::out_dir::OutDirError,
    lblab_report::ReportError,
    lblab_sim::SimError,
    lblab_sim::regress::RegressError,
    lblab_sim::shard::ShardError,
    lblab_harness::HarnessError,
    lblab_model::vary::VaryError,
    lblab_model::budget::BudgetError,
    lblab_model::scenario::UnknownLabel,
    lblab_wire::OpenFilesError,
    std::time::SystemTimeError,
);

/// Says what was being done when an error happened.
pub trait Context<T> {
    /// The error with `context` as its message and the error as its cause.
    fn context(self, context: impl Into<String>) -> Result<T>;
    /// [`Context::context`] with the message made only on an error.
    fn with_context<S: Into<String>>(self, context: impl FnOnce() -> S) -> Result<T>;
}

impl<T, E: std::error::Error + Send + Sync + 'static> Context<T> for std::result::Result<T, E> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.map_err(|e| LabError::Context {
            context: context.into(),
            source: Box::new(e),
        })
    }

    fn with_context<S: Into<String>>(self, context: impl FnOnce() -> S) -> Result<T> {
        self.map_err(|e| LabError::Context {
            context: context().into(),
            source: Box::new(e),
        })
    }
}

impl<T> Context<T> for Option<T> {
    fn context(self, context: impl Into<String>) -> Result<T> {
        self.ok_or_else(|| LabError::Message(context.into()))
    }

    fn with_context<S: Into<String>>(self, context: impl FnOnce() -> S) -> Result<T> {
        self.ok_or_else(|| LabError::Message(context().into()))
    }
}

/// Returns early with a [`LabError::Message`].
macro_rules! bail {
    ($($arg:tt)*) => {
        return Err($crate::error::LabError::Message(format!($($arg)*)))
    };
}

/// Returns early with a [`LabError::Message`] unless `cond` holds.
macro_rules! ensure {
    ($cond:expr, $($arg:tt)*) => {
        if !($cond) {
            return Err($crate::error::LabError::Message(format!($($arg)*)));
        }
    };
}

pub(crate) use {bail, ensure};

impl LabError {
    /// The error and its causes on one line, each after a colon (as `anyhow` shows an error
    /// with `{:#}`), each once ([`join_causes`]).
    pub fn chain(&self) -> String {
        let mut messages = vec![self.to_string()];
        let mut cause = std::error::Error::source(self);
        while let Some(c) = cause {
            messages.push(c.to_string());
            cause = c.source();
        }
        join_causes(messages)
    }
}

pub use lblab_message::text::join_causes;

impl LabError {
    /// [`LabError::chain`] with the settings its causes name spelt by `names` ([`named`]).
    pub fn chain_named(&self, names: Names) -> String {
        join_causes(
            std::iter::successors(Some(self as &Error), |e| e.source()).map(|e| named(e, names)),
        )
    }
}

/// An error as `dyn Error`.
type Error = dyn std::error::Error + 'static;

/// One error of a chain (not its causes) as it reads with the settings it names spelt by
/// `names`: the libraries' [`Named`] errors rendered so, looked for through the wrappers that
/// show their inner error as it is (`#[error(transparent)]`); any other error as it displays.
pub fn named(e: &Error, names: Names) -> String {
    fn inner(e: &Error, names: Names) -> Option<String> {
        use lblab_harness::HarnessError;
        use lblab_loadgen::LoadgenError;
        if let Some(e) = e.downcast_ref::<LabError>() {
            return match e {
                LabError::Library(e) => Some(named(e.as_ref(), names)),
                _ => None,
            };
        }
        if let Some(e) = e.downcast_ref::<HarnessError>() {
            return match e {
                HarnessError::Loadgen(e) => inner(e, names),
                HarnessError::Labels(e) => Some(e.named(names)),
                HarnessError::NoRealPolicy(e) => Some(e.named(names)),
                _ => None,
            };
        }
        if let Some(LoadgenError::ReflectionRefused(e)) = e.downcast_ref::<LoadgenError>() {
            return Some(e.named(names));
        }
        if let Some(lblab_backend::BackendError::Listen(e)) =
            e.downcast_ref::<lblab_backend::BackendError>()
        {
            return Some(e.named(names));
        }
        macro_rules! named_types {
            ($($t:ty),* $(,)?) => {
                $(if let Some(e) = e.downcast_ref::<$t>() {
                    return Some(e.named(names));
                })*
            };
        }
        named_types!(
            crate::out_dir::OutDirError,
            lblab_model::budget::BudgetError,
            lblab_model::scenario::UnknownLabel,
            lblab_harness::NoRealPolicy,
            lblab_backend::ListenError,
            lblab_loadgen::ReflectionRefused,
        );
        None
    }
    inner(e, names).unwrap_or_else(|| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error that prints its source, as `thiserror`'s `"{file}: {source}"` does.
    #[derive(Debug, thiserror::Error)]
    #[error("statuses.csv: {source}")]
    struct Writing {
        source: std::io::Error,
    }

    #[test]
    fn a_cause_the_message_already_holds_is_said_once() {
        let full = std::io::Error::from_raw_os_error(28);
        let said = full.to_string();
        let e: Result<()> = Err(Writing { source: full }).context("writing the results so far");
        let line = e.expect_err("an error").chain();
        assert_eq!(
            line,
            format!("writing the results so far: statuses.csv: {said}")
        );
        assert_eq!(line.matches(&said).count(), 1, "{line}");
    }
}

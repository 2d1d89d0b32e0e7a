//! The one error type of lblab's files, [`RecordError`]: it sits at the bottom so that the
//! scenario (`lblab_model`) and the results files share it, and a caller handles one type.

use std::path::PathBuf;

use crate::setting::{Named, Names, Setting};

/// An error in one of lblab's files: a scenario (`lblab_model` calls this type `RecordError`), or a
/// results file written or read back.
///
/// Errors in a scenario name the file, the field (a dotted path such as `fleet[1].workers`) and,
/// when the text is at hand, the line and column, like a compiler:
/// ``one-slow.toml:14:11: `fleet[0].count`: must be at least 1``.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// A file could not be read or written.
    #[error("{file}: {source}")]
    Io {
        /// The file.
        file: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The file is not valid TOML or does not match the schema.
    #[error("{}{message}", location(file, field.as_deref(), *position))]
    Parse {
        /// The file.
        file: String,
        /// Dotted path of the field the parser stopped at, when it can be told.
        field: Option<String>,
        /// 1-based line and column.
        position: Option<(usize, usize)>,
        /// What the parser said.
        message: String,
    },
    /// A value parses but makes no sense.
    #[error("{}{message}", location(file, Some(field), *position))]
    Invalid {
        /// The file.
        file: String,
        /// Dotted path of the field, e.g. `fleet[1].workers`.
        field: String,
        /// 1-based line and column of the field in the file, when known.
        position: Option<(usize, usize)>,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// `file:line:column: `field`: ` (the parts that are known).
fn location(file: &str, field: Option<&str>, position: Option<(usize, usize)>) -> String {
    let mut s = String::new();
    match (file.is_empty(), position) {
        (false, Some((line, col))) => s.push_str(&format!("{file}:{line}:{col}: ")),
        (false, None) => s.push_str(&format!("{file}: ")),
        (true, Some((line, col))) => s.push_str(&format!("line {line}, column {col}: ")),
        (true, None) => {}
    }
    if let Some(field) = field.filter(|f| !f.is_empty()) {
        s.push_str(&format!("`{field}`: "));
    }
    s
}

impl RecordError {
    /// A value at `field` that parses but makes no sense, in a file not yet named
    /// ([`in_file`](Self::in_file) names it).
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        RecordError::Invalid {
            file: String::new(),
            field: field.to_string(),
            position: None,
            message: message.into(),
        }
    }

    /// Names the file the error is in.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            RecordError::Parse {
                field,
                position,
                message,
                ..
            } => RecordError::Parse {
                file: name.into(),
                field,
                position,
                message,
            },
            RecordError::Invalid {
                field,
                position,
                message,
                ..
            } => RecordError::Invalid {
                file: name.into(),
                field,
                position,
                message,
            },
            other => other,
        }
    }

    /// The dotted path of the offending field, if the error has one.
    pub fn field(&self) -> Option<&str> {
        match self {
            RecordError::Parse { field, .. } => field.as_deref(),
            RecordError::Invalid { field, .. } => Some(field),
            RecordError::Io { .. } => None,
        }
    }

    /// The 1-based line and column of the error in its file, if known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            RecordError::Parse { position, .. } | RecordError::Invalid { position, .. } => {
                *position
            }
            RecordError::Io { .. } => None,
        }
    }
}

/// A results folder that cannot be used (`out_dir::prepare_dir`): it is not a folder, cannot be
/// created, written or locked, or another run holds it. Each names the folder as it was given
/// (`dir`); the setting it came from is [`Setting::Out`], spelt by whoever renders the message
/// ([`Named`]).
#[derive(Debug)]
pub enum OutDirError {
    /// A symbolic link to a folder that does not exist.
    DanglingLink {
        /// The folder given.
        dir: PathBuf,
        /// Where the link points.
        target: PathBuf,
    },
    /// Something that exists and is not a folder.
    NotAFolder {
        /// The folder given.
        dir: PathBuf,
    },
    /// The folder cannot be created.
    Create {
        /// The folder given.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// No file can be written into the folder.
    Unwritable {
        /// The folder given.
        dir: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The folder is inside one that another run holds.
    InsideLocked {
        /// The folder given.
        dir: PathBuf,
        /// The folder the other run holds.
        outer: PathBuf,
    },
    /// The folder's lock file cannot be created.
    LockFile {
        /// The folder given.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
        /// The operating system's error.
        error: std::io::Error,
    },
    /// Another run holds the folder.
    Locked {
        /// The folder given.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
    },
    /// The folder's lock cannot be taken.
    Lock {
        /// The folder given.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
        /// The operating system's error.
        error: std::io::Error,
    },
    /// The folder's lock file keeps being replaced.
    LockReplaced {
        /// The folder given.
        dir: PathBuf,
        /// Its lock file.
        lock_file: PathBuf,
    },
}

impl Named for OutDirError {
    fn named(&self, names: Names) -> String {
        let out = names(Setting::Out);
        match self {
            OutDirError::DanglingLink { dir, target } => format!(
                "{out} {}: a symbolic link to {}, which does not exist; create that folder or \
                 give another {out}",
                dir.display(),
                target.display()
            ),
            OutDirError::NotAFolder { dir } => format!(
                "{out} {}: exists and is not a folder; give a folder for the results",
                dir.display()
            ),
            OutDirError::Create { dir, .. } => {
                format!("{out} {}: cannot create the results folder", dir.display())
            }
            OutDirError::Unwritable { dir, .. } => format!(
                "{out} {}: cannot write into the results folder (nothing was run)",
                dir.display()
            ),
            OutDirError::InsideLocked { dir, outer } => format!(
                "{out} {}: it is inside {}, into which another lblab run is writing its results \
                 (it holds {}); wait for it to finish, or give another {out}",
                dir.display(),
                outer.display(),
                outer.join(crate::lock::LOCK_FILE).display()
            ),
            OutDirError::LockFile {
                dir,
                lock_file,
                error,
            } => format!(
                "{out} {}: cannot write into the results folder (nothing was run): its lock \
                 file {}: {error}",
                dir.display(),
                lock_file.display()
            ),
            OutDirError::Locked { dir, lock_file } => format!(
                "{out} {}: another lblab run is writing its results into this folder (it holds \
                 {}); wait for it to finish, or give another {out}",
                dir.display(),
                lock_file.display()
            ),
            OutDirError::Lock {
                dir,
                lock_file,
                error,
            } => format!(
                "{out} {}: cannot lock the results folder ({}): {error}",
                dir.display(),
                lock_file.display()
            ),
            OutDirError::LockReplaced { dir, lock_file } => format!(
                "{out} {}: its lock file {} keeps being replaced; is another program removing it?",
                dir.display(),
                lock_file.display()
            ),
        }
    }
}

impl std::fmt::Display for OutDirError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.named(Setting::word))
    }
}

impl std::error::Error for OutDirError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            OutDirError::Create { source, .. } | OutDirError::Unwritable { source, .. } => {
                Some(source)
            }
            _ => None,
        }
    }
}

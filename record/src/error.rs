//! The one error type of lblab's files, [`RecordError`]: it sits at the bottom so that the
//! scenario (`lblab_model`) and the results files share it, and a caller handles one type.

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
/// created, written or locked, or another run holds it. The message names the folder as `--out`
/// gives it.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct OutDirError {
    /// What is wrong, naming the folder.
    pub message: String,
    /// The error of the operating system behind it, if any.
    #[source]
    pub source: Option<std::io::Error>,
}

impl OutDirError {
    /// An error that says it all in `message`.
    pub fn new(message: String) -> OutDirError {
        OutDirError {
            message,
            source: None,
        }
    }
}

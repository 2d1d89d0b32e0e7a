//! The one error type of lblab's files, [`FileError`]: a scenario file and a results file say
//! what is wrong in the same words (file, field, line and column), and a caller handles one type.

/// An error in one of lblab's files: a scenario, or a results file written or read back.
///
/// Errors in a scenario name the file, the field (a dotted path such as `fleet[1].workers`) and,
/// when the text is at hand, the line and column, like a compiler:
/// ``one-slow.toml:14:11: `fleet[0].count`: must be at least 1``.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FileError {
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

impl FileError {
    /// A value at `field` that parses but makes no sense, in a file not yet named
    /// ([`in_file`](Self::in_file) names it).
    pub fn invalid(field: &str, message: impl Into<String>) -> Self {
        FileError::Invalid {
            file: String::new(),
            field: field.to_string(),
            position: None,
            message: message.into(),
        }
    }

    /// Names the file the error is in.
    pub fn in_file(self, name: &str) -> Self {
        match self {
            FileError::Parse {
                field,
                position,
                message,
                ..
            } => FileError::Parse {
                file: name.into(),
                field,
                position,
                message,
            },
            FileError::Invalid {
                field,
                position,
                message,
                ..
            } => FileError::Invalid {
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
            FileError::Parse { field, .. } => field.as_deref(),
            FileError::Invalid { field, .. } => Some(field),
            FileError::Io { .. } => None,
        }
    }

    /// The 1-based line and column of the error in its file, if known.
    pub fn position(&self) -> Option<(usize, usize)> {
        match self {
            FileError::Parse { position, .. } | FileError::Invalid { position, .. } => *position,
            FileError::Io { .. } => None,
        }
    }
}

//! Reading a result file back, bounded: what every reader of a results folder (`.hlog`, CSV,
//! JSON) goes through. It sits below them so that the files and the `.hlog` code need not import
//! it from each other.

use std::path::Path;

use crate::FileError;

/// The largest result file lblab reads back (a year-long run's hlog is far below it).
pub const MAX_RESULT_FILE: u64 = 256 << 20;

/// Reads a result file back as text: only a regular file (a FIFO or a device given by mistake
/// must not block or fill memory), at most [`MAX_RESULT_FILE`] bytes. A missing file is an
/// `Io` error of kind `NotFound`.
pub fn read_result_file(path: &Path) -> Result<String, FileError> {
    use std::io::Read as _;
    let io = |source| FileError::Io {
        file: path.display().to_string(),
        source,
    };
    let meta = std::fs::metadata(path).map_err(io)?;
    if !meta.is_file() {
        return Err(io(std::io::Error::other("not a regular file")));
    }
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_RESULT_FILE + 1).read_to_string(&mut text))
        .map_err(io)?;
    if text.len() as u64 > MAX_RESULT_FILE {
        return Err(io(std::io::Error::other(format!(
            "larger than {} MiB, more than any result file lblab writes",
            MAX_RESULT_FILE >> 20
        ))));
    }
    Ok(text)
}

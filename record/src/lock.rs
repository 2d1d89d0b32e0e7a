//! One writer per results folder: a run holds an exclusive lock on `<out>/.lblab.lock` from
//! before its first file until it exits, and a second run into the same folder is refused at
//! once, naming the folder, instead of leaving one run's data beside the other's charts.
//!
//! The lock is the operating system's advisory file lock (`flock` on Linux, through
//! [`std::fs::File::try_lock`]), so it is released when the process exits however it exits;
//! a lock file left behind by a killed run blocks nobody. A run that ends normally removes it.

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};

use crate::error::OutDirError;

/// The lock file's name inside a results folder.
pub const LOCK_FILE: &str = ".lblab.lock";

/// An exclusive lock on a results folder, held until dropped; dropping it removes the lock file
/// (while still holding the lock, so no other run can have it meanwhile) and releases the lock.
#[derive(Debug)]
pub struct FolderLock {
    path: PathBuf,
    file: File,
}

impl FolderLock {
    /// Takes the lock of `dir` (an existing folder), or fails at once with a message naming the
    /// folder if another run holds it.
    pub fn acquire(dir: &Path) -> Result<FolderLock, OutDirError> {
        let path = dir.join(LOCK_FILE);
        // A run that ends removes its lock file while holding it: one that opened the file just
        // before that would lock a file no longer in the folder. It checks, and tries again.
        for _ in 0..16 {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|e| {
                    OutDirError::new(format!(
                        "--out {}: cannot write into the results folder (nothing was run): its \
                         lock file {}: {e}",
                        dir.display(),
                        path.display()
                    ))
                })?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(OutDirError::new(format!(
                        "--out {}: another lblab run is writing its results into this folder (it \
                         holds {}); wait for it to finish, or give another --out",
                        dir.display(),
                        path.display()
                    )))
                }
                Err(TryLockError::Error(e)) => {
                    return Err(OutDirError::new(format!(
                        "--out {}: cannot lock the results folder ({}): {e}",
                        dir.display(),
                        path.display()
                    )))
                }
            }
            if same_file(&file, &path) {
                let _ = file.set_len(0);
                use std::io::Write as _;
                let _ = writeln!(&file, "{}", std::process::id());
                return Ok(FolderLock { path, file });
            }
        }
        Err(OutDirError::new(format!(
            "--out {}: its lock file {} keeps being replaced; is another program removing it?",
            dir.display(),
            path.display()
        )))
    }
}

/// Whether `path` still names the open `file` (the same inode).
#[cfg(unix)]
fn same_file(file: &File, path: &Path) -> bool {
    use std::os::unix::fs::MetadataExt as _;
    match (file.metadata(), std::fs::metadata(path)) {
        (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
        _ => false,
    }
}

#[cfg(not(unix))]
fn same_file(_: &File, path: &Path) -> bool {
    path.exists()
}

impl Drop for FolderLock {
    fn drop(&mut self) {
        // Removed while held, then released when the file closes.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

//! One writer per results folder: a run holds an exclusive lock on `<out>/.lblab.lock` from
//! before its first file until it exits, and a second run into the same folder is refused at
//! once, naming the folder, instead of leaving one run's data beside the other's charts.
//!
//! The lock is the operating system's advisory file lock (`flock` on Linux, through
//! [`std::fs::File::try_lock`]), so it is released when the process exits however it exits;
//! a lock file left behind by a killed run blocks nobody. A run that ends normally removes it.
//!
//! A run's folder may hold other runs' folders (`lblab compare` writes `sim/` and `real/` inside
//! its own), so the lock covers the folders inside it too: a run into a folder inside one that
//! another process holds is refused as well ([`FolderLock::acquire`]).

use std::fs::{File, OpenOptions, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::out_dir::OutDirError;

/// The lock file's name inside a results folder.
pub const LOCK_FILE: &str = ".lblab.lock";

/// The folders this process holds the lock of (canonical paths): a run's own folders inside
/// one of them are its to write.
static HELD: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// The held folders, whatever a panicking holder left.
fn held() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    HELD.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The nearest folder around `dir` (not `dir` itself) whose lock another process holds, if any.
fn locked_ancestor(dir: &Path) -> Option<PathBuf> {
    let canonical = dir.canonicalize().ok()?;
    let mine = held().clone();
    for ancestor in canonical.ancestors().skip(1) {
        if mine.iter().any(|m| m == ancestor) {
            // This process's own run: what is inside it is this run's.
            return None;
        }
        let path = ancestor.join(LOCK_FILE);
        let Ok(file) = File::open(&path) else {
            continue;
        };
        // A shared probe: it fails only while a run holds the exclusive lock.
        match file.try_lock_shared() {
            Ok(()) => {
                let _ = file.unlock();
            }
            Err(TryLockError::WouldBlock) => return Some(ancestor.to_path_buf()),
            Err(TryLockError::Error(_)) => {}
        }
    }
    None
}

/// An exclusive lock on a results folder, held until dropped; dropping it removes the lock file
/// (while still holding the lock, so no other run can have it meanwhile) and releases the lock.
#[derive(Debug)]
pub struct FolderLock {
    path: PathBuf,
    file: File,
    /// The folder's canonical path, in [`HELD`] while the lock is.
    canonical: Option<PathBuf>,
}

impl FolderLock {
    /// Takes the lock of `dir` (an existing folder), or fails at once with a message naming the
    /// folder if another run holds it, or holds a folder `dir` is inside of (a `lblab sim --out`
    /// into the `sim/` of a running `compare`).
    pub fn acquire(dir: &Path) -> Result<FolderLock, OutDirError> {
        if let Some(outer) = locked_ancestor(dir) {
            return Err(OutDirError::InsideLocked {
                dir: dir.to_path_buf(),
                outer,
            });
        }
        let path = dir.join(LOCK_FILE);
        // A run that ends removes its lock file while holding it: one that opened the file just
        // before that would lock a file no longer in the folder. It checks, and tries again.
        for _ in 0..16 {
            let file = OpenOptions::new()
                .create(true)
                .truncate(false)
                .write(true)
                .open(&path)
                .map_err(|error| OutDirError::LockFile {
                    dir: dir.to_path_buf(),
                    lock_file: path.clone(),
                    error,
                })?;
            match file.try_lock() {
                Ok(()) => {}
                Err(TryLockError::WouldBlock) => {
                    return Err(OutDirError::Locked {
                        dir: dir.to_path_buf(),
                        lock_file: path,
                    })
                }
                Err(TryLockError::Error(error)) => {
                    return Err(OutDirError::Lock {
                        dir: dir.to_path_buf(),
                        lock_file: path,
                        error,
                    })
                }
            }
            if same_file(&file, &path) {
                let _ = file.set_len(0);
                use std::io::Write as _;
                let _ = writeln!(&file, "{}", std::process::id());
                let canonical = dir.canonicalize().ok();
                if let Some(c) = &canonical {
                    held().push(c.clone());
                }
                return Ok(FolderLock {
                    path,
                    file,
                    canonical,
                });
            }
        }
        Err(OutDirError::LockReplaced {
            dir: dir.to_path_buf(),
            lock_file: path,
        })
    }
}

/// Removes the lock file of every folder this process holds, for a process about to exit
/// without running its destructors (a second Ctrl-C): the locks themselves go with the
/// process, and no lock file is left behind. Holding the locks, it removes only its own files.
pub fn remove_held_lock_files() {
    for folder in held().iter() {
        let _ = std::fs::remove_file(folder.join(LOCK_FILE));
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
        if let Some(c) = &self.canonical {
            let mut held = held();
            if let Some(i) = held.iter().position(|h| h == c) {
                held.swap_remove(i);
            }
        }
        // Removed while held, then released when the file closes.
        let _ = std::fs::remove_file(&self.path);
        let _ = self.file.unlock();
    }
}

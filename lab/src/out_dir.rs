//! A run's results folder: which one, made ready before any work (created, writable, locked
//! for this run, temporary files of a killed run removed), and removed again when a run that
//! created it fails before writing anything.

use std::path::{Path, PathBuf};

use lblab_message::setting::{Named, Names, Setting};
use lblab_record::layout::Layout;

/// The run folder of `command` for the scenario file `file`: `out` if given, else the scratch
/// folder ([`Layout::scratch`]), which git ignores, so ad-hoc runs never overwrite the committed
/// evidence in `results/` (the evidence scripts write there with `--out`).
pub fn results_dir(file: &Path, command: &str, out: Option<&Path>) -> PathBuf {
    match out {
        Some(dir) => dir.to_path_buf(),
        None => Layout::scratch(file).run(command),
    }
}

/// Extensions of the files lblab writes into a results folder; a `.<name>.tmp` left by a run
/// killed while writing one of them is lblab's, any other is not touched.
const OWN_EXTENSIONS: &[&str] = &[".csv", ".json", ".hlog", ".hgrm", ".png", ".svg", ".html"];

/// Creates the results folder before any work starts and checks that a file can be written in
/// it, so a bad results folder (a file, a folder that cannot be created, a read-only folder, `/proc`)
/// fails at once rather than after a long run whose results would then be lost. Files inside
/// are named by the program (policy labels go through `lblab_record::file_stem`), so nothing is
/// written outside it.
pub fn prepare_dir(dir: &Path) -> Result<OutDir, OutDirError> {
    // The folders this run makes, deepest first: on failure each is removed again while empty.
    let created: Vec<PathBuf> = dir
        .ancestors()
        .take_while(|d| !d.as_os_str().is_empty() && !d.exists())
        .map(Path::to_path_buf)
        .collect();
    // A symbolic link whose target does not exist: `exists()` says no, and creating the folder
    // then fails with "File exists".
    if let (Ok(meta), false) = (dir.symlink_metadata(), dir.exists()) {
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(dir).unwrap_or_default();
            return Err(OutDirError::DanglingLink {
                dir: dir.to_path_buf(),
                target,
            });
        }
    }
    if dir.exists() && !dir.is_dir() {
        return Err(OutDirError::NotAFolder {
            dir: dir.to_path_buf(),
        });
    }
    std::fs::create_dir_all(dir).map_err(|source| OutDirError::Create {
        dir: dir.to_path_buf(),
        source,
    })?;
    // One writer per folder: taken before anything in it is touched (another run's temporary
    // files included), held until the guard is dropped.
    let lock = match crate::lock::FolderLock::acquire(dir) {
        Ok(lock) => lock,
        Err(e) => {
            drop(OutDir {
                lock: None,
                created,
            });
            return Err(e);
        }
    };
    let guard = OutDir {
        lock: Some(lock),
        created,
    };
    let probe = dir.join(format!(".lblab-write-probe-{}.tmp", std::process::id()));
    let probed = std::fs::write(&probe, b"probe");
    // Written or not (a full disk creates the file, then refuses its bytes), it goes again.
    let removed = std::fs::remove_file(&probe);
    probed
        .and(removed)
        .map_err(|source| OutDirError::Unwritable {
            dir: dir.to_path_buf(),
            source,
        })?;
    // A run killed outright (SIGKILL) while writing can leave a temporary file behind: remove
    // those, and only those: `.<name>.tmp` where `<name>` is a file lblab writes.
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let name = e.file_name();
            let name = name.to_string_lossy();
            let own = name
                .strip_prefix('.')
                .and_then(|n| n.strip_suffix(".tmp"))
                .is_some_and(|inner| OWN_EXTENSIONS.iter().any(|x| inner.ends_with(x)));
            if own && e.path().is_file() {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    Ok(guard)
}

/// A results folder [`prepare_dir`] made ready and locked for this run
/// ([`crate::lock::FolderLock`]: a second run into it is refused). Hold it for the whole run:
/// when it is dropped, the lock is released and its file removed, a folder this run created and
/// left empty (the run failed before writing anything) is removed, and so are the parents it
/// created for it (`lblab-out/<scenario>/`), so a failure leaves no empty folder behind. A folder
/// with anything in it is kept.
#[must_use = "hold the guard until the run has written its results"]
pub struct OutDir {
    lock: Option<crate::lock::FolderLock>,
    /// Deepest first.
    created: Vec<PathBuf>,
}

impl Drop for OutDir {
    fn drop(&mut self) {
        drop(self.lock.take());
        for dir in &self.created {
            // remove_dir only removes an empty folder; a parent with content stops the walk.
            if std::fs::remove_dir(dir).is_err() {
                break;
            }
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

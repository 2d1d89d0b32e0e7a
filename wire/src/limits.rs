//! The process's limits a real run depends on.

/// A run needs more open files than the process may have.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "this run needs about {needed} open files (sockets) and the process may have at most {allowed} \
     (`ulimit -n`); use fewer backends or clients, or raise the limit"
)]
pub struct OpenFilesError {
    /// The file descriptors the run needs.
    pub needed: u64,
    /// The hard limit.
    pub allowed: u64,
}

/// Makes sure the process may open `needed` file descriptors (sockets: a listener per backend
/// and a connection per client and backend): raises the soft limit up to the hard one if that is
/// enough, and otherwise says how many the run needs and how many it may have, instead of the run
/// failing half-way with "Too many open files".
pub fn ensure_open_files(needed: u64) -> Result<(), OpenFilesError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(()); // cannot tell: let the run try
    }
    if needed <= lim.rlim_cur {
        return Ok(());
    }
    if needed <= lim.rlim_max {
        let raised = libc::rlimit {
            rlim_cur: needed.max(lim.rlim_cur),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct we pass.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            return Ok(());
        }
    }
    Err(OpenFilesError {
        needed,
        allowed: lim.rlim_max,
    })
}

//! The stop flag: the first Ctrl-C / SIGTERM sets it (the running job stops and writes what it
//! measured), a second one exits at once.

/// Set by the first Ctrl-C / SIGTERM once [`stop_flag`] installed its handler.
pub static STOP: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Installs a Ctrl-C / SIGTERM handler that sets the returned flag. A second signal exits at once.
pub fn stop_flag() -> &'static std::sync::atomic::AtomicBool {
    stop_flag_saying("stopping and writing the results measured so far")
}

/// [`stop_flag`] for a command that writes no results (`backend`): the first signal says
/// `doing` ("stopping the fleet") instead of promising results.
pub fn stop_flag_saying(doing: &'static str) -> &'static std::sync::atomic::AtomicBool {
    use std::sync::atomic::Ordering;
    static DOING: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    let _ = DOING.set(doing);
    let _ = ctrlc::set_handler(|| {
        if STOP.swap(true, Ordering::SeqCst) {
            // Exits without the destructors that would remove the results folders' lock files.
            lblab_lab::lock::remove_held_lock_files();
            std::process::exit(130);
        }
        let doing = DOING.get().copied().unwrap_or("stopping");
        lblab_lab::errln!("\ninterrupted: {doing} (again to quit at once)");
    });
    &STOP
}

/// For a command that writes nothing (`report --check`): a Ctrl-C / SIGTERM ends it at once
/// with 130, also where the signal was ignored when it started (a shell's background job). The
/// returned flag is never set.
pub fn exit_on_stop() -> &'static std::sync::atomic::AtomicBool {
    let _ = ctrlc::set_handler(|| std::process::exit(130));
    &STOP
}

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
            std::process::exit(130);
        }
        let doing = DOING.get().copied().unwrap_or("stopping");
        eprintln!("\ninterrupted: {doing} (again to quit at once)");
    });
    &STOP
}

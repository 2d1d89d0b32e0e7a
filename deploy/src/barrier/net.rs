//! The start barrier over TCP: the starter ([`serve`]) and a pod's check-in ([`join`]).
//!
//! The starter takes connections on a thread of its own and reads each check-in on a thread per
//! connection (which then waits for the connection to close, so that a pod that leaves before
//! the release no longer counts); its own thread runs the [`Barrier`] and sends the answers.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::wire::{self, MAX_ANSWER_LINE, MAX_JOIN_LINE};
use super::{Answer, Barrier, BarrierError, Conn, Outcome, Plan, PodId};

/// What the connections' threads tell the starter's.
enum Event {
    /// A pod checked in on a connection (a clone of it, to answer on).
    Join(Conn, PodId, TcpStream),
    /// A connection closed.
    Leave(Conn),
}

/// How long a connection may take to send its check-in line.
const JOIN_READ_TIMEOUT: Duration = Duration::from_secs(10);
/// How long an answer may take to be written.
const ANSWER_WRITE_TIMEOUT: Duration = Duration::from_secs(2);
/// How often the accepting thread looks for a new connection (and for the end).
const ACCEPT_POLL: Duration = Duration::from_millis(20);
/// The stack of a connection's thread: it reads one short line.
const CONN_STACK: usize = 64 << 10;

/// Runs the starter of `plan` on `listener` until its work is done ([`Barrier::finished`]):
/// every pod checked in and was released, and the stay after the start is over (`Ok`, the
/// start), or the deadline passed first and the stay after it is over ([`BarrierError::GaveUp`],
/// naming the missing pods). What happens is said, a line at a time, to `say`.
pub fn serve(
    listener: TcpListener,
    plan: Plan,
    say: &mut dyn FnMut(&str),
) -> Result<u64, BarrierError> {
    plan.check()?;
    listener.set_nonblocking(true)?;
    let expected = plan.expected();
    let max_conns = expected.saturating_mul(2).saturating_add(64);
    say(&format!(
        "start barrier on {}: waiting for {expected} pods ({}), the slots at Unix time {} at \
         the earliest",
        listener
            .local_addr()
            .map_or_else(|_| "?".into(), |a| a.to_string()),
        plan.groups_text(),
        plan.not_before
    ));
    let (tx, rx) = mpsc::channel();
    let stop = Arc::new(AtomicBool::new(false));
    let open = Arc::new(AtomicUsize::new(0));
    let acceptor = {
        let (stop, open) = (stop.clone(), open.clone());
        std::thread::Builder::new()
            .name("barrier-accept".into())
            .spawn(move || accept(listener, tx, &stop, &open, max_conns))?
    };
    let mut barrier = Barrier::new(plan);
    let mut held: std::collections::HashMap<Conn, TcpStream> = Default::default();
    let mut said_outcome = false;
    loop {
        let now = SystemTime::now();
        let answers = barrier.on_timer(now);
        send(&mut held, answers);
        if !said_outcome {
            if let Some(outcome) = barrier.outcome() {
                say(&outcome_line(outcome, barrier.plan(), now));
                said_outcome = true;
            }
        }
        if barrier.finished(now) {
            break;
        }
        let wait = barrier
            .next_timer()
            .duration_since(now)
            .unwrap_or_default()
            .clamp(Duration::from_millis(1), Duration::from_secs(1));
        match rx.recv_timeout(wait) {
            Ok(Event::Join(conn, id, stream)) => {
                held.insert(conn, stream);
                let before = barrier.outcome().is_some();
                let answers = barrier.on_join(SystemTime::now(), conn, id.clone());
                match (before, answers.first()) {
                    (_, Some((_, Answer::Unknown(_)))) => say(&format!(
                        "{id} checked in, but is not a pod this barrier waits for"
                    )),
                    (true, _) => say(&format!("{id} checked in after the barrier ended: told so")),
                    (false, _) => say(&format!(
                        "{id} checked in ({} of {expected})",
                        if barrier.outcome().is_some() {
                            expected
                        } else {
                            barrier.waiting()
                        }
                    )),
                }
                send(&mut held, answers);
            }
            Ok(Event::Leave(conn)) => {
                if held.remove(&conn).is_some() {
                    let before = barrier.waiting();
                    barrier.on_leave(conn);
                    if barrier.waiting() < before {
                        say(&format!(
                            "a pod left before the release ({} of {expected} checked in)",
                            barrier.waiting()
                        ));
                    }
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // The acceptor ended (it cannot take connections): the timers still run.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                std::thread::sleep(wait);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    for stream in held.values() {
        let _ = stream.shutdown(Shutdown::Both);
    }
    let _ = acceptor.join();
    match barrier.outcome() {
        Some(Outcome::Released { start, .. }) => Ok(*start),
        Some(Outcome::GaveUp { missing, .. }) => Err(BarrierError::GaveUp {
            missing: missing.clone(),
            expected,
        }),
        None => unreachable!("a finished barrier has an outcome"),
    }
}

/// What the starter says when it ends.
fn outcome_line(outcome: &Outcome, plan: &Plan, now: SystemTime) -> String {
    let unix = now.duration_since(UNIX_EPOCH).unwrap_or_default().as_secs();
    match outcome {
        Outcome::Released { start, .. } => format!(
            "released: all {} pods checked in; the slots start at Unix time {start} (in {} s)",
            plan.expected(),
            start.saturating_sub(unix)
        ),
        Outcome::GaveUp { missing, .. } => format!(
            "gave up at Unix time {unix}, its deadline ({} s after the earliest start, {}): {} of \
             {} pods had not checked in: {}",
            plan.give_up_at
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_secs()
                .saturating_sub(plan.not_before),
            plan.not_before,
            missing.len(),
            plan.expected(),
            super::list(missing)
        ),
    }
}

/// Writes each answer on its connection and closes the connection's sending side.
fn send(held: &mut std::collections::HashMap<Conn, TcpStream>, answers: Vec<(Conn, Answer)>) {
    for (conn, answer) in answers {
        if let Some(mut stream) = held.remove(&conn) {
            let _ = stream.set_write_timeout(Some(ANSWER_WRITE_TIMEOUT));
            let _ = stream.write_all(wire::answer_line(&answer).as_bytes());
            let _ = stream.shutdown(Shutdown::Write);
        }
    }
}

/// Takes connections until `stop`, each read on a thread of its own (at most `max_conns` open
/// at once: more are told the starter is busy).
fn accept(
    listener: TcpListener,
    tx: mpsc::Sender<Event>,
    stop: &AtomicBool,
    open: &Arc<AtomicUsize>,
    max_conns: usize,
) {
    let mut next: Conn = 0;
    while !stop.load(Ordering::Relaxed) {
        let mut stream = match listener.accept() {
            Ok((stream, _)) => stream,
            Err(_) => {
                std::thread::sleep(ACCEPT_POLL);
                continue;
            }
        };
        if stream.set_nonblocking(false).is_err() {
            continue;
        }
        if open.load(Ordering::Relaxed) >= max_conns {
            let _ = stream.set_write_timeout(Some(ANSWER_WRITE_TIMEOUT));
            let _ = stream.write_all(b"error busy: too many connections\n");
            continue;
        }
        let conn = next;
        next += 1;
        open.fetch_add(1, Ordering::Relaxed);
        let (tx, open) = (tx.clone(), open.clone());
        let spawned = std::thread::Builder::new()
            .name("barrier-conn".into())
            .stack_size(CONN_STACK)
            .spawn(move || {
                read_conn(conn, stream, &tx);
                open.fetch_sub(1, Ordering::Relaxed);
            });
        if spawned.is_err() {
            // No thread for it: the connection is dropped, and the pod checks in again.
            continue;
        }
    }
}

/// Reads connection `conn`'s check-in and passes it on, then waits for it to close.
fn read_conn(conn: Conn, stream: TcpStream, tx: &mpsc::Sender<Event>) {
    let Ok(answer_to) = stream.try_clone() else {
        return;
    };
    let _ = stream.set_read_timeout(Some(JOIN_READ_TIMEOUT));
    let mut reader = BufReader::new(stream.take(MAX_JOIN_LINE as u64));
    let mut line = Vec::new();
    if reader.read_until(b'\n', &mut line).is_err() || !line.ends_with(b"\n") {
        return;
    }
    let id = match wire::parse_join(&String::from_utf8_lossy(&line)) {
        Ok(id) => id,
        Err(why) => {
            let mut s = answer_to;
            let _ = s.set_write_timeout(Some(ANSWER_WRITE_TIMEOUT));
            let _ = s.write_all(format!("error {why}\n").as_bytes());
            let _ = s.shutdown(Shutdown::Write);
            return;
        }
    };
    if tx.send(Event::Join(conn, id, answer_to)).is_err() {
        return;
    }
    // Whatever else it sends is ignored; its end (or an error) is the pod leaving.
    let mut stream = reader.into_inner().into_inner();
    let _ = stream.set_read_timeout(None);
    let mut sink = [0u8; 64];
    while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
    let _ = tx.send(Event::Leave(conn));
}

/// How long a pod waits between attempts to reach the starter.
const RETRY: Duration = Duration::from_secs(1);
/// How long one attempt to connect may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// How often a pod that cannot reach the starter says so.
const SAY_EVERY: Duration = Duration::from_secs(60);

/// Checks pod `id` in with the starter at `addr` (`host:port`, resolved at each attempt) and
/// waits for its answer: the common start, Unix seconds. Until `give_up_at` it tries again when
/// the name does not resolve, nobody listens or the connection closes before an answer (a
/// starter that restarted, a pod not yet ready); what it meets is said to `say` once a minute.
/// Told it came late, that the barrier gave up, or that it is not expected, it fails with that.
pub fn join(
    addr: &str,
    id: &PodId,
    give_up_at: SystemTime,
    say: &mut dyn FnMut(&str),
) -> Result<u64, BarrierError> {
    let mut last = String::from("no attempt");
    let mut said = SystemTime::now();
    loop {
        let now = SystemTime::now();
        let Ok(left) = give_up_at.duration_since(now) else {
            return Err(BarrierError::NoAnswer {
                addr: addr.to_string(),
                until: give_up_at
                    .duration_since(UNIX_EPOCH)
                    .unwrap_or_default()
                    .as_secs(),
                last,
            });
        };
        match attempt(addr, id, give_up_at, left) {
            Ok(answer) => return answer_result(addr, id, answer),
            Err(Attempt::Failed(e)) => return Err(e),
            Err(Attempt::Again(why)) => last = why,
        }
        if now.duration_since(said).unwrap_or_default() >= SAY_EVERY {
            say(&format!("{id}: still no answer from {addr} ({last})"));
            said = now;
        }
        std::thread::sleep(RETRY.min(give_up_at.duration_since(now).unwrap_or_default()));
    }
}

/// Why an attempt to check in gave no answer.
enum Attempt {
    /// Worth another attempt: what it met.
    Again(String),
    /// Not: the starter's line was no answer.
    Failed(BarrierError),
}

/// One attempt: connect to `addr` within `left`, check in, wait for the answer until
/// `give_up_at`.
fn attempt(
    addr: &str,
    id: &PodId,
    give_up_at: SystemTime,
    left: Duration,
) -> Result<Answer, Attempt> {
    let addrs: Vec<_> = addr
        .to_socket_addrs()
        .map_err(|e| Attempt::Again(format!("{addr} does not resolve: {e}")))?
        .collect();
    let mut last = format!("{addr} resolves to no address");
    let mut stream = None;
    for a in addrs {
        match TcpStream::connect_timeout(
            &a,
            CONNECT_TIMEOUT.min(left).max(Duration::from_millis(1)),
        ) {
            Ok(s) => {
                stream = Some(s);
                break;
            }
            Err(e) => last = format!("connecting to {a}: {e}"),
        }
    }
    let mut stream = stream.ok_or(Attempt::Again(last))?;
    let again = |e: std::io::Error| Attempt::Again(format!("{addr}: {e}"));
    stream
        .write_all(wire::join_line(id).as_bytes())
        .map_err(again)?;
    let mut reader = BufReader::new(stream.take(MAX_ANSWER_LINE as u64));
    let mut line = Vec::new();
    loop {
        let left = give_up_at
            .duration_since(SystemTime::now())
            .map_err(|_| Attempt::Again(format!("{addr} had not answered yet")))?;
        reader
            .get_ref()
            .get_ref()
            .set_read_timeout(Some(
                left.clamp(Duration::from_millis(1), Duration::from_secs(60)),
            ))
            .map_err(again)?;
        match reader.read_until(b'\n', &mut line) {
            Ok(0) => {
                return Err(Attempt::Again(format!(
                    "{addr} closed the connection without an answer"
                )))
            }
            Ok(_) if line.ends_with(b"\n") => break,
            Ok(_) => {
                return Err(Attempt::Again(format!(
                    "{addr} closed the connection in the middle of an answer"
                )))
            }
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) => {}
            Err(e) => return Err(again(e)),
        }
    }
    wire::parse_answer(addr, &String::from_utf8_lossy(&line)).map_err(Attempt::Failed)
}

/// The start an answer gives pod `id`, or the error it is.
fn answer_result(addr: &str, id: &PodId, answer: Answer) -> Result<u64, BarrierError> {
    match answer {
        Answer::Start(start) => Ok(start),
        Answer::Late(start) => Err(BarrierError::Late {
            id: id.clone(),
            start,
        }),
        Answer::GaveUp { missing, expected } => Err(BarrierError::GaveUp { missing, expected }),
        Answer::Unknown(expected) => Err(BarrierError::Unknown {
            addr: addr.to_string(),
            id: id.clone(),
            expected,
        }),
    }
}

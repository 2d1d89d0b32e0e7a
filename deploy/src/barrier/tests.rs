//! The start barrier: its decisions without a clock, and the starter and pods over loopback TCP.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::*;

fn id(text: &str) -> PodId {
    text.parse().unwrap()
}

fn groups(text: &[&str]) -> Vec<Group> {
    text.iter().map(|g| g.parse().unwrap()).collect()
}

fn unix(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).unwrap().as_secs()
}

/// A plan for `groups`, not before `not_before`, giving up `give_up` from now, no margin unless
/// set, staying `linger` after.
fn plan(groups_: &[&str], not_before: u64, give_up: Duration, linger: Duration) -> Plan {
    Plan {
        groups: groups(groups_),
        not_before,
        margin: Duration::ZERO,
        give_up_at: SystemTime::now() + give_up,
        linger,
    }
}

#[test]
fn ids_and_groups_parse_and_lists_collapse_runs() {
    assert_eq!(
        id("fleet-12"),
        PodId {
            group: "fleet".into(),
            index: 12
        }
    );
    for bad in [
        "fleet",
        "-3",
        "Fleet-3",
        "fleet-",
        "fleet-03",
        "fleet-+3",
        "a b-1",
        "fleet-1234567",
    ] {
        assert!(bad.parse::<PodId>().is_err(), "{bad}");
    }
    assert_eq!(
        "loadgen=2".parse::<Group>().unwrap(),
        Group {
            name: "loadgen".into(),
            count: 2
        }
    );
    for bad in [
        "fleet",
        "fleet=0",
        "fleet=-1",
        "=3",
        "fleet=100001",
        "Fleet=2",
        "a-b=2",
    ] {
        assert!(bad.parse::<Group>().is_err(), "{bad}");
    }
    let ids: Vec<PodId> = [
        "fleet-4",
        "fleet-0",
        "fleet-1",
        "fleet-2",
        "loadgen-1",
        "fleet-6",
        "fleet-7",
    ]
    .iter()
    .map(|s| id(s))
    .collect();
    assert_eq!(
        list(&ids),
        "fleet-0 to fleet-2, fleet-4, fleet-6, fleet-7, loadgen-1"
    );
}

#[test]
fn the_start_is_the_wall_clock_one_unless_the_last_pod_comes_within_the_margin() {
    let t0 = UNIX_EPOCH + Duration::from_secs(1_000);
    let mut p = plan(
        &["fleet=2", "loadgen=1"],
        1_100,
        Duration::from_secs(600),
        Duration::ZERO,
    );
    p.margin = Duration::from_secs(30);
    p.give_up_at = t0 + Duration::from_secs(700);
    // Everyone in well before 1,100: the start is 1,100.
    let mut b = Barrier::new(p.clone());
    assert!(b.on_join(t0, 1, id("fleet-0")).is_empty());
    assert!(b.on_join(t0, 2, id("fleet-1")).is_empty());
    let answers = b.on_join(t0 + Duration::from_secs(5), 3, id("loadgen-0"));
    assert_eq!(answers.len(), 3);
    assert!(answers.iter().all(|(_, a)| *a == Answer::Start(1_100)));
    // The last one at 1,080.5: the start moves to 30 s after it, a whole second.
    let mut b = Barrier::new(p.clone());
    b.on_join(t0, 1, id("fleet-0"));
    b.on_join(t0, 2, id("fleet-1"));
    let late_pull = t0 + Duration::from_millis(80_500);
    let answers = b.on_join(late_pull, 3, id("loadgen-0"));
    assert!(
        answers.iter().all(|(_, a)| *a == Answer::Start(1_111)),
        "{answers:?}"
    );
    // Afterwards: late, or not one of the pods.
    assert_eq!(
        b.on_join(late_pull, 4, id("fleet-1")),
        [(4, Answer::Late(1_111))]
    );
    assert_eq!(
        b.on_join(late_pull, 5, id("fleet-2")),
        [(5, Answer::Unknown("fleet=2, loadgen=1".into()))]
    );
    assert!(!b.finished(late_pull));
    assert!(b.finished(UNIX_EPOCH + Duration::from_secs(1_111)));
    // A pod that left before the release does not count; at the deadline the missing are named.
    let mut b = Barrier::new(p);
    b.on_join(t0, 1, id("fleet-0"));
    b.on_join(t0, 2, id("fleet-1"));
    b.on_leave(1);
    assert_eq!(b.waiting(), 1);
    assert!(b.on_timer(t0 + Duration::from_secs(699)).is_empty());
    let answers = b.on_timer(t0 + Duration::from_secs(700));
    let gave_up = Answer::GaveUp {
        missing: vec![id("fleet-0"), id("loadgen-0")],
        expected: 3,
    };
    assert_eq!(answers, [(2, gave_up.clone())]);
    assert_eq!(
        b.on_join(t0 + Duration::from_secs(701), 6, id("loadgen-0")),
        [(6, gave_up)]
    );
}

#[test]
fn answers_cross_the_wire_as_they_were() {
    for answer in [
        Answer::Start(1_800_000_000),
        Answer::Late(7),
        Answer::GaveUp {
            missing: vec![id("fleet-3"), id("loadgen-0")],
            expected: 22,
        },
        Answer::GaveUp {
            missing: vec![],
            expected: 1,
        },
        Answer::Unknown("fleet=20, loadgen=2".into()),
    ] {
        let line = wire::answer_line(&answer);
        assert!(line.ends_with('\n') && !line[..line.len() - 1].contains('\n'));
        assert_eq!(wire::parse_answer("s", &line).unwrap(), answer);
    }
    assert_eq!(
        wire::parse_join(&wire::join_line(&id("fleet-3"))),
        Ok(id("fleet-3"))
    );
    assert!(wire::parse_join("GET / HTTP/1.1\r\n").is_err());
    assert!(wire::parse_join("lblab-barrier/1 join fleet-3 extra\n").is_err());
    assert!(matches!(
        wire::parse_answer("s", "error busy\n"),
        Err(BarrierError::Refused { .. })
    ));
    assert!(matches!(
        wire::parse_answer("s", "HTTP/1.1 400\n"),
        Err(BarrierError::Protocol { .. })
    ));
}

/// A starter's end: what it returned and the lines it said.
type Ended = (Result<u64, BarrierError>, Vec<String>);

/// A starter of `plan` on a loopback port, on a thread: its address and its end.
fn starter(plan: Plan) -> (String, JoinHandle<Ended>) {
    let (addr, handle, _) = starter_saying(plan);
    (addr, handle)
}

/// [`starter`], and the lines it says as it says them.
fn starter_saying(plan: Plan) -> (String, JoinHandle<Ended>, std::sync::mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let mut said = Vec::new();
        let result = serve(listener, plan, &mut |line| {
            let _ = tx.send(line.to_string());
            said.push(line.to_string());
        });
        (result, said)
    });
    (addr, handle, rx)
}

/// Waits (at most 10 s) until the starter has said `line`.
fn wait_for_line(said: &std::sync::mpsc::Receiver<String>, line: &str) {
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match said.recv_timeout(left) {
            Ok(l) if l == line => return,
            Ok(_) => {}
            Err(e) => panic!("the starter did not say {line:?}: {e}"),
        }
    }
}

/// Pod `who` checking in at `addr` on a thread, giving up `within` from now.
fn pod(addr: &str, who: &str, within: Duration) -> JoinHandle<Result<u64, BarrierError>> {
    let (addr, who) = (addr.to_string(), id(who));
    std::thread::spawn(move || join(&addr, &who, SystemTime::now() + within, &mut |_| {}))
}

#[test]
fn every_pod_is_released_with_one_start_once_all_have_checked_in() {
    let now = unix(SystemTime::now());
    let (addr, starter) = starter(plan(
        &["fleet=2", "loadgen=1"],
        now,
        Duration::from_secs(20),
        Duration::ZERO,
    ));
    let early = [
        pod(&addr, "fleet-1", Duration::from_secs(20)),
        pod(&addr, "loadgen-0", Duration::from_secs(20)),
    ];
    std::thread::sleep(Duration::from_millis(400));
    assert!(
        early.iter().all(|p| !p.is_finished()),
        "released before every pod was in"
    );
    let last = pod(&addr, "fleet-0", Duration::from_secs(20));
    let starts: Vec<u64> = early
        .into_iter()
        .chain([last])
        .map(|p| p.join().unwrap().unwrap())
        .collect();
    assert!(starts[0] >= now, "{starts:?}");
    assert!(starts.iter().all(|s| *s == starts[0]), "{starts:?}");
    let (result, said) = starter.join().unwrap();
    assert_eq!(result.unwrap(), starts[0]);
    assert!(
        said.iter().any(|l| l.starts_with("released: all 3 pods")),
        "{said:?}"
    );
}

#[test]
fn at_the_deadline_every_waiting_pod_hears_who_is_missing() {
    let now = unix(SystemTime::now());
    let (addr, starter) = starter(plan(
        &["fleet=3", "loadgen=1"],
        now,
        Duration::from_secs(2),
        Duration::from_millis(300),
    ));
    let pods = [
        pod(&addr, "fleet-0", Duration::from_secs(10)),
        pod(&addr, "loadgen-0", Duration::from_secs(10)),
    ];
    for p in pods {
        let e = p.join().unwrap().unwrap_err();
        assert!(
            matches!(&e, BarrierError::GaveUp { missing, expected: 4 } if *missing == [id("fleet-1"), id("fleet-2")]),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "the start barrier gave up: 2 of 4 pods had not checked in: fleet-1, fleet-2"
        );
    }
    let (result, said) = starter.join().unwrap();
    assert!(matches!(result, Err(BarrierError::GaveUp { .. })));
    assert!(
        said.iter()
            .any(|l| l.contains("2 of 4 pods had not checked in: fleet-1, fleet-2")),
        "{said:?}"
    );
}

#[test]
fn a_pod_after_the_release_is_refused_and_strangers_are_told_so() {
    let now = unix(SystemTime::now());
    let (addr, starter) = starter(plan(
        &["fleet=1"],
        now,
        Duration::from_secs(20),
        Duration::from_secs(5),
    ));
    let start = pod(&addr, "fleet-0", Duration::from_secs(20))
        .join()
        .unwrap()
        .unwrap();
    let late = pod(&addr, "fleet-0", Duration::from_secs(5))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(late, BarrierError::Late { start: s, .. } if s == start),
        "{late:?}"
    );
    assert!(
        late.to_string()
            .contains("fleet-0 checked in after the start barrier had released"),
        "{late}"
    );
    let stranger = pod(&addr, "loadgen-0", Duration::from_secs(5))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(
        stranger
            .to_string()
            .contains("does not wait for loadgen-0 (it waits for fleet=1)"),
        "{stranger}"
    );
    // A line that is not a check-in is answered with an error, not held.
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut answer = String::new();
    s.read_to_string(&mut answer).unwrap();
    assert!(
        answer.starts_with("error expected 'lblab-barrier/1 join"),
        "{answer}"
    );
    let (result, _) = starter.join().unwrap();
    assert_eq!(result.unwrap(), start);
}

#[test]
fn a_pod_that_leaves_before_the_release_no_longer_counts() {
    let now = unix(SystemTime::now());
    let (addr, starter, said) = starter_saying(plan(
        &["fleet=2"],
        now,
        Duration::from_secs(5),
        Duration::ZERO,
    ));
    {
        let mut gone = TcpStream::connect(&addr).unwrap();
        gone.write_all(wire::join_line(&id("fleet-0")).as_bytes())
            .unwrap();
        wait_for_line(&said, "fleet-0 checked in (1 of 2)");
    }
    wait_for_line(&said, "a pod left before the release (0 of 2 checked in)");
    let e = pod(&addr, "fleet-1", Duration::from_secs(10))
        .join()
        .unwrap()
        .unwrap_err();
    assert!(
        matches!(&e, BarrierError::GaveUp { missing, .. } if *missing == [id("fleet-0")]),
        "{e:?}"
    );
    assert!(starter.join().unwrap().0.is_err());
}

#[test]
fn a_pod_waits_for_a_starter_that_comes_later_and_gives_up_on_one_that_never_does() {
    // A port nobody listens on, for now.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let e = join(
        &addr,
        &id("fleet-0"),
        SystemTime::now() + Duration::from_millis(1200),
        &mut |_| {},
    )
    .unwrap_err();
    assert!(
        matches!(&e, BarrierError::NoAnswer { addr: a, .. } if *a == addr),
        "{e:?}"
    );
    assert!(
        e.to_string()
            .starts_with(&format!("no start barrier answered at {addr} by Unix time")),
        "{e}"
    );
    let waiting = pod(&addr, "fleet-0", Duration::from_secs(20));
    std::thread::sleep(Duration::from_millis(1500));
    assert!(!waiting.is_finished());
    let listener = TcpListener::bind(&addr).unwrap();
    let now = unix(SystemTime::now());
    let p = plan(&["fleet=1"], now, Duration::from_secs(20), Duration::ZERO);
    let starter = std::thread::spawn(move || serve(listener, p, &mut |_| {}));
    let start = waiting.join().unwrap().unwrap();
    assert_eq!(starter.join().unwrap().unwrap(), start);
}

#[test]
fn a_starter_refuses_groups_named_twice() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let p = plan(
        &["fleet=1", "fleet=2"],
        0,
        Duration::from_secs(1),
        Duration::ZERO,
    );
    let e = serve(listener, p, &mut |_| {}).unwrap_err();
    assert!(e.to_string().contains("[fleet=1, fleet=2]"), "{e}");
}

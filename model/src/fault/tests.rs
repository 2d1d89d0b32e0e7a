//! The fault timeline's unit tests.

use super::*;

const MS: Nanos = 1_000_000;

fn dur(ms: u64) -> Dur {
    Dur(ms * MS)
}

#[test]
fn a_method_slowdown_multiplies_only_its_methods_work_inside_its_window() {
    let methods = Methods::check(&[
        crate::method::MethodSpec {
            name: "light".into(),
            share: 9.0,
            factor: 1.0,
        },
        crate::method::MethodSpec {
            name: "heavy".into(),
            share: 1.0,
            factor: 10.0,
        },
    ])
    .unwrap();
    let f = FaultSpec::Slowdown {
        targets: vec![],
        factor: 5.0,
        methods: vec!["heavy".into()],
        start: dur(100),
        end: Some(dur(200)),
    };
    let t = Timeline::new(&[&f], 1, 1000 * MS, &methods);
    // The speed of the backend is untouched: light calls and calls outside the window too.
    assert_eq!(t.finish_time(150 * MS, 2 * MS), 152 * MS);
    assert_eq!(t.method_factor(150 * MS, 1), 5.0);
    assert_eq!(t.method_factor(150 * MS, 0), 1.0);
    assert_eq!(t.method_factor(250 * MS, 1), 1.0);
    assert_eq!(t.method_factor(50 * MS, 1), 1.0);
    // It is still a fault window, for the slow share.
    assert!(t.faulty_at(150 * MS));
}

#[test]
fn slowdown_stretches_work_inside_its_window_only() {
    let f = FaultSpec::Slowdown {
        targets: vec![],
        factor: 10.0,
        methods: vec![],
        start: dur(100),
        end: Some(dur(200)),
    };
    let t = Timeline::new(&[&f], 1, 1000 * MS, &Methods::default());
    assert_eq!(t.method_factor(150 * MS, 0), 1.0);
    assert_eq!(t.finish_time(0, 2 * MS), 2 * MS);
    assert_eq!(t.finish_time(100 * MS, 2 * MS), 120 * MS);
    // Finishes before the window opens: unaffected.
    assert_eq!(t.finish_time(95 * MS, 2 * MS), 97 * MS);
    // Straddles the end: from 195ms, 5ms at speed 0.1 = 0.5ms of work, then 1.5ms at speed 1.
    assert_eq!(t.finish_time(195 * MS, 2 * MS), 201 * MS + MS / 2);
}

#[test]
fn gc_pause_stops_work() {
    let f = FaultSpec::GcPauses {
        targets: vec![],
        every: dur(1000),
        pause: dur(50),
        start: Dur(0),
        end: None,
    };
    let t = Timeline::new(&[&f], 7, 10_000 * MS, &Methods::default());
    let Effect::Periodic { first, .. } = t.effects[0] else {
        panic!()
    };
    // A request starting at a pause start waits out the pause.
    assert_eq!(t.finish_time(first, 2 * MS), first + 52 * MS);
    assert!(t.faulty_at(first));
}

#[test]
fn throttle_runs_quota_per_period() {
    let f = FaultSpec::CpuThrottle {
        targets: vec![],
        quota: dur(20),
        period: dur(100),
        start: Dur(0),
        end: None,
    };
    let t = Timeline::new(&[&f], 1, 1000 * MS, &Methods::default());
    assert_eq!(t.finish_time(0, 10 * MS), 10 * MS);
    assert_eq!(t.finish_time(15 * MS, 10 * MS), 105 * MS);
}

#[test]
fn cold_start_fades() {
    let f = FaultSpec::ColdStart {
        targets: vec![],
        factor: 5.0,
        warmup: dur(1000),
        start: Dur(0),
    };
    let t = Timeline::new(&[&f], 1, 10_000 * MS, &Methods::default());
    let early = t.finish_time(0, MS);
    let late = t.finish_time(900 * MS, MS) - 900 * MS;
    assert!(early > 4 * MS && late < 2 * MS, "{early} {late}");
    assert_eq!(t.finish_time(2000 * MS, MS), 2001 * MS);
}

#[test]
fn crash_and_black_hole_windows() {
    let c = FaultSpec::Crash {
        targets: vec![],
        at: dur(100),
        restart_after: Some(dur(50)),
    };
    let b = FaultSpec::BlackHole {
        targets: vec![],
        start: dur(300),
        end: Some(dur(400)),
    };
    let t = Timeline::new(&[&c, &b], 1, 1000 * MS, &Methods::default());
    assert!(t.down_at(120 * MS) && !t.down_at(150 * MS));
    assert_eq!(
        t.availability_changes(),
        vec![(100 * MS, false), (150 * MS, true)]
    );
    assert!(t.black_hole_at(350 * MS) && !t.black_hole_at(400 * MS));
}

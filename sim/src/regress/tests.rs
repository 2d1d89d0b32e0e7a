use super::*;

fn sample(policy: &str, k: u64, p99: f64) -> Sample {
    Sample {
        scenario: "s".into(),
        policy: policy.into(),
        seed_index: k,
        seed: 1 + k,
        warmup_s: 1.0,
        duration_s: 4.0,
        p99_ms: p99,
        p999_ms: p99 * 2.0,
        error_share: 0.0,
        faulty_share: 0.01,
        // Seconds, and one run whose backend never came back.
        time_to_fair_s: if k == 9 { f64::INFINITY } else { k as f64 },
    }
}

fn runs(policy: &str, p99: impl Fn(u64) -> f64) -> Vec<Sample> {
    (0..10).map(|k| sample(policy, k, p99(k))).collect()
}

#[test]
fn identical_runs_change_nothing() {
    let base = runs("p", |k| 8.0 + k as f64 * 0.1);
    let c = compare(&base, &base, &Thresholds::default(), &Scope::default()).unwrap();
    assert_eq!(c.findings.len(), METRICS.len());
    assert!(c.findings.iter().all(|f| f.verdict == Verdict::Same));
}

#[test]
fn a_shift_on_every_seed_beyond_the_threshold_is_worse_and_its_mirror_better() {
    // Seeds vary by a whole millisecond; the change is +2 % on every one of them.
    let base = runs("p", |k| 8.0 + k as f64);
    let worse = runs("p", |k| (8.0 + k as f64) * 1.02);
    let c = compare(&base, &worse, &Thresholds::default(), &Scope::default()).unwrap();
    let p99 = &c.findings[0];
    assert_eq!((p99.metric, p99.verdict), (Metric::P99, Verdict::Worse));
    assert!((p99.relative() - 0.02).abs() < 0.005, "{p99:?}");
    let c = compare(&worse, &base, &Thresholds::default(), &Scope::default()).unwrap();
    assert_eq!(c.findings[0].verdict, Verdict::Better);
    assert_eq!(c.worse().count(), 0);
}

#[test]
fn a_shift_below_the_threshold_or_not_on_every_seed_is_not_a_regression() {
    let base = runs("p", |k| 8.0 + k as f64);
    let tiny = runs("p", |k| (8.0 + k as f64) * 1.005);
    let c = compare(&base, &tiny, &Thresholds::default(), &Scope::default()).unwrap();
    assert_eq!(c.worse().count(), 0, "{:?}", c.findings[0]);
    // Large, but one seed of ten went the other way: at 99 % that is inside the interval.
    let mixed = runs("p", |k| (8.0 + k as f64) * if k == 3 { 0.9 } else { 1.1 });
    let c = compare(&base, &mixed, &Thresholds::default(), &Scope::default()).unwrap();
    assert_eq!(c.findings[0].verdict, Verdict::Same);
}

#[test]
fn shares_have_an_absolute_threshold() {
    let base = runs("p", |_| 8.0);
    let mut now = base.clone();
    for s in &mut now {
        s.faulty_share += 0.0001; // below 0.0002
    }
    let c = compare(&base, &now, &Thresholds::default(), &Scope::default()).unwrap();
    assert_eq!(c.worse().count(), 0);
    for s in &mut now {
        s.faulty_share += 0.001;
    }
    let c = compare(&base, &now, &Thresholds::default(), &Scope::default()).unwrap();
    let f: Vec<_> = c.worse().map(|f| f.metric).collect();
    assert_eq!(f, [Metric::FaultyShare]);
}

#[test]
fn a_baseline_policy_not_run_or_other_seeds_are_refused_and_new_policies_reported() {
    let base = [runs("a", |_| 8.0), runs("b", |_| 8.0)].concat();
    let e = compare(
        &base,
        &runs("a", |_| 8.0),
        &Thresholds::default(),
        &Scope::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("s/b is in the baseline"), "{e}");
    let five: Vec<_> = runs("a", |_| 8.0).into_iter().take(5).collect();
    let e = compare(
        &five,
        &runs("a", |_| 8.0),
        &Thresholds::default(),
        &Scope::default(),
    )
    .unwrap_err();
    assert!(e.to_string().contains("seed indices"), "{e}");
    let e = compare(&five, &five, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(e.to_string().contains("run more seeds"), "{e}");
    let c = compare(
        &runs("a", |_| 8.0),
        &[runs("a", |_| 8.0), runs("c", |_| 8.0)].concat(),
        &Thresholds::default(),
        &Scope::default(),
    )
    .unwrap();
    assert_eq!(c.new, ["s/c"]);
}

#[test]
fn a_baseline_round_trips_and_a_bad_row_names_its_line() {
    let dir = std::env::temp_dir().join(format!("lblab-regress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("baseline.csv");
    let base = runs("p", |k| 8.0 + k as f64 / 3.0);
    write_baseline(&path, &base).unwrap();
    assert_eq!(read_baseline(&path, Setting::word).unwrap(), base);
    let mut text = std::fs::read_to_string(&path).unwrap();
    text = text.replacen("8.0,16.0", "8.0,fast", 1);
    std::fs::write(&path, text).unwrap();
    let e = read_baseline(&path, Setting::word).unwrap_err().to_string();
    assert!(e.contains("baseline.csv:2:"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn nothing_compared_is_an_error_not_a_pass() {
    let base = runs("a", |_| 8.0);
    let renamed: Vec<_> = runs("a", |_| 8.0)
        .into_iter()
        .map(|s| Sample {
            scenario: "t".into(),
            ..s
        })
        .collect();
    let e = compare(&base, &renamed, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(e.to_string().contains("nothing to compare"), "{e}");
    assert!(e.to_string().contains("holds the scenarios s"), "{e}");
}

#[test]
fn a_figure_that_is_not_a_number_now_is_an_error_not_unchanged() {
    let base = runs("a", |_| 8.0);
    let mut now = base.clone();
    now[4].p999_ms = f64::NAN;
    let e = compare(&base, &now, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("p999_ms is 16 in the baseline and NaN now"),
        "{e}"
    );
    let mut now = base.clone();
    now[2].time_to_fair_s = f64::NAN;
    let e = compare(&base, &now, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(e.to_string().contains("a fault ends within one run"), "{e}");
}

#[test]
fn another_seed_warm_up_or_duration_is_refused_unless_other_seeds_are_meant() {
    let base = runs("a", |_| 8.0);
    let shifted: Vec<_> = base
        .iter()
        .map(|s| Sample {
            seed: s.seed + 5,
            ..s.clone()
        })
        .collect();
    let e = compare(&base, &shifted, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(e.to_string().contains("`seed` changed"), "{e}");
    let offset = Scope {
        other_seeds: true,
        ..Scope::default()
    };
    assert!(compare(&base, &shifted, &Thresholds::default(), &offset).is_ok());
    let shorter: Vec<_> = base
        .iter()
        .map(|s| Sample {
            duration_s: 3.0,
            ..s.clone()
        })
        .collect();
    let e = compare(&base, &shorter, &Thresholds::default(), &Scope::default()).unwrap_err();
    assert!(
        e.to_string()
            .contains("measured 4 s after a warm-up of 1 s, this run 3 s"),
        "{e}"
    );
}

#[test]
fn a_policy_left_out_on_purpose_is_not_missing() {
    let base = [runs("a", |_| 8.0), runs("b", |_| 8.0)].concat();
    let only = ["a".to_string()];
    let scope = Scope {
        policies: &only,
        ..Scope::default()
    };
    let c = compare(&base, &runs("a", |_| 8.0), &Thresholds::default(), &scope).unwrap();
    assert_eq!(c.findings.len(), METRICS.len());
}

#[test]
fn a_baseline_out_of_range_or_not_a_regular_file_is_refused() {
    let dir = std::env::temp_dir().join(format!("lblab-regress-range-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("baseline.csv");
    write_baseline(&path, &runs("p", |_| 8.0)).unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    for (from, to, says) in [
        (
            "1.0,4.0,8.0,16.0",
            "1.0,4.0,NaN,16.0",
            "baseline.csv:2: `p99_ms` is NaN",
        ),
        ("1.0,4.0,8.0,16.0", "1.0,4.0,inf,16.0", "`p99_ms` is inf"),
        (
            "16.0,0.0,0.01",
            "16.0,0.0,1.5",
            "`faulty_share` is 1.5, not a share",
        ),
        ("1.0,4.0,8.0", "1.0,0.0,8.0", "`duration_s` is 0"),
    ] {
        assert!(text.contains(from), "{text}");
        std::fs::write(&path, text.replacen(from, to, 1)).unwrap();
        let e = read_baseline(&path, Setting::word).unwrap_err().to_string();
        assert!(e.contains(says), "{e}");
    }
    let old = text
        .replace(",warmup_s,duration_s", "")
        .replace(",1.0,4.0,", ",");
    std::fs::write(&path, old).unwrap();
    let e = read_baseline(&path, Setting::word).unwrap_err().to_string();
    assert!(e.contains("written by an older lblab"), "{e}");
    let e = read_baseline(&dir, Setting::word).unwrap_err().to_string();
    assert!(e.contains("not a regular file"), "{e}");
    #[cfg(unix)]
    {
        // A device that never ends, and a named pipe that nobody writes: refused at once.
        let e = read_baseline(Path::new("/dev/zero"), Setting::word)
            .unwrap_err()
            .to_string();
        assert!(e.contains("not a regular file"), "{e}");
        let fifo = dir.join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            let e = read_baseline(&fifo, Setting::word).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

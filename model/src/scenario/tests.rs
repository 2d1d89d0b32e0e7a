//! Tests of how a scenario file reads its values.

use crate::testing::ScenarioBuilder;

/// A scenario whose `workload.duration` is the TOML value `duration`, as written.
fn parse(duration: &str) -> Result<crate::Scenario, String> {
    ScenarioBuilder::new("t")
        .workload("duration", Some(duration))
        .build()
        .map_err(|e| e.to_string())
}

#[test]
fn a_date_or_a_bare_number_where_a_duration_belongs_says_what_to_write() {
    let e = parse("1979-05-27T07:32:00Z").unwrap_err();
    assert!(
        e.contains("workload.duration") && e.contains("not a duration") && e.contains("\"30s\""),
        "{e}"
    );
    let e = parse("30").unwrap_err();
    assert!(e.contains("no unit") && e.contains("\"30s\""), "{e}");
    let e = parse("2.5").unwrap_err();
    assert!(e.contains("no unit") && e.contains("\"2.5s\""), "{e}");
    assert!(parse("\"30s\"").is_ok());
}

#[test]
fn a_seed_past_tomls_integers_says_the_limit_and_where_a_larger_seed_goes() {
    let base =
        ScenarioBuilder::new("t").group("main", 2, r#"{ dist = "constant", value = "2ms" }"#, &[]);
    let e = base.clone().seed(u64::MAX).build().unwrap_err().to_string();
    assert!(
        e.contains("seed") && e.contains("9223372036854775807") && e.contains("command line"),
        "{e}"
    );
    assert!(!e.contains("target type"), "{e}");
    // The largest TOML integer is a seed like any other.
    let largest = base.seed(i64::MAX as u64).build().map(|s| s.file.seed);
    assert_eq!(largest.map_err(|e| e.to_string()), Ok(i64::MAX as u64));
}

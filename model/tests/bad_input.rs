//! Bad scenario files, one test per validation rule: each is rejected (never a panic) with a message
//! that names the field, its line where the text has one, and what would be valid.

use lblab_model::{FileError, Scenario};
use lblab_record::file_stem;

/// A valid scenario that every case below breaks in one place.
const BASE: &str = r#"name = "base"
seed = 3

[workload]
clients = 2
rate = 400
arrival = "poisson"
warmup = "1s"
duration = "3s"
deadline = "1s"
streaming_share = 0.0

[[fleet]]
name = "main"
count = 4
workers = 4
service_time = { dist = "lognormal", median = "2ms", p99 = "8ms" }

[[fleet]]
name = "slow"
count = 1
service_time = { dist = "constant", value = "2ms" }

[[faults]]
kind = "slowdown"
targets = ["slow"]
factor = 10
start = "1s"
end = "3s"

[[policies]]
name = "round_robin"
config = '{"loadBalancingConfig":[{"round_robin":{}}]}'

[[policies]]
name = "peak_ewma"
config = '''{"loadBalancingConfig":[
  {"peak_ewma_experimental":{"choiceCount":2}}]}'''
"#;

/// `BASE` with `from` replaced by `to` (which must change something).
fn with(from: &str, to: &str) -> String {
    assert!(BASE.contains(from), "BASE has no {from:?}");
    BASE.replacen(from, to, 1)
}

/// `BASE` with one more fault: `body` is the `[[faults]]` table's keys.
fn with_fault(body: &str) -> String {
    BASE.to_string() + "\n[[faults]]\n" + body
}

/// 1-based line of the first occurrence of `needle` in `text`.
fn line_of(text: &str, needle: &str) -> usize {
    let at = text
        .find(needle)
        .unwrap_or_else(|| panic!("{needle:?} not in the text"));
    text[..at].matches('\n').count() + 1
}

/// Asserts `text` is rejected naming `field`, at the line of `at` (if given), with every word of
/// `words` in the message. Returns the message.
#[track_caller]
fn rejects(text: &str, field: &str, at: Option<&str>, words: &[&str]) -> String {
    let err = match Scenario::parse(text) {
        Ok(_) => panic!("accepted, expected an error about `{field}`:\n{text}"),
        Err(e) => e,
    };
    let msg = err.to_string();
    assert_eq!(err.field(), Some(field), "wrong field in: {msg}");
    assert!(
        msg.contains(&format!("`{field}`")),
        "message does not name `{field}`: {msg}"
    );
    if let Some(needle) = at {
        let line = line_of(text, needle);
        assert_eq!(
            err.position().map(|p| p.0),
            Some(line),
            "wrong line in: {msg}"
        );
        assert!(
            msg.contains(&format!("line {line}, column")),
            "message has no line: {msg}"
        );
    }
    for w in words {
        assert!(msg.contains(w), "message lacks {w:?}: {msg}");
    }
    msg
}

/// Asserts, for each of `values`, that `BASE` with `line` replaced by `key = <value>` is rejected
/// as [`rejects`] checks: naming `field`, at that line, with every word of `words`.
#[track_caller]
fn rejects_values(line: &str, key: &str, values: &[&str], field: &str, words: &[&str]) {
    for v in values {
        let text = with(line, &format!("{key} = {v}"));
        rejects(&text, field, Some(&format!("{key} =")), words);
    }
}

#[test]
fn base_scenario_is_valid() {
    let s = Scenario::parse(BASE).expect("BASE is valid");
    assert_eq!(s.backends.len(), 5);
}

// ---- TOML and schema --------------------------------------------------------------------------

#[test]
fn toml_syntax_error_has_line_and_column() {
    let text = with("rate = 400", "rate = = 400");
    let err = Scenario::parse(&text).unwrap_err();
    assert!(matches!(err, FileError::Parse { .. }));
    assert_eq!(
        err.position().map(|p| p.0),
        Some(line_of(&text, "rate =")),
        "{err}"
    );
}

#[test]
fn unknown_field_is_rejected_not_ignored() {
    let text = with("rate = 400", "rate = 400\nrat = 5");
    rejects(
        &text,
        "workload.rat",
        Some("rat = 5"),
        &["unknown field", "rate"],
    );
}

#[test]
fn unknown_field_in_a_fault_is_rejected() {
    let text = with("factor = 10", "factor = 10\nfactr = 2");
    rejects(&text, "faults[0].factr", Some("factr"), &["unknown field"]);
}

#[test]
fn wrong_type_names_the_field() {
    let text = with("rate = 400", "rate = \"fast\"");
    rejects(&text, "workload.rate", Some("\"fast\""), &["f64"]);
}

#[test]
fn duration_without_unit_names_the_field() {
    let text = with("duration = \"3s\"", "duration = \"3\"");
    rejects(
        &text,
        "workload.duration",
        Some("duration = \"3\""),
        &["ms", "20s"],
    );
}

#[test]
fn duration_that_overflows_is_rejected() {
    for huge in ["1e30h", "9000h", "18446744073709551616ns"] {
        let text = with("deadline = \"1s\"", &format!("deadline = \"{huge}\""));
        rejects(&text, "workload.deadline", Some("deadline ="), &["8760h"]);
    }
}

#[test]
fn bad_duration_inside_a_fault_names_the_field() {
    let text = with("start = \"1s\"", "start = \"1x\"");
    rejects(
        &text,
        "faults[0].start",
        Some("start = \"1x\""),
        &["not a duration"],
    );
}

#[test]
fn bad_duration_inside_a_distribution_names_the_field() {
    let text = with("p99 = \"8ms\"", "p99 = \"8xs\"");
    rejects(
        &text,
        "fleet[0].service_time.p99",
        Some("service_time = { dist = \"lognormal\""),
        &["not a duration"],
    );
}

#[test]
fn negative_duration_is_rejected() {
    let text = with("warmup = \"1s\"", "warmup = \"-1s\"");
    rejects(&text, "workload.warmup", Some("warmup ="), &[">= 0"]);
}

#[test]
fn unknown_fault_kind_lists_the_kinds() {
    let text = with("kind = \"slowdown\"", "kind = \"slowness\"");
    let msg = Scenario::parse(&text).unwrap_err().to_string();
    assert!(
        msg.contains("slowness") && msg.contains("gc_pauses"),
        "{msg}"
    );
    assert!(
        msg.contains(&format!("line {}", line_of(&text, "[[faults]]"))) || msg.contains("line 2"),
        "{msg}"
    );
}

// ---- workload ---------------------------------------------------------------------------------

#[test]
fn negative_rate_is_rejected() {
    rejects(
        &with("rate = 400", "rate = -5"),
        "workload.rate",
        Some("rate ="),
        &["positive"],
    );
}

#[test]
fn zero_rate_is_rejected() {
    rejects(
        &with("rate = 400", "rate = 0"),
        "workload.rate",
        Some("rate ="),
        &["positive"],
    );
}

#[test]
fn non_finite_rate_is_rejected() {
    rejects_values(
        "rate = 400",
        "rate",
        &["nan", "inf", "-inf", "1e300"],
        "workload.rate",
        &["requests per second"],
    );
}

#[test]
fn a_rate_too_low_to_send_anything_is_rejected() {
    rejects(
        &with("rate = 400", "rate = 1e-300"),
        "workload.rate",
        Some("rate ="),
        &["per client"],
    );
}

#[test]
fn rate_with_a_closed_loop_is_rejected() {
    let text = with(
        "arrival = \"poisson\"",
        "arrival = \"closed\"\nconcurrency = 4",
    );
    rejects(
        &text,
        "workload.rate",
        Some("rate ="),
        &["closed loop", "concurrency"],
    );
}

#[test]
fn closed_loop_needs_concurrency() {
    let text = with("rate = 400\narrival = \"poisson\"", "arrival = \"closed\"");
    rejects(
        &text,
        "workload.concurrency",
        Some("[workload]"),
        &["concurrency from 1"],
    );
    let text = with(
        "rate = 400\narrival = \"poisson\"",
        "arrival = \"closed\"\nconcurrency = 0",
    );
    rejects(
        &text,
        "workload.concurrency",
        Some("concurrency = 0"),
        &["concurrency from 1"],
    );
}

#[test]
fn concurrency_with_an_open_loop_is_rejected() {
    rejects(
        &with("rate = 400", "rate = 400\nconcurrency = 3"),
        "workload.concurrency",
        Some("concurrency"),
        &["closed"],
    );
}

#[test]
fn zero_clients_is_rejected() {
    rejects(
        &with("clients = 2", "clients = 0"),
        "workload.clients",
        Some("clients = 0"),
        &["from 1 to"],
    );
}

#[test]
fn too_many_clients_is_rejected() {
    rejects(
        &with("clients = 2", "clients = 4000000000"),
        "workload.clients",
        Some("clients ="),
        &["from 1 to"],
    );
}

#[test]
fn zero_duration_is_rejected() {
    rejects(
        &with("duration = \"3s\"", "duration = \"0s\""),
        "workload.duration",
        Some("duration ="),
        &["greater than 0s"],
    );
}

#[test]
fn warmup_longer_than_the_run_is_accepted() {
    // A policy's warm-up need (weighted_round_robin's 10 s blackout) does not shrink with a
    // shorter measurement, so a warm-up longer than the measured duration is legitimate.
    let s = Scenario::parse(&with("warmup = \"1s\"", "warmup = \"10s\""))
        .expect("a warm-up longer than the measurement is valid");
    assert_eq!(s.workload.warmup, 10_000_000_000);
    assert_eq!(s.workload.end(), 13_000_000_000);
}

#[test]
fn zero_deadline_is_rejected() {
    rejects(
        &with("deadline = \"1s\"", "deadline = \"0ms\""),
        "workload.deadline",
        Some("deadline ="),
        &["greater than 0s"],
    );
}

#[test]
fn streaming_share_outside_zero_one_is_rejected() {
    rejects_values(
        "streaming_share = 0.0",
        "streaming_share",
        &["1.5", "-0.1", "nan"],
        "workload.streaming_share",
        &["[0, 1]"],
    );
}

#[test]
fn invalid_stream_duration_is_rejected() {
    let text = with("streaming_share = 0.0", "streaming_share = 0.5\nstream_duration = { dist = \"uniform\", min = \"2s\", max = \"1s\" }");
    rejects(
        &text,
        "workload.stream_duration",
        Some("stream_duration"),
        &["below min"],
    );
}

// ---- names ------------------------------------------------------------------------------------

#[test]
fn scenario_name_that_could_escape_the_results_folder_is_rejected() {
    for name in ["../etc", "a/b", "", ".", "..", "x y", "a\\\\b"] {
        let text = with("name = \"base\"", &format!("name = \"{name}\""));
        rejects(&text, "name", Some("name ="), &["letters, digits"]);
    }
}

#[test]
fn overlong_scenario_name_is_rejected() {
    let text = with(
        "name = \"base\"",
        &format!("name = \"{}\"", "x".repeat(300)),
    );
    rejects(&text, "name", Some("name ="), &["1 to 100"]);
}

#[test]
fn policy_labels_cannot_name_files_outside_the_results_folder() {
    for label in ["../../etc/passwd", "/abs", "..", "a\\b", "c:d", ".hidden"] {
        let stem = file_stem(label);
        assert!(
            !stem.contains('/') && !stem.contains('\\') && !stem.contains('.') && !stem.is_empty(),
            "{label} -> {stem}"
        );
    }
}

#[test]
fn duplicate_policy_names_are_rejected() {
    let text = with("name = \"peak_ewma\"", "name = \"round_robin\"");
    rejects(
        &text,
        "policies[1].name",
        Some("name = \"round_robin\"\nconfig = '''"),
        &["unique"],
    );
}

#[test]
fn policy_names_that_share_a_file_are_rejected() {
    let text = with("name = \"peak_ewma\"", "name = \"round/robin\"");
    rejects(
        &text,
        "policies[1].name",
        Some("round/robin"),
        &["round_robin.hlog"],
    );
}

#[test]
fn policy_name_with_a_comma_is_rejected() {
    rejects(
        &with("name = \"peak_ewma\"", "name = \"peak,ewma\""),
        "policies[1].name",
        Some("peak,ewma"),
        &["commas"],
    );
}

#[test]
fn empty_policy_name_is_rejected() {
    rejects(
        &with("name = \"peak_ewma\"", "name = \"\""),
        "policies[1].name",
        Some("name = \"\""),
        &["1 to 100"],
    );
}

#[test]
fn duplicate_group_names_are_rejected() {
    rejects(
        &with("name = \"slow\"", "name = \"main\""),
        "fleet[1].name",
        Some("name = \"main\"\ncount = 1"),
        &["unique"],
    );
}

#[test]
fn group_name_with_a_slash_is_rejected() {
    rejects(
        &with("name = \"slow\"", "name = \"sl/ow\""),
        "fleet[1].name",
        Some("sl/ow"),
        &["group/index"],
    );
}

// ---- fleet ------------------------------------------------------------------------------------

#[test]
fn empty_fleet_is_rejected() {
    let text = "name = \"x\"\nfleet = []\npolicies = [{ name = \"rr\", config = '{\"loadBalancingConfig\":[{\"round_robin\":{}}]}' }]\n[workload]\nrate = 10\nduration = \"2s\"\n";
    rejects(text, "fleet", Some("fleet = []"), &["at least one"]);
}

#[test]
fn zero_backends_is_rejected() {
    rejects(
        &with("count = 4", "count = 0"),
        "fleet[0].count",
        Some("count = 0"),
        &["at least 1"],
    );
}

#[test]
fn too_many_backends_is_rejected() {
    rejects(
        &with("count = 4", "count = 4000000000"),
        "fleet[0].count",
        Some("count ="),
        &["at most"],
    );
}

#[test]
fn too_many_connections_is_rejected() {
    let text = with("count = 4", "count = 90000").replace("clients = 2", "clients = 1000");
    rejects(
        &text,
        "workload.clients",
        Some("clients ="),
        &["connections"],
    );
}

#[test]
fn zero_workers_is_rejected() {
    rejects(
        &with("workers = 4", "workers = 0"),
        "fleet[0].workers",
        Some("workers = 0"),
        &["from 1"],
    );
}

#[test]
fn absurd_workers_is_rejected() {
    rejects(
        &with("workers = 4", "workers = 4000000000"),
        "fleet[0].workers",
        Some("workers ="),
        &["from 1"],
    );
}

#[test]
fn service_time_with_p99_below_median_is_rejected() {
    let text = with("p99 = \"8ms\"", "p99 = \"1ms\"");
    rejects(
        &text,
        "fleet[0].service_time",
        Some("service_time = { dist = \"lognormal\""),
        &["median <= p99"],
    );
}

#[test]
fn zero_mean_exponential_is_rejected() {
    let text = with(
        "{ dist = \"constant\", value = \"2ms\" }",
        "{ dist = \"exponential\", mean = \"0s\" }",
    );
    rejects(
        &text,
        "fleet[1].service_time",
        Some("dist = \"exponential\""),
        &["greater than 0"],
    );
}

// ---- faults -----------------------------------------------------------------------------------

#[test]
fn fault_on_a_group_that_does_not_exist_is_rejected() {
    let text = with("targets = [\"slow\"]", "targets = [\"slwo\"]");
    rejects(
        &text,
        "faults[0].targets[0]",
        Some("\"slwo\""),
        &["no fleet group", "main", "slow"],
    );
}

#[test]
fn fault_index_out_of_range_is_rejected() {
    for target in ["main/4", "main/-1", "main/+1", "main/x", "main/"] {
        let text = with(
            "targets = [\"slow\"]",
            &format!("targets = [\"slow\", \"{target}\"]"),
        );
        rejects(
            &text,
            "faults[0].targets[1]",
            Some(&format!("\"{target}\"")),
            &["main/0 to main/3"],
        );
    }
}

#[test]
fn fault_without_targets_is_rejected() {
    rejects(
        &with("targets = [\"slow\"]", "targets = []"),
        "faults[0].targets",
        Some("targets = []"),
        &["at least one"],
    );
}

#[test]
fn fault_on_the_same_backend_twice_is_rejected() {
    let text = with("targets = [\"slow\"]", "targets = [\"main\", \"main/2\"]");
    rejects(
        &text,
        "faults[0].targets[1]",
        Some("\"main/2\""),
        &["again"],
    );
}

#[test]
fn nan_factor_is_rejected() {
    rejects_values(
        "factor = 10",
        "factor",
        &["nan", "inf", "0.5", "-3"],
        "faults[0].factor",
        &[">= 1"],
    );
}

#[test]
fn fault_ending_before_it_starts_is_rejected() {
    let text = with("end = \"3s\"", "end = \"500ms\"");
    rejects(
        &text,
        "faults[0].end",
        Some("end = \"500ms\""),
        &["before it starts"],
    );
}

#[test]
fn fault_starting_after_the_run_is_rejected() {
    let text = with("start = \"1s\"\nend = \"3s\"", "start = \"10s\"");
    rejects(
        &text,
        "faults[0].start",
        Some("start = \"10s\""),
        &["after the end of the run"],
    );
}

#[test]
fn crash_after_the_run_names_at() {
    let text = with_fault("kind = \"crash\"\ntargets = [\"main/1\"]\nat = \"1h\"\n");
    rejects(
        &text,
        "faults[1].at",
        Some("at = \"1h\""),
        &["after the end of the run"],
    );
}

#[test]
fn crash_restarting_after_zero_is_rejected() {
    let text = with_fault(
        "kind = \"crash\"\ntargets = [\"main/1\"]\nat = \"1s\"\nrestart_after = \"0s\"\n",
    );
    rejects(
        &text,
        "faults[1].restart_after",
        Some("restart_after"),
        &["greater than 0s"],
    );
}

#[test]
fn gc_pause_not_shorter_than_its_period_is_rejected() {
    for (every, pause) in [("1s", "1s"), ("1s", "0s"), ("0s", "0s")] {
        let text = with_fault(&format!("kind = \"gc_pauses\"\ntargets = [\"main\"]\nevery = \"{every}\"\npause = \"{pause}\"\n"));
        rejects(
            &text,
            "faults[1].pause",
            Some(&format!("pause = \"{pause}\"")),
            &["0 < pause"],
        );
    }
}

#[test]
fn cpu_quota_not_below_its_period_is_rejected() {
    let text = with_fault(
        "kind = \"cpu_throttle\"\ntargets = [\"main\"]\nquota = \"100ms\"\nperiod = \"50ms\"\n",
    );
    rejects(&text, "faults[1].quota", Some("quota ="), &["0 < quota"]);
}

#[test]
fn noisy_neighbour_duty_outside_zero_one_is_rejected() {
    let text = with_fault("kind = \"noisy_neighbour\"\ntargets = [\"main\"]\nfactor = 3\nstart = \"0s\"\nend = \"2s\"\nduty = nan\n");
    rejects(&text, "faults[1].duty", Some("duty = nan"), &["[0, 1]"]);
}

#[test]
fn noisy_neighbour_zero_burst_is_rejected() {
    let text = with_fault("kind = \"noisy_neighbour\"\ntargets = [\"main\"]\nfactor = 3\nstart = \"0s\"\nend = \"2s\"\nburst = \"0s\"\n");
    rejects(
        &text,
        "faults[1].burst",
        Some("burst ="),
        &["greater than 0s"],
    );
}

#[test]
fn noisy_neighbour_with_too_many_bursts_is_rejected() {
    // 4 backends × 4 million 100 us bursts over 400 s: more than the 10 million drawn in advance.
    let text = with("duration = \"3s\"", "duration = \"400s\"") + "\n[[faults]]\nkind = \"noisy_neighbour\"\ntargets = [\"main\"]\nfactor = 3\nstart = \"0s\"\nend = \"400s\"\nburst = \"100us\"\n";
    rejects(&text, "faults[1].burst", Some("burst ="), &["longer"]);
}

#[test]
fn cold_start_without_warmup_is_rejected() {
    let text =
        with_fault("kind = \"cold_start\"\ntargets = [\"main/0\"]\nfactor = 3\nwarmup = \"0s\"\n");
    rejects(
        &text,
        "faults[1].warmup",
        Some("warmup = \"0s\""),
        &["greater than 0s"],
    );
}

#[test]
fn fail_fast_rate_outside_zero_one_is_rejected() {
    for v in ["1.01", "-0.5", "nan"] {
        let text = with_fault(&format!(
            "kind = \"fail_fast\"\ntargets = [\"main/0\"]\nerror_rate = {v}\n"
        ));
        rejects(
            &text,
            "faults[1].error_rate",
            Some("error_rate"),
            &["[0, 1]"],
        );
    }
}

// ---- policies ---------------------------------------------------------------------------------

#[test]
fn empty_policy_list_is_rejected() {
    let text = with("seed = 3", "seed = 3\npolicies = []");
    let text = text.split("\n[[policies]]").next().unwrap();
    rejects(text, "policies", Some("policies = []"), &["at least one"]);
}

#[test]
fn invalid_service_config_names_the_json_path() {
    let text = with("\"choiceCount\":2", "\"choiceCount\":1");
    rejects(
        &text,
        "policies[1].config",
        Some("config = '''"),
        &[
            "loadBalancingConfig[0].peak_ewma_experimental.choiceCount",
            "at least 2",
        ],
    );
}

#[test]
fn service_config_json_syntax_error_points_into_the_file() {
    let text = with("\"choiceCount\":2}", "\"choiceCount\":2,}");
    let msg = rejects(
        &text,
        "policies[1].config",
        Some("\"choiceCount\":2,}"),
        &["not valid JSON"],
    );
    // The column is the JSON error's, on the file's line.
    let col = text
        .lines()
        .nth(line_of(&text, ",}") - 1)
        .unwrap()
        .find(",}")
        .unwrap()
        + 2;
    assert!(msg.contains(&format!("column {col}:")), "{msg}");
}

#[test]
fn unsupported_policy_lists_the_supported_ones() {
    let text = with("{\"round_robin\":{}}", "{\"round_robbin\":{}}");
    rejects(
        &text,
        "policies[0].config",
        Some("round_robbin"),
        &["round_robbin", "peak_ewma_experimental", "oracle"],
    );
}

#[test]
fn unknown_service_config_field_is_ignored_as_grpc_does_and_warned_of() {
    let text = with("\"choiceCount\":2", "\"choiceCount\":2,\"decay\":\"1s\"");
    let s = Scenario::parse(&text).expect("gRPC ignores an unknown field, so lblab accepts it");
    let warnings = s.config_warnings();
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("peak_ewma_experimental.decay") && w.contains("ignored")),
        "{warnings:?}"
    );
    assert!(Scenario::parse(BASE).unwrap().config_warnings().is_empty());
}

// ---- files ------------------------------------------------------------------------------------

#[test]
fn missing_file_is_named() {
    let err = Scenario::load(std::path::Path::new("/nonexistent/scenario.toml"))
        .unwrap_err()
        .to_string();
    assert!(err.contains("/nonexistent/scenario.toml"), "{err}");
}

#[test]
fn a_folder_is_not_a_scenario() {
    let err = Scenario::load(std::path::Path::new(env!("CARGO_MANIFEST_DIR")))
        .unwrap_err()
        .to_string();
    assert!(err.contains(env!("CARGO_MANIFEST_DIR")), "{err}");
}

#[test]
fn errors_in_a_file_name_the_file_and_line() {
    let dir = std::env::temp_dir().join(format!("lblab-bad-input-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("broken.toml");
    let text = with("count = 4", "count = 0");
    std::fs::write(&path, &text).unwrap();
    let err = Scenario::load(&path).unwrap_err().to_string();
    let _ = std::fs::remove_dir_all(&dir);
    let line = line_of(&text, "count = 0");
    assert!(
        err.starts_with(&format!("{}:{line}:", path.display())),
        "{err}"
    );
    assert!(err.contains("`fleet[0].count`"), "{err}");
}

#[test]
fn seed_override_revalidates_without_positions() {
    let s = Scenario::parse(BASE).unwrap();
    let mut file = s.file.clone();
    file.fleet[0].count = 0;
    let err = Scenario::validate(file).unwrap_err();
    assert_eq!(err.field(), Some("fleet[0].count"));
    assert_eq!(err.position(), None);
}

/// Found by fuzzing: a raw line break inside a JSON string is reported by serde_json at column 0,
/// which came out as "column 0" of the file.
#[test]
fn json_error_at_a_line_break_has_column_one_not_zero() {
    let text = with("\"peak_ewma_experimental\"", "\"peak_ewma_\nexperimental\"");
    let msg = rejects(
        &text,
        "policies[1].config",
        Some("experimental\""),
        &["control character"],
    );
    assert!(msg.contains("column 1:"), "{msg}");
}

#[test]
fn fault_periods_below_the_floor_are_rejected() {
    // A 2 ns GC period or a 1 ns CFS quota made the simulator crawl (~30 ms per request) and the
    // real harness unable to time the fault.
    let gc = with_fault(
        "kind = \"gc_pauses\"\ntargets = [\"main\"]\nevery = \"2ns\"\npause = \"1ns\"\n",
    );
    rejects(
        &gc,
        "faults[1].every",
        Some("every ="),
        &["shortest fault period", "100us"],
    );
    let throttle = with_fault(
        "kind = \"cpu_throttle\"\ntargets = [\"main\"]\nquota = \"1ns\"\nperiod = \"100ms\"\n",
    );
    rejects(
        &throttle,
        "faults[1].quota",
        Some("quota ="),
        &["shortest fault period"],
    );
    let noisy = with_fault("kind = \"noisy_neighbour\"\ntargets = [\"main\"]\nfactor = 3\nstart = \"0s\"\nend = \"2s\"\nburst = \"10us\"\n");
    rejects(
        &noisy,
        "faults[1].burst",
        Some("burst ="),
        &["shortest fault period"],
    );
    // At the floor it is accepted.
    let ok = with_fault(
        "kind = \"gc_pauses\"\ntargets = [\"main\"]\nevery = \"1ms\"\npause = \"100us\"\n",
    );
    lblab_model::Scenario::parse(&ok).expect("a 100 us pause every 1 ms is accepted");
}

#[test]
fn a_seed_too_large_for_the_parser_names_its_field() {
    let text = with("seed = 3", "seed = 99999999999999999999");
    let e = Scenario::parse(&text).unwrap_err().to_string();
    assert!(e.contains("`seed`"), "{e}");
    let rate = with("clients = 2", "clients = 99999999999999999999");
    let e = Scenario::parse(&rate).unwrap_err().to_string();
    assert!(e.contains("`workload.clients`"), "{e}");
}

//! Renders every chart from a synthetic run and checks the files: PNGs decode and have text,
//! SVGs hold the names as text, and the output is byte-for-byte deterministic.

mod support;

use std::path::{Path, PathBuf};

use lblab_report::{
    write_compare_chart, write_heatmap, write_run_charts, ChartName, ComparePoint, Format,
    ReportError,
};
use support::temp_dir;

/// The SVG of `name`.
fn svg(name: &ChartName) -> String {
    name.file_name(Format::Svg)
}

fn compare_points() -> Vec<ComparePoint> {
    support::POLICIES
        .iter()
        .enumerate()
        .map(|(i, (name, _))| ComparePoint {
            policy: name.to_string(),
            sim_p50_ms: 2.1 + i as f64 * 0.1,
            sim_p99_ms: 40.0 / (i as f64 + 1.0),
            real_p50_ms: 2.4 + i as f64 * 0.15,
            real_p99_ms: 46.0 / (i as f64 + 1.0),
            sim_p99_interval: (i == 1).then_some((17.0, 24.0)),
            real_p99_range: (i == 1).then_some((21.0, 26.0)),
        })
        .collect()
}

/// Writes every chart into `dir` and returns the paths.
fn render_all(dir: &Path) -> Vec<PathBuf> {
    let (summary, results) = support::run();
    let mut paths = write_run_charts(dir, &summary, &results).unwrap();
    paths.extend(support::write_sweep_heatmap(dir).unwrap());
    paths.extend(
        write_compare_chart(
            &dir.join(ChartName::Compare.stem()),
            "slow-backend — real vs sim",
            &compare_points(),
        )
        .unwrap(),
    );
    paths
}

/// Decodes a PNG and returns (width, height, share of pixels that are not white, whether the
/// title strip at the top holds dark pixels, i.e. text was drawn).
fn inspect_png(path: &Path) -> (u32, u32, f64, bool) {
    let img = image::open(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .to_rgb8();
    let (w, h) = img.dimensions();
    let ink = img.pixels().filter(|p| p.0 != [255, 255, 255]).count();
    let title_dark =
        (0..w).any(|x| (0..40).any(|y| img.get_pixel(x, y).0.iter().all(|&c| c < 100)));
    (w, h, ink as f64 / (w * h) as f64, title_dark)
}

/// The files written, in order, PNGs decode with sensible sizes and visible text, no temporary
/// files are left.
fn check_files(dir: &Path, paths: &[PathBuf]) {
    let names: Vec<String> = paths
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let stems = ChartName::RUN
        .iter()
        .map(ChartName::stem)
        .chain(["sweep".to_string(), ChartName::Compare.stem()]);
    let expected: Vec<String> = stems
        .flat_map(|s| Format::ALL.map(|f| format!("{s}.{}", f.extension())))
        .collect();
    assert_eq!(names, expected);
    for p in paths.iter().filter(|p| p.extension().unwrap() == "png") {
        let (w, h, ink, title_dark) = inspect_png(p);
        assert!(w >= 700 && h >= 400, "{}: {w}x{h}", p.display());
        assert!(
            std::fs::metadata(p).unwrap().len() > 10_000,
            "{}: too small",
            p.display()
        );
        assert!(ink > 0.02, "{}: almost blank ({ink})", p.display());
        assert!(title_dark, "{}: no title text", p.display());
    }
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

/// The contents of the `<text>` elements of an SVG, trimmed.
fn svg_texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|t| {
            let body = &t[t.find('>')? + 1..];
            Some(body[..body.find("</text>")?].trim().to_string())
        })
        .collect()
}

/// Policy names, titles, axis names and legend entries are real text in the SVGs.
fn check_svg_texts(dir: &Path) {
    let texts = |name: &str| svg_texts(&std::fs::read_to_string(dir.join(name)).unwrap());
    let has = |name: &str, s: &str| {
        let t = texts(name);
        assert!(t.iter().any(|t| t == s), "{name} has no text {s:?}: {t:?}");
    };
    let [spectrum, p99_over_time, traffic_share] = ChartName::RUN.map(|n| svg(&n));
    let compare = svg(&ChartName::Compare);
    for chart in [&spectrum, &p99_over_time, &traffic_share, &compare] {
        for (policy, _) in support::POLICIES {
            has(chart, policy);
        }
    }
    has(
        &spectrum,
        "slow-backend (sim) — latency percentile spectrum",
    );
    has(&spectrum, "99.99%");
    has(&spectrum, "latency (ms, log scale)");
    has(
        &p99_over_time,
        "slow-backend (sim) — p99 latency per second",
    );
    has(&p99_over_time, "fault window");
    has(&p99_over_time, "warm-up");
    has(&p99_over_time, "b2");
    has(&p99_over_time, "time since run start (s)");
    has(&traffic_share, "b2 (faulty)");
    has(&traffic_share, "b4 (faulty)");
    has(&traffic_share, "other backends (3)");
    for s in [
        "decayTime",
        "slowdown of b2",
        "p99 latency (ms)",
        "30s",
        "×8",
        "42",
        "n/a",
    ] {
        has("sweep.svg", s);
    }
    has(&compare, "real p99");
    has(&compare, "sim p50");
}

// Rendering is the slow part of this suite in a debug build, so one test renders everything
// twice and runs every check on the result.
#[test]
fn every_chart_is_readable_and_rendering_twice_gives_identical_bytes() {
    let dir = temp_dir("all");
    let first = render_all(&dir);
    check_files(&dir, &first);
    check_svg_texts(&dir);
    let again = temp_dir("again");
    let second = render_all(&again);
    assert_eq!(first.len(), second.len());
    for (x, y) in first.iter().zip(&second) {
        assert!(
            std::fs::read(x).unwrap() == std::fs::read(y).unwrap(),
            "{} differs",
            x.display()
        );
    }
    std::fs::remove_dir_all(&dir).ok();
    std::fs::remove_dir_all(&again).ok();
}

#[test]
fn a_run_without_data_still_draws() {
    let dir = temp_dir("empty");
    let (mut summary, results) = support::run();
    summary.partial = true;
    // A policy that recorded nothing, next to one with data.
    let empty = lblab_record::Recorder::new("never_ran", summary.backends.len(), 0).finish();
    let paths = write_run_charts(&dir, &summary, &[results[0].clone(), empty]).unwrap();
    assert_eq!(paths.len(), 6);
    let spectrum = ChartName::Spectrum.path(&dir, Format::Svg);
    let texts = svg_texts(&std::fs::read_to_string(spectrum).unwrap());
    assert!(
        texts.iter().any(|t| t == "never_ran (no data)"),
        "{texts:?}"
    );
    assert!(
        texts.iter().any(|t| t.ends_with("(partial run)")),
        "{texts:?}"
    );
    // No policies at all.
    assert_eq!(write_run_charts(&dir, &summary, &[]).unwrap().len(), 6);
    assert_eq!(
        write_compare_chart(&dir.join("c"), "none", &[])
            .unwrap()
            .len(),
        2
    );
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn heatmap_with_one_cell_or_all_missing_draws() {
    let dir = temp_dir("heat");
    for (stem, value) in [("one", 3.0), ("nan", f64::NAN)] {
        let written = write_heatmap(
            &dir.join(stem),
            "t",
            "x",
            &["a".into()],
            "y",
            &["b".into()],
            &[vec![value]],
            "v",
        );
        assert_eq!(written.unwrap().len(), 2, "{stem}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn heatmap_shape_mismatch_is_rejected_naming_the_file() {
    let dir = temp_dir("bad");
    let stem = dir.join("bad");
    let err = write_heatmap(
        &stem,
        "t",
        "x",
        &["a".into(), "b".into()],
        "y",
        &["c".into()],
        &[vec![1.0]],
        "v",
    )
    .unwrap_err();
    assert!(matches!(err, ReportError::InvalidInput { .. }), "{err:?}");
    assert!(
        err.to_string().contains("bad")
            && err
                .to_string()
                .contains("row 0 has 1 values for 2 x labels"),
        "{err}"
    );
    assert!(!dir.join("bad.png").exists());
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn unwritable_folder_is_an_io_error_naming_the_file() {
    let dir = temp_dir("io");
    let file = dir.join("not-a-folder");
    std::fs::write(&file, b"x").unwrap();
    let compare = ChartName::Compare;
    let err = write_compare_chart(&file.join(compare.stem()), "t", &compare_points()).unwrap_err();
    let png = compare.file_name(Format::Png);
    match &err {
        ReportError::Io { file: f, .. } => {
            assert!(
                f.ends_with(Path::new("not-a-folder").join(&png)),
                "{}",
                f.display()
            )
        }
        other => panic!("expected Io, got {other:?}"),
    }
    assert!(err.to_string().contains(&png));
    std::fs::remove_dir_all(&dir).ok();
}

//! What every chart shares: the embedded font, writing one drawing as PNG and SVG, colours,
//! legends, log-scale ticks and number formatting.

use std::ffi::OsString;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::ImageEncoder as _;
use lblab_model::results::write_atomic;
use lblab_model::ModelError;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use crate::ReportError;

/// DejaVu Sans (Bitstream Vera licence with public-domain DejaVu changes; see
/// `assets/DejaVuSans-LICENSE.txt`), registered with plotters as the `sans-serif` family.
static FONT: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");

/// The font family every chart uses. In SVG it is written as `font-family="sans-serif"`.
pub(crate) const FAMILY: &str = "sans-serif";

/// Registers the embedded font once per process.
fn ensure_font() -> Result<(), String> {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            plotters::style::register_font(FAMILY, FontStyle::Normal, FONT)
                .map_err(|_| "the embedded DejaVu Sans font could not be parsed".to_string())
        })
        .clone()
}

/// The result of drawing on any backend.
pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// A chart that can be drawn on any plotters backend, so PNG and SVG come from the same code.
pub(crate) trait Chart {
    /// Size in pixels (width, height).
    fn size(&self) -> (u32, u32);
    /// Draws the whole chart on `root` (already filled white).
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> DrawResult<DB>;
}

/// `stem` with `ext` appended (`with_extension` would eat a dot in the stem, e.g. `run.v2`).
fn with_ext(stem: &Path, ext: &str) -> PathBuf {
    let mut s: OsString = stem.as_os_str().to_owned();
    s.push(".");
    s.push(ext);
    PathBuf::from(s)
}

/// Draws `chart` into `<stem>.png` and `<stem>.svg` and returns both paths.
pub(crate) fn write_chart(stem: &Path, chart: &impl Chart) -> Result<Vec<PathBuf>, ReportError> {
    let png_path = with_ext(stem, "png");
    let svg_path = with_ext(stem, "svg");
    let draw_err = |file: &Path, message: String| ReportError::Draw {
        file: file.to_path_buf(),
        message,
    };
    ensure_font().map_err(|m| draw_err(&png_path, m))?;
    let (w, h) = chart.size();

    let k = crate::supersample::K as usize;
    let mut big = vec![0u8; w as usize * h as usize * 3 * k * k];
    {
        let root = crate::supersample::Supersampled::new(&mut big, (w, h)).into_drawing_area();
        draw_on(&root, chart).map_err(|m| draw_err(&png_path, m))?;
    }
    let pixels = crate::supersample::downsample(&big, (w, h));
    let mut png = Vec::new();
    PngEncoder::new_with_quality(&mut png, CompressionType::Default, FilterType::Adaptive)
        .write_image(&pixels, w, h, image::ColorType::Rgb8)
        .map_err(|e| draw_err(&png_path, e.to_string()))?;
    write_file(&png_path, &png)?;

    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (w, h)).into_drawing_area();
        draw_on(&root, chart).map_err(|m| draw_err(&svg_path, m))?;
    }
    write_file(&svg_path, svg.as_bytes())?;
    Ok(vec![png_path, svg_path])
}

fn draw_on<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    chart: &impl Chart,
) -> Result<(), String> {
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    chart.draw(root).map_err(|e| e.to_string())?;
    root.present().map_err(|e| e.to_string())
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), ReportError> {
    write_atomic(path, bytes).map_err(|e| match e {
        ModelError::Io { source, .. } => ReportError::Io {
            file: path.to_path_buf(),
            source,
        },
        other => ReportError::Io {
            file: path.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

// ---------------------------------------------------------------------------------------------
// Text styles

/// Text of `size` pixels in the chart font, in `color`.
pub(crate) fn text(size: u32, color: RGBColor) -> TextStyle<'static> {
    TextStyle {
        font: (FAMILY, size).into_font(),
        color: color.to_backend_color(),
        pos: Pos::default(),
    }
}

/// Near-black used for all text.
pub(crate) const INK: RGBColor = RGBColor(34, 34, 34);
/// Grey for secondary text (notes, missing values).
pub(crate) const MUTED: RGBColor = RGBColor(110, 110, 110);

/// Title of a figure, drawn centred at the top; returns the area below it.
pub(crate) fn titled<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, _) = root.dim_in_pixel();
    let style = fit_text(root, title, 20, 14, w.saturating_sub(40))?;
    let (top, rest) = root.split_vertically(44);
    top.draw(&Text::new(
        title.to_string(),
        (w as i32 / 2, 24),
        style.pos(Pos::new(HPos::Center, VPos::Center)),
    ))?;
    Ok(rest)
}

/// The largest size between `max` and `min` at which `s` fits in `width` pixels (the minimum if
/// none does).
pub(crate) fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    max: u32,
    min: u32,
    width: u32,
) -> Result<TextStyle<'static>, DrawingAreaErrorKind<DB::ErrorType>> {
    let mut size = max;
    while size > min {
        let style = text(size, INK);
        if area.estimate_text_size(s, &style)?.0 <= width {
            return Ok(style);
        }
        size -= 1;
    }
    Ok(text(min, INK))
}

/// `s` shortened with an ellipsis so that it fits in `width` pixels in `style`.
pub(crate) fn ellipsize<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    s: &str,
    style: &TextStyle,
    width: u32,
) -> Result<String, DrawingAreaErrorKind<DB::ErrorType>> {
    if area.estimate_text_size(s, style)?.0 <= width {
        return Ok(s.to_string());
    }
    let chars: Vec<char> = s.chars().collect();
    for keep in (1..chars.len()).rev() {
        let t: String = chars[..keep].iter().collect::<String>() + "…";
        if area.estimate_text_size(&t, style)?.0 <= width {
            return Ok(t);
        }
    }
    Ok("…".to_string())
}

// ---------------------------------------------------------------------------------------------
// Colours

/// Ten distinct colours (matplotlib's "tab10").
pub(crate) const CATEGORY: [RGBColor; 10] = [
    RGBColor(31, 119, 180),  // blue
    RGBColor(255, 127, 14),  // orange
    RGBColor(44, 160, 44),   // green
    RGBColor(214, 39, 40),   // red
    RGBColor(148, 103, 189), // purple
    RGBColor(140, 86, 75),   // brown
    RGBColor(227, 119, 194), // pink
    RGBColor(127, 127, 127), // grey
    RGBColor(188, 189, 34),  // olive
    RGBColor(23, 190, 207),  // cyan
];

/// A dash pattern: `(dash, gap)` in pixels.
pub(crate) type Dash = (u32, u32);

/// The dash of a line drawn over an identical earlier one, so that the earlier one shows
/// through the gaps.
pub(crate) const TWIN_DASH: Dash = (7, 7);

/// How a policy's line looks: its colour, and a dash pattern (`None`: solid).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PolicyStyle {
    pub colour: RGBColor,
    pub dash: Option<Dash>,
}

/// The policies lblab knows, each with its own colour in every chart.
const KNOWN: [(&str, RGBColor); 10] = [
    ("round_robin", CATEGORY[0]),
    ("pick_first", CATEGORY[5]),
    ("least_request", CATEGORY[1]),
    ("od(least_request)", CATEGORY[8]),
    ("peak_ewma", CATEGORY[2]),
    ("od(peak_ewma)", CATEGORY[9]),
    ("envoy_peak_ewma", CATEGORY[4]),
    ("weighted_round_robin", CATEGORY[6]),
    ("tower_p2c_peak_ewma", CATEGORY[3]),
    ("oracle", CATEGORY[7]),
];

/// Dash patterns of variants (`peak_ewma(with_replacement)`): the known ablations get their own,
/// other variants one by the hash of what is in the brackets.
const VARIANT_DASHES: [Dash; 4] = [(10, 4), (3, 3), (14, 4), (6, 6)];
const KNOWN_VARIANTS: [(&str, usize); 5] = [
    ("with_replacement", 0),
    ("streams=outstanding", 1),
    ("streams=count", 2),
    ("streams=ignore", 3),
    ("on_read", 3),
];

/// FNV-1a: a stable hash (std's hasher may change between Rust releases).
fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The colour and dash of the policy labelled `label`, the same in every chart whatever the
/// order of the policies: a fixed table for the policies lblab knows; a variant of one of them
/// (`peak_ewma(with_replacement)`, `od(peak_ewma(streams=count))`) has its base's colour and a
/// dash; any other label a colour from the palette by the hash of the label.
pub(crate) fn policy_style(label: &str) -> PolicyStyle {
    if let Some((_, c)) = KNOWN.iter().find(|(k, _)| *k == label) {
        return PolicyStyle {
            colour: *c,
            dash: None,
        };
    }
    if let Some(open) = label.find('(') {
        if let Some(args) = label[open + 1..].strip_suffix(')') {
            let base = &label[..open];
            let dash = KNOWN_VARIANTS
                .iter()
                .find(|(v, _)| *v == args || args.ends_with(&format!("={v}")))
                .map(|(_, i)| VARIANT_DASHES[*i])
                .unwrap_or(VARIANT_DASHES[(fnv1a(args) % VARIANT_DASHES.len() as u64) as usize]);
            if let Some((_, c)) = KNOWN.iter().find(|(k, _)| *k == base) {
                return PolicyStyle {
                    colour: *c,
                    dash: Some(dash),
                };
            }
            // A wrapper (`od(...)`) around a policy or variant lblab knows: the inner one's
            // colour, darker, dashed.
            let inner = policy_style(args);
            if KNOWN
                .iter()
                .any(|(k, _)| args == *k || args.starts_with(&format!("{k}(")))
            {
                return PolicyStyle {
                    colour: shade(inner.colour, 0.3),
                    dash: Some(inner.dash.unwrap_or(dash)),
                };
            }
        }
    }
    let h = fnv1a(label);
    let c = CATEGORY[(h % CATEGORY.len() as u64) as usize];
    PolicyStyle {
        colour: if (h / CATEGORY.len() as u64).is_multiple_of(2) {
            c
        } else {
            shade(c, 0.35)
        },
        dash: None,
    }
}

/// The colour of the policy labelled `label` (see [`policy_style`]).
pub(crate) fn policy_colour(label: &str) -> RGBColor {
    policy_style(label).colour
}

/// `c` mixed with black: `amount` 0 keeps it, 1 is black.
pub(crate) fn shade(c: RGBColor, amount: f64) -> RGBColor {
    let m = |v: u8| (v as f64 * (1.0 - amount)).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// The colour of the `i`-th backend that has a fault (red first: it is the one in trouble).
pub(crate) fn fault_colour(i: usize) -> RGBColor {
    const ORDER: [usize; 10] = [3, 0, 1, 4, 2, 5, 6, 9, 8, 7];
    CATEGORY[ORDER[i % ORDER.len()]]
}

/// Fill for fault windows.
pub(crate) const FAULT_FILL: RGBColor = RGBColor(214, 39, 40);
/// Opacity of fault-window fills.
pub(crate) const FAULT_ALPHA: f64 = 0.13;
/// Fill for the warm-up.
pub(crate) const WARMUP_FILL: RGBColor = RGBColor(120, 120, 120);
/// Opacity of the warm-up fill.
pub(crate) const WARMUP_ALPHA: f64 = 0.16;
/// Lines of backends without a fault.
pub(crate) const QUIET_GREY: RGBColor = RGBColor(190, 190, 190);

/// `c` mixed with white: `amount` 0 keeps it, 1 is white.
pub(crate) fn tint(c: RGBColor, amount: f64) -> RGBColor {
    let m = |v: u8| (v as f64 + (255.0 - v as f64) * amount).round() as u8;
    RGBColor(m(c.0), m(c.1), m(c.2))
}

/// `c` with opacity `alpha` composited over white, as an opaque colour. Shading drawn this way
/// looks the same in PNG and SVG and is deterministic.
pub(crate) fn over_white(c: RGBColor, alpha: f64) -> RGBColor {
    tint(c, 1.0 - alpha)
}

/// The legend mark of a line drawn with `dash` (`None`: solid).
pub(crate) fn line_mark(dash: Option<Dash>) -> Mark {
    match dash {
        Some(d) => Mark::Dashed(d),
        None => Mark::Line(3),
    }
}

/// Draws `points` as one line in `colour`, solid or with `dash`.
pub(crate) fn draw_line<DB, X, Y>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: &[(f64, f64)],
    colour: RGBColor,
    dash: Option<Dash>,
    width: u32,
) -> DrawResult<DB>
where
    DB: DrawingBackend,
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    let style = colour.stroke_width(width);
    match dash {
        Some((d, g)) => {
            chart.draw_series(DashedLineSeries::new(points.iter().copied(), d, g, style))?;
        }
        None => {
            chart.draw_series(LineSeries::new(points.iter().copied(), style))?;
        }
    }
    Ok(())
}

/// For each item, the index of the first earlier one equal to it (by `same`), if any: a line
/// that lies exactly on an earlier one hides it, so it is drawn dashed and its legend says
/// "(= other)".
pub(crate) fn twins<T>(items: &[T], same: impl Fn(&T, &T) -> bool) -> Vec<Option<usize>> {
    (0..items.len())
        .map(|i| (0..i).find(|&j| same(&items[j], &items[i])))
        .collect()
}

/// `label` marked as drawn on top of an identical `twin`.
pub(crate) fn twin_label(label: &str, twin: &str) -> String {
    format!("{label} (= {twin})")
}

/// Style of the grid: bold lines at labelled ticks, light lines between.
pub(crate) fn grid_bold() -> ShapeStyle {
    RGBColor(215, 215, 215).stroke_width(1)
}

/// Style of the light grid lines.
pub(crate) fn grid_light() -> ShapeStyle {
    RGBColor(238, 238, 238).stroke_width(1)
}

// ---------------------------------------------------------------------------------------------
// Legends

/// What a legend entry shows next to its label.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Mark {
    /// A line of this width.
    Line(u32),
    /// A dashed line: `(dash, gap)` in pixels.
    Dashed(Dash),
    /// A filled box (for areas and bars).
    Swatch,
}

/// One legend entry.
#[derive(Debug, Clone)]
pub(crate) struct Entry {
    pub label: String,
    pub colour: RGBColor,
    pub mark: Mark,
}

impl Entry {
    pub(crate) fn new(label: impl Into<String>, colour: RGBColor, mark: Mark) -> Self {
        Entry {
            label: label.into(),
            colour,
            mark,
        }
    }
}

/// Legend text size.
const LEGEND_TEXT: u32 = 14;
/// Height of one legend row.
const LEGEND_ROW: i32 = 24;
/// Width of the mark before a label, with its gap.
const LEGEND_MARK: i32 = 34;

/// The width a legend with `entries` needs, between `min` and `max`.
pub(crate) fn legend_width<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: Option<&str>,
    entries: &[Entry],
    min: u32,
    max: u32,
) -> Result<u32, DrawingAreaErrorKind<DB::ErrorType>> {
    let style = text(LEGEND_TEXT, INK);
    let mut widest = match title {
        Some(t) => area.estimate_text_size(t, &style)?.0,
        None => 0,
    };
    for e in entries {
        widest = widest.max(area.estimate_text_size(&e.label, &style)?.0 + LEGEND_MARK as u32);
    }
    Ok((widest + 28).clamp(min, max))
}

/// Draws a legend into `area` (outside the plot, so it never covers data): an optional title,
/// then one row per entry from `top` down. Labels too long for the area are shortened.
pub(crate) fn draw_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    top: i32,
    title: Option<&str>,
    entries: &[Entry],
) -> DrawResult<DB> {
    let (w, _) = area.dim_in_pixel();
    let style = text(LEGEND_TEXT, INK);
    let left = 10;
    let mut y = top;
    if let Some(t) = title {
        let t = ellipsize(area, t, &style, w.saturating_sub(left as u32 + 4))?;
        area.draw(&Text::new(
            t,
            (left, y),
            style.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += LEGEND_ROW;
    }
    for e in entries {
        let (x0, x1) = (left, left + 24);
        match e.mark {
            Mark::Line(width) => {
                area.draw(&PathElement::new(
                    vec![(x0, y), (x1, y)],
                    e.colour.stroke_width(width),
                ))?;
            }
            Mark::Dashed((dash, gap)) => {
                // The pattern at most halved, so that even long dashes show a gap in the mark.
                let (d, g) = if dash + gap > 12 {
                    (dash.div_ceil(2), gap.div_ceil(2))
                } else {
                    (dash, gap)
                };
                let mut x = x0;
                while x < x1 {
                    area.draw(&PathElement::new(
                        vec![(x, y), ((x + d as i32).min(x1), y)],
                        e.colour.stroke_width(2),
                    ))?;
                    x += (d + g) as i32;
                }
            }
            Mark::Swatch => {
                area.draw(&Rectangle::new(
                    [(x0, y - 7), (x1, y + 7)],
                    e.colour.filled(),
                ))?;
            }
        }
        let label = ellipsize(
            area,
            &e.label,
            &style,
            w.saturating_sub((left + LEGEND_MARK) as u32 + 4),
        )?;
        area.draw(&Text::new(
            label,
            (left + LEGEND_MARK, y),
            style.clone().pos(Pos::new(HPos::Left, VPos::Center)),
        ))?;
        y += LEGEND_ROW;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Axes and numbers

/// An f64 axis, linear or logarithmic, with the labelled (`bold`) and unlabelled (`light`) ticks
/// given explicitly. (plotters' `with_key_points` on an f64 range cannot take a label formatter.)
#[derive(Debug, Clone)]
pub(crate) struct Ticked {
    range: Range<f64>,
    log: bool,
    bold: Vec<f64>,
    light: Vec<f64>,
}

impl Ticked {
    /// A linear axis over `range`.
    pub(crate) fn linear(range: Range<f64>, bold: Vec<f64>, light: Vec<f64>) -> Self {
        Ticked {
            range,
            log: false,
            bold,
            light,
        }
    }

    /// The log axis of `axis`.
    pub(crate) fn log(axis: &LogAxis) -> Self {
        Ticked {
            range: axis.range.clone(),
            log: true,
            bold: axis.ticks.clone(),
            light: axis.minor.clone(),
        }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let f = |x: f64| if self.log { x.ln() } else { x };
        let (a, b) = (f(self.range.start), f(self.range.end));
        let frac = (f(*v) - a) / (b - a);
        // Far outside the range (or NaN, or log of 0): pin well outside the plot, never overflow.
        let frac = if frac.is_nan() {
            -1.0
        } else {
            frac.clamp(-1.0, 2.0)
        };
        limit.0 + ((limit.1 - limit.0) as f64 * frac + 1e-3).floor() as i32
    }

    fn key_points<H: KeyPointHint>(&self, hint: H) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            self.light.clone()
        } else {
            self.bold.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.range.clone()
    }
}

/// A log-scale latency axis for values in `[min, max]` (both > 0): the range snapped outwards to
/// 1-2-5 steps, the labelled ticks, and the unlabelled minor ticks.
pub(crate) struct LogAxis {
    pub range: Range<f64>,
    pub ticks: Vec<f64>,
    pub minor: Vec<f64>,
}

impl LogAxis {
    /// An axis that shows `min..max` with a little room above and below.
    pub(crate) fn new(min: f64, max: f64) -> Self {
        let (min, max) = if min.is_finite() && max.is_finite() && min > 0.0 && max >= min {
            (min, max)
        } else {
            (1.0, 10.0)
        };
        // 1-2-5 steps around the data, with at least a factor 2.5 of range in total.
        let lo = step_125_at_or_below(min / 1.08);
        let mut hi = step_125_at_or_above(max * 1.08);
        if hi / lo < 2.5 {
            hi = step_125_at_or_above(lo * 2.5);
        }
        let decades = (hi / lo).log10();
        let mut ticks = Vec::new();
        let mut minor = Vec::new();
        let mut decade = 10f64.powf(lo.log10().floor());
        while decade <= hi * 1.0001 {
            for m in 1..10 {
                let v = decade * m as f64;
                if v < lo * 0.9999 || v > hi * 1.0001 {
                    continue;
                }
                let labelled = if decades <= 1.2 {
                    matches!(m, 1 | 2 | 3 | 5 | 7)
                } else if decades <= 3.2 {
                    matches!(m, 1 | 2 | 5)
                } else {
                    m == 1
                };
                if labelled {
                    ticks.push(v);
                } else {
                    minor.push(v);
                }
            }
            decade *= 10.0;
        }
        // Always label both ends, so the reader sees the range.
        if ticks.first().is_none_or(|&t| t > lo * 1.0001) {
            ticks.insert(0, lo);
        }
        if ticks.last().is_none_or(|&t| t < hi * 0.9999) {
            ticks.push(hi);
        }
        LogAxis {
            range: lo..hi,
            ticks,
            minor,
        }
    }
}

/// The 1-2-5 step at or below `v` (`v` > 0).
fn step_125_at_or_below(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let m = v / decade;
    let s = if m >= 5.0 - 1e-9 {
        5.0
    } else if m >= 2.0 - 1e-9 {
        2.0
    } else {
        1.0
    };
    s * decade
}

/// The 1-2-5 step at or above `v` (`v` > 0).
fn step_125_at_or_above(v: f64) -> f64 {
    let decade = 10f64.powf(v.log10().floor());
    let m = v / decade;
    let s = if m <= 1.0 + 1e-9 {
        1.0
    } else if m <= 2.0 + 1e-9 {
        2.0
    } else if m <= 5.0 + 1e-9 {
        5.0
    } else {
        10.0
    };
    s * decade
}

/// A number for an axis or a cell: at most three significant digits below 1000, no trailing
/// zeros, thousands as plain integers (`0.05`, `1.5`, `20`, `250`, `12000`).
pub(crate) fn fmt_num(v: f64) -> String {
    if !v.is_finite() {
        return "–".to_string();
    }
    let a = v.abs();
    let s = if a == 0.0 {
        "0".to_string()
    } else if a >= 100.0 {
        format!("{v:.0}")
    } else {
        let decimals = (2 - a.log10().floor() as i32).clamp(0, 9) as usize;
        format!("{v:.decimals$}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_has_one_style_whatever_the_order() {
        // A function of the label alone: known labels have fixed, distinct colours.
        let known: Vec<RGBColor> = KNOWN.iter().map(|(k, _)| policy_colour(k)).collect();
        for (i, c) in known.iter().enumerate() {
            assert!(!known[..i].contains(c), "{} shares a colour", KNOWN[i].0);
        }
        assert_eq!(policy_style("round_robin").colour, CATEGORY[0]);
        assert_eq!(policy_style("peak_ewma").dash, None);
        // Variants: the base's colour, each known ablation its own dash.
        let v = policy_style("peak_ewma(with_replacement)");
        let w = policy_style("peak_ewma(streams=outstanding)");
        assert_eq!(v.colour, policy_colour("peak_ewma"));
        assert_eq!(w.colour, policy_colour("peak_ewma"));
        assert!(v.dash.is_some() && w.dash.is_some() && v.dash != w.dash);
        // A wrapper around a known variant: derived from it.
        assert!(policy_style("od(peak_ewma(streams=count))").dash.is_some());
        // Anything else: deterministic.
        assert_eq!(policy_style("my_policy"), policy_style("my_policy"));
        assert_eq!(fnv1a("a"), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn twins_point_at_the_first_equal_item() {
        assert_eq!(
            twins(&[1, 2, 1, 1], |a, b| a == b),
            vec![None, None, Some(0), Some(0)]
        );
        assert_eq!(twin_label("od(x)", "x"), "od(x) (= x)");
    }

    #[test]
    fn numbers_are_short() {
        assert_eq!(fmt_num(0.05), "0.05");
        assert_eq!(fmt_num(1.0), "1");
        assert_eq!(fmt_num(1.234), "1.23");
        assert_eq!(fmt_num(12.34), "12.3");
        assert_eq!(fmt_num(250.4), "250");
        assert_eq!(fmt_num(12000.0), "12000");
        assert_eq!(fmt_num(f64::NAN), "–");
    }

    #[test]
    fn log_axis_is_snapped_and_labelled_at_both_ends() {
        let a = LogAxis::new(1.3, 180.0);
        assert_eq!(a.range, 1.0..200.0);
        assert_eq!(a.ticks, vec![1.0, 2.0, 5.0, 10.0, 20.0, 50.0, 100.0, 200.0]);
        let wide = LogAxis::new(0.01, 50_000.0);
        assert!(wide.ticks.contains(&1.0) && !wide.ticks.contains(&2.0));
        let flat = LogAxis::new(5.0, 5.0);
        assert!(flat.range.end / flat.range.start >= 2.5);
    }
}

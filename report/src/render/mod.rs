//! What every chart shares: writing one drawing as PNG and SVG ([`write_chart`], over the
//! [`Chart`] trait), and, in one module each, text ([`text`]), colours and line styles
//! ([`colour`]), legends ([`legend`]), axes and numbers ([`axis`]), the plot's frame ([`plot`])
//! and the anti-aliased bitmap backend ([`supersample`]).

pub(crate) mod axis;
pub(crate) mod colour;
pub(crate) mod legend;
pub(crate) mod plot;
pub(crate) mod supersample;
pub(crate) mod text;

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use image::codecs::png::{CompressionType, FilterType, PngEncoder};
use image::ImageEncoder as _;
use lblab_record::write_atomic;
use lblab_record::FileError;
use plotters::coord::Shift;
use plotters::prelude::*;

pub(crate) use axis::{fmt_num, LogAxis, Ticked};
pub(crate) use colour::{
    fault_colour, over_white, policy_colour, policy_style, tint, twin_label, twins, PolicyStyle,
    CATEGORY, FAULT_ALPHA, FAULT_FILL, QUIET_GREY, TWIN_DASH, WARMUP_ALPHA, WARMUP_FILL,
};
pub(crate) use legend::{draw_legend, line_mark, with_legend, Entry, Mark};
pub(crate) use plot::{draw_line, frame, note, Frame};
pub(crate) use text::{ellipsize, text, titled, INK, MUTED};

use crate::name::{ChartName, Format};
use crate::ReportError;

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
    let png_path = with_ext(stem, Format::Png.extension());
    let svg_path = with_ext(stem, Format::Svg.extension());
    let draw_err = |file: &Path, message: String| ReportError::Draw {
        file: file.to_path_buf(),
        message,
    };
    text::ensure_font().map_err(|e| draw_err(&png_path, e.to_string()))?;
    let (w, h) = chart.size();

    let k = supersample::K as usize;
    let mut big = vec![0u8; w as usize * h as usize * 3 * k * k];
    {
        let root = supersample::Supersampled::new(&mut big, (w, h)).into_drawing_area();
        draw_on(&root, chart).map_err(|m| draw_err(&png_path, m))?;
    }
    let pixels = supersample::downsample(&big, (w, h));
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
        FileError::Io { source, .. } => ReportError::Io {
            file: path.to_path_buf(),
            source,
        },
        other => ReportError::Io {
            file: path.to_path_buf(),
            source: std::io::Error::other(other.to_string()),
        },
    })
}

/// [`write_chart`] into `dir`, under the file names of `name`.
pub(crate) fn write_named(
    dir: &Path,
    name: &ChartName,
    chart: &impl Chart,
) -> Result<Vec<PathBuf>, ReportError> {
    write_chart(&dir.join(name.stem()), chart)
}

//! Text: the embedded font, text styles, titles, and fitting text into a width.

use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

/// DejaVu Sans (Bitstream Vera licence with public-domain DejaVu changes; see
/// `assets/DejaVuSans-LICENSE.txt`), registered with plotters as the `sans-serif` family.
static FONT: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");

/// The font family every chart uses. In SVG it is written as `font-family="sans-serif"`.
pub(crate) const FAMILY: &str = "sans-serif";

/// The embedded font could not be registered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the embedded DejaVu Sans font could not be parsed")]
pub(super) struct FontUnparsable;

/// Registers the embedded font once per process.
pub(super) fn ensure_font() -> Result<(), FontUnparsable> {
    static REGISTERED: OnceLock<Result<(), FontUnparsable>> = OnceLock::new();
    *REGISTERED.get_or_init(|| {
        plotters::style::register_font(FAMILY, FontStyle::Normal, FONT).map_err(|_| FontUnparsable)
    })
}

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

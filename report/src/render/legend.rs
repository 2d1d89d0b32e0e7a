//! Legends: drawn beside the plot, never over the data.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::colour::Dash;
use super::text::{ellipsize, text, INK};
use super::DrawResult;

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

/// The legend mark of a line drawn with `dash` (`None`: solid).
pub(crate) fn line_mark(dash: Option<Dash>) -> Mark {
    match dash {
        Some(d) => Mark::Dashed(d),
        None => Mark::Line(3),
    }
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
fn legend_width<DB: DrawingBackend>(
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

/// A plot area and a legend area.
pub(crate) type Split<DB> = (DrawingArea<DB, Shift>, DrawingArea<DB, Shift>);

/// Splits `area` into a plot on the left and, on the right, a legend of `entries` under
/// `title`, as wide as they need between `min` and `max` pixels.
pub(crate) fn with_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: Option<&str>,
    entries: &[Entry],
    (min, max): (u32, u32),
) -> Result<Split<DB>, DrawingAreaErrorKind<DB::ErrorType>> {
    let w = legend_width(area, title, entries, min, max)?;
    Ok(area.split_horizontally(area.dim_in_pixel().0 - w))
}

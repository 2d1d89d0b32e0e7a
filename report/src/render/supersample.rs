//! Anti-aliased PNGs: draw at `K`× the size on plotters' bitmap backend, then average each
//! `K`×`K` block into one pixel.
//!
//! plotters' bitmap backend fills wide lines and areas as polygons without anti-aliasing and
//! rounds every glyph to whole pixels, so charts drawn at 1× look jagged and digits wobble.
//! [`Supersampled`] presents the chart code with the logical size and scales every drawing call
//! (coordinates, stroke widths, radii, font sizes) on its way to the real backend.

use plotters::prelude::*;
use plotters::style::{FontDesc, TextStyle};
use plotters_backend::{
    BackendColor, BackendCoord, BackendStyle, BackendTextStyle, DrawingErrorKind,
};

/// The supersampling factor.
pub(crate) const K: u32 = 2;
const KI: i32 = K as i32;

/// A backend of logical size `size` that draws on a `K`× larger bitmap.
pub(crate) struct Supersampled<'a> {
    inner: BitMapBackend<'a>,
}

type Result<T = ()> =
    std::result::Result<T, DrawingErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>>;

/// A stroke of a given width in real pixels.
struct Stroke {
    color: BackendColor,
    width: u32,
}

impl BackendStyle for Stroke {
    fn color(&self) -> BackendColor {
        self.color
    }

    fn stroke_width(&self) -> u32 {
        self.width
    }
}

impl<'a> Supersampled<'a> {
    /// Draws on `buffer`, an RGB buffer of `K * size.0` × `K * size.1` pixels.
    pub(crate) fn new(buffer: &'a mut [u8], size: (u32, u32)) -> Self {
        Supersampled {
            inner: BitMapBackend::with_buffer(buffer, (size.0 * K, size.1 * K)),
        }
    }
}

/// The centre of logical pixel `p` in real pixels.
fn centre(p: BackendCoord) -> BackendCoord {
    (p.0 * KI + KI / 2, p.1 * KI + KI / 2)
}

fn stroke<S: BackendStyle>(style: &S) -> Stroke {
    Stroke {
        color: style.color(),
        width: style.stroke_width().max(1) * K,
    }
}

impl DrawingBackend for Supersampled<'_> {
    type ErrorType = <BitMapBackend<'static> as DrawingBackend>::ErrorType;

    fn get_size(&self) -> (u32, u32) {
        let (w, h) = self.inner.get_size();
        (w / K, h / K)
    }

    fn ensure_prepared(&mut self) -> Result {
        self.inner.ensure_prepared()
    }

    fn present(&mut self) -> Result {
        self.inner.present()
    }

    fn draw_pixel(&mut self, p: BackendCoord, color: BackendColor) -> Result {
        self.inner.draw_rect(
            (p.0 * KI, p.1 * KI),
            (p.0 * KI + KI - 1, p.1 * KI + KI - 1),
            &color,
            true,
        )
    }

    fn draw_line<S: BackendStyle>(
        &mut self,
        from: BackendCoord,
        to: BackendCoord,
        style: &S,
    ) -> Result {
        let w = style.stroke_width();
        if w == 0 {
            return Ok(());
        }
        if from.0 == to.0 || from.1 == to.1 {
            // Axis-aligned (grid lines, axes, ticks): an exact block, so it stays crisp.
            let (w, half) = (w as i32 * KI, (w as i32 * KI) / 2);
            let (a, b) = (centre(from), centre(to));
            let (x0, x1) = (a.0.min(b.0), a.0.max(b.0));
            let (y0, y1) = (a.1.min(b.1), a.1.max(b.1));
            let ((x0, x1), (y0, y1)) = if from.1 == to.1 && from.0 != to.0 {
                (
                    (x0 - KI / 2, x1 + KI / 2 - 1),
                    (y0 - half, y0 - half + w - 1),
                )
            } else {
                (
                    (x0 - half, x0 - half + w - 1),
                    (y0 - KI / 2, y1 + KI / 2 - 1),
                )
            };
            return self
                .inner
                .draw_rect((x0, y0), (x1, y1), &style.color(), true);
        }
        self.inner
            .draw_line(centre(from), centre(to), &stroke(style))
    }

    fn draw_rect<S: BackendStyle>(
        &mut self,
        ul: BackendCoord,
        br: BackendCoord,
        style: &S,
        fill: bool,
    ) -> Result {
        if fill {
            return self.inner.draw_rect(
                (ul.0 * KI, ul.1 * KI),
                (br.0 * KI + KI - 1, br.1 * KI + KI - 1),
                &style.color(),
                true,
            );
        }
        let corners = [ul, (br.0, ul.1), br, (ul.0, br.1), ul];
        for pair in corners.windows(2) {
            self.draw_line(pair[0], pair[1], style)?;
        }
        Ok(())
    }

    fn draw_path<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        path: I,
        style: &S,
    ) -> Result {
        let points: Vec<BackendCoord> = path.into_iter().collect();
        if points.len() == 2 && (points[0].0 == points[1].0 || points[0].1 == points[1].1) {
            return self.draw_line(points[0], points[1], style);
        }
        self.inner
            .draw_path(points.into_iter().map(centre), &stroke(style))
    }

    fn draw_circle<S: BackendStyle>(
        &mut self,
        c: BackendCoord,
        r: u32,
        style: &S,
        fill: bool,
    ) -> Result {
        self.inner
            .draw_circle(centre(c), r * K, &stroke(style), fill)
    }

    fn fill_polygon<S: BackendStyle, I: IntoIterator<Item = BackendCoord>>(
        &mut self,
        vert: I,
        style: &S,
    ) -> Result {
        self.inner
            .fill_polygon(vert.into_iter().map(centre), &style.color())
    }

    fn draw_text<T: BackendTextStyle>(
        &mut self,
        text: &str,
        style: &T,
        pos: BackendCoord,
    ) -> Result {
        let font = FontDesc::new(style.family(), style.size() * K as f64, style.style())
            .transform(style.transform());
        let scaled = TextStyle {
            font,
            color: style.color(),
            pos: style.anchor(),
        };
        self.inner
            .draw_text(text, &scaled, (pos.0 * KI, pos.1 * KI))
    }
}

/// Averages each `K`×`K` block of the RGB image `big` (`K * w` × `K * h`) into one pixel.
pub(crate) fn downsample(big: &[u8], (w, h): (u32, u32)) -> Vec<u8> {
    let (w, k) = (w as usize, K as usize);
    let big_row = w * k * 3;
    let mut out = Vec::with_capacity(w * h as usize * 3);
    let mut sums = vec![0u32; w * 3];
    for rows in big.chunks_exact(big_row * k) {
        sums.iter_mut().for_each(|s| *s = 0);
        for row in rows.chunks_exact(big_row) {
            for (x, block) in row.chunks_exact(3 * k).enumerate() {
                for (i, v) in block.iter().enumerate() {
                    sums[x * 3 + i % 3] += *v as u32;
                }
            }
        }
        let n = (k * k) as u32;
        out.extend(sums.iter().map(|s| ((s + n / 2) / n) as u8));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn downsample_averages_blocks() {
        // 2x1 output from a 4x2 input: left block black and white, right block all grey.
        let k = K as usize;
        assert_eq!(k, 2);
        let mut big = vec![0u8; 4 * 2 * 3];
        for (i, px) in big.chunks_exact_mut(3).enumerate() {
            let (x, y) = (i % 4, i / 4);
            let v = if x >= 2 {
                100
            } else if (x + y) % 2 == 0 {
                255
            } else {
                0
            };
            px.copy_from_slice(&[v, v, v]);
        }
        assert_eq!(downsample(&big, (2, 1)), vec![128, 128, 128, 100, 100, 100]);
    }
}

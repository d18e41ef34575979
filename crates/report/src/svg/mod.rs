//! A small SVG plotting kit, just enough for the report: linear and log axes with nice
//! ticks ([`axis`]), x–y plots with lines, step CDFs, reference lines and bands ([`plot`]),
//! and grouped bar charts ([`bars`]).
//!
//! Every plot is a self-contained `<svg>` element with inline styles: no script, no font
//! files, no external references. Coordinates that would not be finite are never written.

pub mod axis;
pub mod bars;
pub mod plot;

use std::fmt::Write as _;

use crate::escape::escape;

/// Colours for data series, distinguishable and readable on white (Okabe–Ito palette).
pub const PALETTE: [&str; 8] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442",
];

/// Colour of series `index`, cycling through [`PALETTE`].
pub fn color(index: usize) -> &'static str {
    PALETTE[index % PALETTE.len()]
}

/// Layout shared by every chart: outer size and the margins around the plot area (px).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Frame {
    /// Outer width.
    pub width: f64,
    /// Outer height.
    pub height: f64,
    /// Left margin (y tick labels and axis title).
    pub left: f64,
    /// Right margin (the legend).
    pub right: f64,
    /// Top margin (the title).
    pub top: f64,
    /// Bottom margin (x tick labels and axis title).
    pub bottom: f64,
}

impl Default for Frame {
    fn default() -> Self {
        Self {
            width: 760.0,
            height: 300.0,
            left: 64.0,
            right: 150.0,
            top: 34.0,
            bottom: 48.0,
        }
    }
}

impl Frame {
    /// Width of the plot area.
    pub fn plot_width(&self) -> f64 {
        (self.width - self.left - self.right).max(1.0)
    }

    /// Height of the plot area.
    pub fn plot_height(&self) -> f64 {
        (self.height - self.top - self.bottom).max(1.0)
    }

    /// Pixel x of a fraction of the plot width (clamped to the plot area).
    pub fn px(&self, fraction: f64) -> f64 {
        self.left + fraction.clamp(0.0, 1.0) * self.plot_width()
    }

    /// Pixel y of a fraction of the plot height, 0 at the bottom (clamped to the plot area).
    pub fn py(&self, fraction: f64) -> f64 {
        self.top + (1.0 - fraction.clamp(0.0, 1.0)) * self.plot_height()
    }
}

/// One entry of a legend.
#[derive(Debug, Clone, PartialEq)]
pub struct LegendEntry {
    /// Text shown (escaped when drawn).
    pub label: String,
    /// Swatch colour.
    pub color: String,
    /// Drawn as a dashed line rather than a solid one.
    pub dashed: bool,
    /// Drawn as a filled square (bars, bands) rather than a line.
    pub filled: bool,
}

/// A pixel coordinate as SVG text: one decimal; 0 for a non-finite input, which callers
/// filter out before (the fallback keeps a bug from writing `NaN` into a file).
pub fn coord(value: f64) -> String {
    if value.is_finite() {
        format!("{value:.1}")
    } else {
        "0".to_string()
    }
}

/// Opening tag of a chart with its accessible title.
pub(crate) fn open(out: &mut String, frame: &Frame, title: &str) {
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {w} {h}" width="{w}" height="{h}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title>"#,
        w = coord(frame.width),
        h = coord(frame.height),
        t = escape(title)
    );
    let _ = write!(
        out,
        r##"<rect x="0" y="0" width="{w}" height="{h}" fill="#fff"/><text x="{x}" y="20" font-size="14" font-weight="bold">{t}</text>"##,
        w = coord(frame.width),
        h = coord(frame.height),
        x = coord(frame.left),
        t = escape(title)
    );
}

/// Horizontal grid lines with their labels at `axis`'s ticks, drawn before the data.
pub(crate) fn y_grid(out: &mut String, frame: &Frame, axis: &axis::Axis) {
    for tick in axis.ticks() {
        let Some(fy) = axis.fraction(tick) else {
            continue;
        };
        let y = coord(frame.py(fy));
        let _ = write!(
            out,
            r##"<line x1="{l}" y1="{y}" x2="{r}" y2="{y}" stroke="#e4e4e4"/><text x="{lx}" y="{ty}" text-anchor="end">{label}</text>"##,
            l = coord(frame.px(0.0)),
            r = coord(frame.px(1.0)),
            lx = coord(frame.left - 6.0),
            ty = coord(frame.py(fy) + 4.0),
            label = escape(&axis.label(tick))
        );
    }
}

/// The legend, stacked in the right margin.
pub(crate) fn legend(out: &mut String, frame: &Frame, entries: &[LegendEntry]) {
    let x = frame.width - frame.right + 14.0;
    for (i, entry) in entries.iter().enumerate() {
        let y = frame.top + 8.0 + 18.0 * i as f64;
        let color = escape(&entry.color);
        if entry.filled {
            let _ = write!(
                out,
                r#"<rect x="{x}" y="{y}" width="18" height="10" fill="{color}"/>"#,
                x = coord(x),
                y = coord(y - 5.0)
            );
        } else {
            let dash = if entry.dashed {
                r#" stroke-dasharray="5 3""#
            } else {
                ""
            };
            let _ = write!(
                out,
                r#"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" stroke-width="2"{dash}/>"#,
                x1 = coord(x),
                x2 = coord(x + 18.0),
                y = coord(y)
            );
        }
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}">{label}</text>"#,
            x = coord(x + 24.0),
            y = coord(y + 4.0),
            label = escape(&entry.label)
        );
    }
}

/// A message centred in the plot area, for charts without data.
pub(crate) fn note(out: &mut String, frame: &Frame, text: &str) {
    let _ = write!(
        out,
        r##"<text x="{x}" y="{y}" text-anchor="middle" fill="#666">{t}</text>"##,
        x = coord(frame.left + frame.plot_width() / 2.0),
        y = coord(frame.top + frame.plot_height() / 2.0),
        t = escape(text)
    );
}

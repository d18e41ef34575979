//! An x–y chart: axes with ticks and grid, lines, step CDFs, reference lines, shaded bands,
//! a legend, all drawn into one `<svg>`.

use std::fmt::Write as _;

use super::axis::Axis;
use super::{Frame, LegendEntry, coord, legend, note, open, y_grid};
use crate::escape::escape;

/// An x–y chart being drawn. Layers are drawn in the order they are added.
#[derive(Debug, Clone)]
pub struct Plot {
    frame: Frame,
    title: String,
    x: Axis,
    x_label: String,
    y: Axis,
    y_label: String,
    layers: String,
    legend: Vec<LegendEntry>,
    note: Option<String>,
}

impl Plot {
    /// A chart titled `title` over the axes `x` and `y`, whose titles (with units) are
    /// `x_label` and `y_label`, in the default [`Frame`].
    pub fn new(title: &str, x: Axis, x_label: &str, y: Axis, y_label: &str) -> Self {
        Self {
            frame: Frame::default(),
            title: title.to_string(),
            x,
            x_label: x_label.to_string(),
            y,
            y_label: y_label.to_string(),
            layers: String::new(),
            legend: Vec::new(),
            note: None,
        }
    }

    /// The same chart in another frame (size and margins).
    pub fn with_frame(mut self, frame: Frame) -> Self {
        self.frame = frame;
        self
    }

    /// Width of the plot area in pixels: the useful number of buckets for downsampling.
    pub fn plot_width_px(&self) -> usize {
        self.frame.plot_width() as usize
    }

    /// Pixel position of a data point, if it has one on these axes.
    fn to_px(&self, x: f64, y: f64) -> Option<(f64, f64)> {
        let fx = self.x.fraction(x)?;
        let fy = self.y.fraction(y)?;
        Some((self.frame.px(fx), self.frame.py(fy)))
    }

    /// Shades the horizontal band between `y_from` and `y_to` (clipped to the axis) in
    /// `fill`, with a legend entry `label`.
    pub fn band(&mut self, y_from: f64, y_to: f64, fill: &str, label: &str) {
        let (Some(a), Some(b)) = (self.y.fraction(y_from), self.y.fraction(y_to)) else {
            return;
        };
        let (top, bottom) = (self.frame.py(a.max(b)), self.frame.py(a.min(b)));
        if bottom - top <= 0.0 {
            return;
        }
        let _ = write!(
            self.layers,
            r#"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="{fill}" fill-opacity="0.25"/>"#,
            x = coord(self.frame.left),
            y = coord(top),
            w = coord(self.frame.plot_width()),
            h = coord(bottom - top),
            fill = escape(fill)
        );
        self.legend.push(LegendEntry {
            label: label.to_string(),
            color: fill.to_string(),
            dashed: false,
            filled: true,
        });
    }

    /// A dashed vertical line at `x` across the plot (e.g. an SLA), in `color`; with a
    /// legend entry when `label` is given. Nothing is drawn for an `x` outside the axis.
    pub fn vline(&mut self, x: f64, color: &str, label: Option<&str>) {
        let Some(fx) = self.x.fraction(x).filter(|f| (0.0..=1.0).contains(f)) else {
            return;
        };
        let px = self.frame.px(fx);
        let _ = write!(
            self.layers,
            r#"<line x1="{x}" y1="{y1}" x2="{x}" y2="{y2}" stroke="{color}" stroke-width="1.5" stroke-dasharray="5 3"/>"#,
            x = coord(px),
            y1 = coord(self.frame.py(1.0)),
            y2 = coord(self.frame.py(0.0)),
            color = escape(color)
        );
        if let Some(label) = label {
            self.legend.push(LegendEntry {
                label: label.to_string(),
                color: color.to_string(),
                dashed: true,
                filled: false,
            });
        }
    }

    /// A dashed horizontal line at `y` across the plot (e.g. an SLA), in `color`. Nothing
    /// is drawn for a `y` outside the axis.
    pub fn hline(&mut self, y: f64, color: &str) {
        let Some(fy) = self.y.fraction(y).filter(|f| (0.0..=1.0).contains(f)) else {
            return;
        };
        let py = self.frame.py(fy);
        let _ = write!(
            self.layers,
            r#"<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{color}" stroke-width="1" stroke-dasharray="5 3"/>"#,
            x1 = coord(self.frame.px(0.0)),
            x2 = coord(self.frame.px(1.0)),
            y = coord(py),
            color = escape(color)
        );
    }

    /// A small circle at each of `points` that has a position (a scatter).
    pub fn markers(&mut self, points: &[(f64, f64)], color: &str, label: &str) {
        let mut group = format!(r#"<g fill="{}" fill-opacity="0.7">"#, escape(color));
        for &(x, y) in points {
            if let Some((px, py)) = self.to_px(x, y) {
                let _ = write!(
                    group,
                    r#"<circle cx="{}" cy="{}" r="2.5"/>"#,
                    coord(px),
                    coord(py)
                );
            }
        }
        group.push_str("</g>");
        self.layers.push_str(&group);
        self.legend.push(LegendEntry {
            label: label.to_string(),
            color: color.to_string(),
            dashed: false,
            filled: true,
        });
    }

    /// A line through `points` in order, broken where a point has no position (non-finite
    /// or not positive on a log axis).
    pub fn line(&mut self, points: &[(f64, f64)], color: &str, label: &str) {
        let mut segments: Vec<String> = Vec::new();
        let mut current = String::new();
        for &(x, y) in points {
            match self.to_px(x, y) {
                Some((px, py)) => {
                    let _ = write!(current, "{},{} ", coord(px), coord(py));
                }
                None if !current.is_empty() => segments.push(std::mem::take(&mut current)),
                None => {}
            }
        }
        if !current.is_empty() {
            segments.push(current);
        }
        for segment in segments {
            let _ = write!(
                self.layers,
                r#"<polyline points="{p}" fill="none" stroke="{color}" stroke-width="1.5" stroke-linejoin="round"/>"#,
                p = segment.trim_end(),
                color = escape(color)
            );
        }
        self.push_line_legend(label, color);
    }

    /// The empirical CDF of `values` as a step line (y from 0 to 1): the fraction of values
    /// at or below each x. Values without a position on the x axis are left out; steps
    /// that fall on the same pixel column are merged, so the path stays small for any
    /// number of values while the drawn curve is exact at pixel resolution.
    pub fn step_cdf(&mut self, values: &[f64], color: &str, label: &str) {
        let mut xs: Vec<f64> = values
            .iter()
            .filter_map(|v| self.x.fraction(*v).map(|f| self.frame.px(f)))
            .collect();
        if xs.is_empty() {
            self.push_line_legend(label, color);
            return;
        }
        xs.sort_by(f64::total_cmp);
        let n = xs.len() as f64;
        let mut path = format!("M{},{}", coord(xs[0]), coord(self.frame.py(0.0)));
        let mut i = 0;
        while i < xs.len() {
            let column = (xs[i] * 2.0).round();
            let mut j = i;
            while j + 1 < xs.len() && (xs[j + 1] * 2.0).round() == column {
                j += 1;
            }
            let fraction = (j + 1) as f64 / n;
            let _ = write!(path, "H{}V{}", coord(xs[j]), coord(self.frame.py(fraction)));
            i = j + 1;
        }
        let _ = write!(path, "H{}", coord(self.frame.px(1.0)));
        let _ = write!(
            self.layers,
            r#"<path d="{path}" fill="none" stroke="{color}" stroke-width="1.5"/>"#,
            color = escape(color)
        );
        self.push_line_legend(label, color);
    }

    /// A message in the middle of the plot area (e.g. that there is no data).
    pub fn note(&mut self, text: &str) {
        self.note = Some(text.to_string());
    }

    fn push_line_legend(&mut self, label: &str, color: &str) {
        self.legend.push(LegendEntry {
            label: label.to_string(),
            color: color.to_string(),
            dashed: false,
            filled: false,
        });
    }

    /// The finished `<svg>` element.
    pub fn finish(self) -> String {
        let f = &self.frame;
        let mut out = String::new();
        open(&mut out, f, &self.title);
        // Grid and tick labels first, so the data is drawn over them.
        for tick in self.x.ticks() {
            let Some(fx) = self.x.fraction(tick) else {
                continue;
            };
            let x = coord(f.px(fx));
            let _ = write!(
                out,
                r##"<line x1="{x}" y1="{t}" x2="{x}" y2="{b}" stroke="#e4e4e4"/><text x="{x}" y="{ly}" text-anchor="middle">{label}</text>"##,
                t = coord(f.py(1.0)),
                b = coord(f.py(0.0)),
                ly = coord(f.py(0.0) + 15.0),
                label = escape(&self.x.label(tick))
            );
        }
        y_grid(&mut out, f, &self.y);
        out.push_str(&self.layers);
        let _ = write!(
            out,
            r##"<rect x="{x}" y="{y}" width="{w}" height="{h}" fill="none" stroke="#333"/>"##,
            x = coord(f.left),
            y = coord(f.top),
            w = coord(f.plot_width()),
            h = coord(f.plot_height())
        );
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle">{label}</text>"#,
            x = coord(f.left + f.plot_width() / 2.0),
            y = coord(f.height - 10.0),
            label = escape(&self.x_label)
        );
        let (yx, yy) = (14.0, f.top + f.plot_height() / 2.0);
        let _ = write!(
            out,
            r#"<text x="{x}" y="{y}" text-anchor="middle" transform="rotate(-90 {x} {y})">{label}</text>"#,
            x = coord(yx),
            y = coord(yy),
            label = escape(&self.y_label)
        );
        legend(&mut out, f, &self.legend);
        if let Some(text) = &self.note {
            note(&mut out, f, text);
        }
        out.push_str("</svg>");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_breaks_at_points_without_a_position() {
        let mut plot = Plot::new(
            "t",
            Axis::linear(0.0, 10.0),
            "x",
            Axis::log(1.0, 100.0),
            "y",
        );
        plot.line(
            &[
                (0.0, 1.0),
                (1.0, 10.0),
                (2.0, f64::NAN),
                (3.0, 0.0),
                (4.0, 5.0),
                (5.0, 6.0),
            ],
            "#000",
            "series",
        );
        let svg = plot.finish();
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(!svg.contains("NaN"));
    }

    #[test]
    fn the_cdf_path_is_bounded_by_pixel_columns() {
        let values: Vec<f64> = (1..=100_000).map(|i| i as f64 / 100.0).collect();
        let mut plot = Plot::new(
            "t",
            Axis::log(0.01, 1000.0),
            "ms",
            Axis::linear(0.0, 1.0),
            "",
        );
        let width = plot.plot_width_px();
        plot.step_cdf(&values, "#000", "all");
        let svg = plot.finish();
        let steps = svg.matches('V').count();
        assert!(steps <= 2 * width + 2, "{steps} steps for {width} px");
        // The curve ends at fraction 1, the top of the plot area.
        let top = coord(Frame::default().py(1.0));
        assert!(svg.contains(&format!("V{top}H")), "{svg}");
    }

    #[test]
    fn a_band_outside_the_axis_is_clipped_and_a_vline_outside_dropped() {
        let mut plot = Plot::new("t", Axis::linear(0.0, 1.0), "", Axis::linear(0.0, 1.0), "");
        plot.band(0.6, 5.0, "#f00", "critical");
        plot.vline(7.0, "#00f", Some("SLA"));
        let svg = plot.finish();
        let frame = Frame::default();
        let expected_top = format!(r#"y="{}""#, coord(frame.py(1.0)));
        assert!(svg.contains(&expected_top));
        assert!(!svg.contains("stroke-dasharray=\"5 3\"/>"));
    }
}

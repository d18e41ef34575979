//! SVG plot of a soak's health curves (plotters, SVG backend, no system fonts needed).

use plotters::prelude::*;

use crate::soak::SoakResult;

/// Errors of plotting.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the soak plot: {0}")]
pub struct PlotError(String);

fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// The health score (100 · (1 − LDTI)) over simulated hours, with and without adaptive
/// compensation, as an SVG document.
pub fn soak_svg(r: &SoakResult) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 480)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo = r
            .compensated
            .points
            .iter()
            .chain(&r.uncompensated.points)
            .map(|p| p.score)
            .fold(100.0_f64, f64::min);
        let y_min = (lo - 5.0).clamp(0.0, 95.0).floor();
        let mut chart = ChartBuilder::on(&root)
            .caption(
                format!(
                    "simulated soak: {} ({} h) - health score = 100·(1 − LDTI)",
                    r.scenario, r.hours
                ),
                ("sans-serif", 18),
            )
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(48)
            .build_cartesian_2d(0.0..r.hours, y_min..100.0)
            .map_err(err)?;
        chart
            .configure_mesh()
            .x_desc("simulated hours")
            .y_desc("health score")
            .draw()
            .map_err(err)?;
        let series = [
            ("uncompensated", &r.uncompensated, RGBColor(200, 60, 40)),
            ("compensated", &r.compensated, RGBColor(30, 100, 200)),
        ];
        for (name, run, color) in series {
            chart
                .draw_series(LineSeries::new(
                    run.points.iter().map(|p| (p.hour, p.score)),
                    &color,
                ))
                .map_err(err)?
                .label(format!(
                    "{name}: {:.1} → {:.1} ({:+.1} %)",
                    run.summary.start_score, run.summary.end_score, -run.summary.decay_pct
                ))
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()
            .map_err(err)?;
        root.present().map_err(err)?;
    }
    Ok(svg)
}

//! SVG plot of a soak's health curves (plotters, SVG backend, no system fonts needed).

use plotters::prelude::*;

use crate::soak::{Arm, SoakResult};

/// Errors of plotting.
#[derive(Debug, thiserror::Error)]
#[error("cannot draw the soak plot: {0}")]
pub struct PlotError(String);

fn err<E: std::fmt::Debug>(e: E) -> PlotError {
    PlotError(format!("{e:?}"))
}

/// The on-time rate of each arm over simulated hours, as an SVG document. The caption
/// names the assumptions beyond the simulated mechanisms ("no assumptions" by default).
pub fn soak_svg(r: &SoakResult) -> Result<String, PlotError> {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (960, 520)).into_drawing_area();
        root.fill(&WHITE).map_err(err)?;
        let lo = Arm::ALL
            .iter()
            .flat_map(|a| &r.arm(*a).points)
            .map(|p| p.on_time_pct)
            .fold(100.0_f64, f64::min);
        let y_min = (lo - 5.0).clamp(0.0, 95.0).floor();
        let assumptions = if r.assumptions.is_empty() {
            "no assumptions: figures move only through the scenario's mechanisms".to_string()
        } else {
            format!("ASSUMED: {}", r.assumptions.join("; "))
        };
        let (top, body) = root.split_vertically(30);
        top.draw(&Text::new(
            assumptions,
            (12, 8),
            ("sans-serif", 14).into_font().color(&BLACK),
        ))
        .map_err(err)?;
        let mut chart = ChartBuilder::on(&body)
            .caption(
                format!(
                    "simulated soak: {} ({} h) - jobs on time per window",
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
            .y_desc("on time, %")
            .draw()
            .map_err(err)?;
        let colors = [
            RGBColor(200, 60, 40),
            RGBColor(120, 120, 120),
            RGBColor(30, 100, 200),
        ];
        for (arm, color) in Arm::ALL.into_iter().zip(colors) {
            let run = r.arm(arm);
            chart
                .draw_series(LineSeries::new(
                    run.points.iter().map(|p| (p.hour, p.on_time_pct)),
                    &color,
                ))
                .map_err(err)?
                .label(format!(
                    "{}: {:.1} % on time, {:.2} % dropped, LDTI {:.3}",
                    arm.as_str(),
                    run.summary.on_time_pct,
                    run.summary.drops_pct,
                    run.summary.ldti_mean
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

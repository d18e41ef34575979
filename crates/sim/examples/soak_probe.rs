//! Prints the S10 table of a short soak (a development probe).
fn main() {
    let name = std::env::args().nth(1).unwrap_or_else(|| "car".into());
    let hours: f64 = std::env::args()
        .nth(2)
        .and_then(|h| h.parse().ok())
        .unwrap_or(72.0);
    let s = mmsched_scenario::Scenario::load(&name).expect("scenario");
    let p = mmsched_sim::profile::Profile::reference();
    let pol = mmsched_core::policy::Policy::default();
    let cfg = mmsched_sim::soak::SoakConfig {
        hours,
        ..Default::default()
    };
    let t = std::time::Instant::now();
    let r = mmsched_sim::soak::run(&s, &p, &pol, &cfg, || {}).expect("soak");
    println!(
        "{name}: {:.1}s comp {:?}\n uncomp {:?}",
        t.elapsed().as_secs_f64(),
        r.compensated.summary,
        r.uncompensated.summary
    );
    for (i, (c, u)) in r
        .compensated
        .points
        .iter()
        .zip(&r.uncompensated.points)
        .enumerate()
    {
        if i % 90 == 0 {
            println!(
                "{:5.1}h comp {:6.2} f={:.3} unc {:6.2} p99 {:6.1} drift {:5.1} thr {:.3}",
                c.hour,
                c.score,
                c.factor,
                u.score,
                u.vision_p99_ms,
                u.drift_ppm,
                u.throughput_ratio
            );
        }
    }
}

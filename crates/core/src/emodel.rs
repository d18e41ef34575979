//! Speech quality from delay and loss: the ITU-T G.107 E-model, reduced to the two
//! impairments a playout buffer moves.
//!
//! ```text
//! R = 93.2 − Id(Ta) − Ie,eff(Ppl)
//! Id      = 0.024·Ta + 0.11·(Ta − 177.3)·H(Ta − 177.3)           (Cole–Rosenbluth fit of G.107's Id)
//! Ie,eff  = Ie + (95 − Ie) · Ppl / (Ppl / BurstR + Bpl)           (G.107 §7.4)
//! MOS     = 1 + 0.035·R + R·(R − 60)·(100 − R)·7·10⁻⁶             (0 < R < 100)
//! ```
//!
//! 93.2 is G.107's R with all other parameters at their defaults (Ro − Is). `Ta` is the
//! mean one-way mouth-to-ear delay in ms, `Ppl` the frame loss in percent (late packets count
//! as lost), and `BurstR = 1` (random loss). The codec's loss robustness comes from ITU-T
//! G.113 Appendix I; G.711 with packet-loss concealment (Ie = 0, Bpl = 25.1) is the
//! narrowband reference.
//!
//! The playout controller ([`crate::playout`]) chooses its delay by this model, and the
//! simulator scores every buffer with it: one formula for both.

/// Loss robustness of a codec: the E-model's equipment impairment and packet-loss
/// robustness factors.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LossRobustness {
    /// Equipment impairment factor Ie (no loss).
    pub ie: f64,
    /// Packet-loss robustness factor Bpl.
    pub bpl: f64,
}

impl LossRobustness {
    /// G.711 with packet-loss concealment (G.113 Appendix I): Ie = 0, Bpl = 25.1.
    pub const G711_PLC: Self = Self { ie: 0.0, bpl: 25.1 };
}

/// G.107's R with every parameter but delay and loss at its default (Ro − Is).
pub const R_DEFAULT: f64 = 93.2;

/// The delay impairment Id for a mean mouth-to-ear delay of `ta_ms` milliseconds.
pub fn delay_impairment(ta_ms: f64) -> f64 {
    let ta = ta_ms.max(0.0);
    0.024 * ta + if ta > 177.3 { 0.11 * (ta - 177.3) } else { 0.0 }
}

/// The effective equipment impairment Ie,eff for a frame loss of `loss_pct` percent.
pub fn loss_impairment(codec: LossRobustness, loss_pct: f64) -> f64 {
    let ppl = loss_pct.clamp(0.0, 100.0);
    codec.ie + (95.0 - codec.ie) * ppl / (ppl + codec.bpl)
}

/// The rating factor R for a mean mouth-to-ear delay `ta_ms` and frame loss `loss_pct`.
pub fn r_factor(codec: LossRobustness, ta_ms: f64, loss_pct: f64) -> f64 {
    R_DEFAULT - delay_impairment(ta_ms) - loss_impairment(codec, loss_pct)
}

/// MOS (1 … 4.5) from a rating factor R (G.107 Annex B).
pub fn mos_from_r(r: f64) -> f64 {
    if r <= 0.0 {
        1.0
    } else if r >= 100.0 {
        4.5
    } else {
        1.0 + 0.035 * r + r * (r - 60.0) * (100.0 - r) * 7e-6
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: LossRobustness = LossRobustness::G711_PLC;

    #[test]
    fn known_points() {
        // No delay, no loss: R = 93.2, MOS ≈ 4.41 (G.107's best narrowband value).
        assert!((mos_from_r(r_factor(C, 0.0, 0.0)) - 4.41).abs() < 0.01);
        // 5 % random loss with PLC: Ie,eff = 95·5/30.1 = 15.78.
        assert!((r_factor(C, 0.0, 5.0) - (93.2 - 15.781)).abs() < 0.01);
        // Delay alone beyond 177.3 ms hurts more steeply.
        let a = r_factor(C, 170.0, 0.0) - r_factor(C, 180.0, 0.0);
        let b = r_factor(C, 200.0, 0.0) - r_factor(C, 210.0, 0.0);
        assert!(b > a);
        assert_eq!(mos_from_r(-5.0), 1.0);
        assert_eq!(mos_from_r(120.0), 4.5);
        // MOS falls monotonically with loss.
        let mut prev = 5.0;
        for loss in 0..30 {
            let m = mos_from_r(r_factor(C, 80.0, loss as f64));
            assert!(m < prev);
            prev = m;
        }
    }
}

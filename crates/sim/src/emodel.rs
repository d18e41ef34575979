//! Speech quality from delay and loss: the ITU-T G.107 E-model, reduced to the two
//! impairments the simulator varies.
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
//! as lost), and `BurstR = 1` (random loss). The codec impairment values come from ITU-T
//! G.113 Appendix I: **G.711 with packet-loss concealment: Ie = 0, Bpl = 25.1**, the
//! narrowband reference; it is what [`Codec::g711_plc`] holds and what the `sim jitter`
//! table uses. For 20 ms frames the codec adds 20 ms of packetisation and ~5 ms of
//! processing, so `Ta = 25 ms + network delay + playout delay`.

/// Codec impairment values of the E-model.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Codec {
    /// Name for output.
    pub name: &'static str,
    /// Equipment impairment factor Ie (no loss).
    pub ie: f64,
    /// Packet-loss robustness factor Bpl.
    pub bpl: f64,
    /// Delay the codec adds (packetisation + processing), in ms.
    pub codec_delay_ms: f64,
}

impl Codec {
    /// G.711 with packet-loss concealment (G.113 Appendix I): Ie = 0, Bpl = 25.1.
    pub fn g711_plc() -> Self {
        Self {
            name: "G.711+PLC",
            ie: 0.0,
            bpl: 25.1,
            codec_delay_ms: 25.0,
        }
    }
}

/// The rating factor R for a mean one-way delay `delay_ms` and frame loss `loss_pct`.
pub fn r_factor(codec: &Codec, delay_ms: f64, loss_pct: f64) -> f64 {
    let ta = delay_ms.max(0.0);
    let id = 0.024 * ta + if ta > 177.3 { 0.11 * (ta - 177.3) } else { 0.0 };
    let ppl = loss_pct.clamp(0.0, 100.0);
    let ie_eff = codec.ie + (95.0 - codec.ie) * ppl / (ppl + codec.bpl);
    93.2 - id - ie_eff
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

/// MOS for a mean one-way delay `delay_ms` and frame loss `loss_pct`.
pub fn mos(codec: &Codec, delay_ms: f64, loss_pct: f64) -> f64 {
    mos_from_r(r_factor(codec, delay_ms, loss_pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_points() {
        let c = Codec::g711_plc();
        // No delay, no loss: R = 93.2, MOS ≈ 4.41 (G.107's best narrowband value).
        assert!((mos(&c, 0.0, 0.0) - 4.41).abs() < 0.01);
        // 5 % random loss with PLC: Ie,eff = 95·5/30.1 = 15.78.
        assert!((r_factor(&c, 0.0, 5.0) - (93.2 - 15.781)).abs() < 0.01);
        // Delay alone beyond 177.3 ms hurts more steeply.
        let a = r_factor(&c, 170.0, 0.0) - r_factor(&c, 180.0, 0.0);
        let b = r_factor(&c, 200.0, 0.0) - r_factor(&c, 210.0, 0.0);
        assert!(b > a);
        assert_eq!(mos_from_r(-5.0), 1.0);
        assert_eq!(mos_from_r(120.0), 4.5);
        // MOS falls monotonically with loss.
        let mut prev = 5.0;
        for loss in 0..30 {
            let m = mos(&c, 80.0, loss as f64);
            assert!(m < prev);
            prev = m;
        }
    }
}

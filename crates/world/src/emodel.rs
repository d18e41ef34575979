//! Speech quality from delay and loss: the ITU-T G.107 E-model of `mmsched-core`
//! ([`mmsched_core::emodel`], the one the playout controller optimises), with the codec
//! figures the simulator reports.
//!
//! `Ta` is the mean one-way mouth-to-ear delay in ms and the loss the frame loss in
//! percent (late packets count as lost). The `sim jitter` table uses **G.711 with
//! packet-loss concealment: Ie = 0, Bpl = 25.1** (ITU-T G.113 Appendix I). For 20 ms frames
//! the codec adds 20 ms of packetisation and ~5 ms of processing, so
//! `Ta = 25 ms + network delay + playout delay`.

use mmsched_core::emodel::{self as core_emodel, LossRobustness};

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
        let LossRobustness { ie, bpl } = LossRobustness::G711_PLC;
        Self {
            name: "G.711+PLC",
            ie,
            bpl,
            codec_delay_ms: 25.0,
        }
    }

    /// The loss robustness factors, as the core's E-model takes them.
    pub fn robustness(&self) -> LossRobustness {
        LossRobustness {
            ie: self.ie,
            bpl: self.bpl,
        }
    }
}

/// The rating factor R for a mean one-way delay `delay_ms` and frame loss `loss_pct`.
pub fn r_factor(codec: &Codec, delay_ms: f64, loss_pct: f64) -> f64 {
    core_emodel::r_factor(codec.robustness(), delay_ms, loss_pct)
}

/// MOS (1 … 4.5) from a rating factor R (G.107 Annex B).
pub fn mos_from_r(r: f64) -> f64 {
    core_emodel::mos_from_r(r)
}

/// MOS for a mean one-way delay `delay_ms` and frame loss `loss_pct`.
pub fn mos(codec: &Codec, delay_ms: f64, loss_pct: f64) -> f64 {
    mos_from_r(r_factor(codec, delay_ms, loss_pct))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reference_codec_scores_as_g107_says() {
        let c = Codec::g711_plc();
        // No delay, no loss: R = 93.2, MOS ≈ 4.41 (G.107's best narrowband value).
        assert!((mos(&c, 0.0, 0.0) - 4.41).abs() < 0.01);
        // 5 % random loss with PLC: Ie,eff = 95·5/30.1 = 15.78.
        assert!((r_factor(&c, 0.0, 5.0) - (93.2 - 15.781)).abs() < 0.01);
    }
}

//! Seeded random streams: one seed reproduces a whole run or simulation bit for bit.

use rand::rngs::Xoshiro256PlusPlus;
use rand::{Rng, SeedableRng};

/// The generator of every seeded model: xoshiro256++, portable and reproducible across platforms and
/// versions (unlike `StdRng`, whose algorithm may change).
pub type SeededRng = Xoshiro256PlusPlus;

/// An independent random stream for one purpose (`stream` = a stable small number per
/// stream / model / experiment) derived from the run's seed, so that adding a stream does
/// not change the numbers the others draw.
pub fn stream_rng(seed: u64, stream: u64) -> SeededRng {
    // SplitMix64 finaliser over (seed, stream) gives well-separated seeds.
    let mut z = seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    SeededRng::seed_from_u64(z)
}

/// Whether an event of probability `p` (clamped to [0, 1]) happens on this draw.
pub fn chance<R: Rng + ?Sized>(rng: &mut R, p: f64) -> bool {
    use rand::RngExt;
    rng.random::<f64>() < p.clamp(0.0, 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chance_happens_about_as_often_as_its_probability_and_never_outside_zero_and_one() {
        let mut rng = stream_rng(1, 2);
        let hits = (0..10_000).filter(|_| chance(&mut rng, 0.3)).count();
        assert!((2_800..3_200).contains(&hits), "{hits}");
        assert!((0..100).all(|_| !chance(&mut rng, -1.0) && chance(&mut rng, 2.0)));
    }
}

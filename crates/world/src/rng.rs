//! Seeded random streams: one seed reproduces a whole run or simulation bit for bit.

use rand::SeedableRng;
use rand::rngs::Xoshiro256PlusPlus;

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

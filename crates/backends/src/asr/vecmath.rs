//! Element-wise float32 kernels of the Whisper encoder, written so that the compiler
//! vectorises them (no libm calls, no branches in the inner loops): `exp`, GELU, a row's
//! softmax weights and layer norm.
//!
//! Why not libm: the encoder's attention takes 54 million exponentials per 30 s window and
//! its MLPs 9 million error functions; libm's scalar `expf` and `erff` alone took 7 % of a
//! window on ggml. The approximations here are within a few float32 ulps (tests below).

/// Lanes of the partial sums and maxima (one AVX register of f32).
const LANES: usize = 8;

/// `e^x` for float32, within 2 ulps over the range where the result is a normal number;
/// below it the result is 0, above it `f32::MAX`-ish (inputs here are logits minus their
/// maximum, and GELU arguments, far inside the range).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    // Cephes' expf: e^x = 2^n · e^r with n = round(x / ln 2), |r| ≤ ln 2 / 2, e^r by a
    // degree-6 polynomial; ln 2 split in two parts so that r stays exact.
    const LOG2E: f32 = std::f32::consts::LOG2_E;
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let x = x.clamp(-87.0, 88.0);
    let n = (x * LOG2E + 0.5).floor();
    let r = x - n * LN2_HI - n * LN2_LO;
    let p = 1.987_569_1e-4_f32;
    let p = p * r + 1.398_199_9e-3;
    let p = p * r + 8.333_452e-3;
    let p = p * r + 4.166_579_6e-2;
    let p = p * r + 1.666_666_5e-1;
    let p = p * r + 0.5;
    let e_r = p * r * r + r + 1.0;
    // 2^n from its exponent bits; n is in [-126, 127] after the clamp. Adding 2^23 puts
    // the integer n + 127 in the low mantissa bits, and the shift moves it into the
    // exponent: unlike a float-to-int cast, this vectorises.
    let two_n = f32::from_bits((n + (8_388_608.0 + 127.0)).to_bits() << 23);
    e_r * two_n
}

/// The error function, within 2e-7 of the exact value (Abramowitz and Stegun 7.1.26,
/// with [`exp`]).
#[inline(always)]
pub fn erf(x: f32) -> f32 {
    let a = x.abs();
    let t = 1.0 / (1.0 + 0.327_591_1 * a);
    let poly = t
        * (0.254_829_6
            + t * (-0.284_496_74 + t * (1.421_413_7 + t * (-1.453_152_1 + t * 1.061_405_4))));
    let y = 1.0 - poly * exp(-a * a);
    y.copysign(x)
}

/// GELU with the exact error function, as Whisper's reference uses, in place.
pub fn gelu(xs: &mut [f32]) {
    for x in xs {
        *x = 0.5 * *x * (1.0 + erf(*x * std::f32::consts::FRAC_1_SQRT_2));
    }
}

/// The largest value of `xs` (negative infinity when empty).
fn max(xs: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (m, &x) in lanes.iter_mut().zip(c) {
            *m = if x > *m { x } else { *m };
        }
    }
    let m = tail.iter().fold(f32::NEG_INFINITY, |m, &x| m.max(x));
    lanes.iter().fold(m, |m, &x| m.max(x))
}

/// The sum of `xs`.
fn sum(xs: &[f32]) -> f32 {
    let mut lanes = [0f32; LANES];
    let chunks = xs.chunks_exact(LANES);
    let tail = chunks.remainder();
    for c in chunks {
        for (s, &x) in lanes.iter_mut().zip(c) {
            *s += x;
        }
    }
    lanes.iter().sum::<f32>() + tail.iter().sum::<f32>()
}

/// `e^(x − max)` of one row in place, returning the row's sum: dividing by it gives the
/// softmax. The division is left to the caller, which can apply it to fewer values (an
/// attention's output row instead of its `n` weights), saving a pass over the weights.
pub fn exp_shifted(row: &mut [f32]) -> f32 {
    let m = max(row);
    let mut lanes = [0f32; LANES];
    let mut chunks = row.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for (s, x) in lanes.iter_mut().zip(c) {
            *x = exp(*x - m);
            *s += *x;
        }
    }
    let mut tail = 0.0;
    for x in chunks.into_remainder() {
        *x = exp(*x - m);
        tail += *x;
    }
    lanes.iter().sum::<f32>() + tail
}

/// Layer norm of each `w.len()`-wide row of `src` into `dst`, with Whisper's epsilon.
pub fn layer_norm(src: &[f32], dst: &mut [f32], w: &[f32], b: &[f32]) {
    const EPS: f32 = 1e-5;
    let n = w.len();
    for (x, y) in src.chunks_exact(n).zip(dst.chunks_exact_mut(n)) {
        let mean = sum(x) / n as f32;
        for (y, &x) in y.iter_mut().zip(x) {
            *y = x - mean;
        }
        let var = y.iter().map(|d| d * d).sum::<f32>() / n as f32;
        let inv = 1.0 / (var + EPS).sqrt();
        for ((y, &w), &b) in y.iter_mut().zip(w).zip(b) {
            *y = *y * inv * w + b;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs() as u32
    }

    #[test]
    fn exp_is_within_two_ulps_of_libm() {
        let mut worst = 0;
        let mut x = -87.0f32;
        while x < 88.0 {
            worst = worst.max(ulps(exp(x), x.exp()));
            x += 0.0137;
        }
        assert!(worst <= 2, "worst error {worst} ulps");
        assert_eq!(exp(0.0), 1.0);
        assert_eq!(exp(-1e30), exp(-87.0), "far below the range it clamps");
    }

    #[test]
    fn erf_matches_known_values() {
        // erf values from Abramowitz and Stegun's table 7.1.
        for (x, want) in [
            (0.0f32, 0.0f32),
            (0.5, 0.520_499_9),
            (1.0, 0.842_700_8),
            (2.0, 0.995_322_3),
            (-1.0, -0.842_700_8),
            (4.0, 0.999_999_98),
        ] {
            assert!((erf(x) - want).abs() < 3e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn gelu_is_x_times_the_normal_cdf() {
        let mut xs = [-3.0f32, -1.0, 0.0, 0.5, 2.0];
        gelu(&mut xs);
        // x · Φ(x) from the normal table: Φ(−3) = 0.001350, Φ(−1) = 0.158655,
        // Φ(0.5) = 0.691462, Φ(2) = 0.977250.
        let want = [-0.004_050, -0.158_655, 0.0, 0.345_731, 1.954_5];
        for (g, w) in xs.iter().zip(want) {
            assert!((g - w).abs() < 2e-6, "{xs:?} against {want:?}");
        }
    }

    #[test]
    fn shifted_exponentials_divided_by_their_sum_are_the_softmax() {
        let mut row: Vec<f32> = (0..37).map(|i| (i as f32 * 0.7).sin() * 20.0).collect();
        let before = row.clone();
        let sum = exp_shifted(&mut row);
        let m = before.iter().cloned().fold(f32::NEG_INFINITY, f32::max);
        let e: Vec<f32> = before.iter().map(|x| (x - m).exp()).collect();
        let naive_sum: f32 = e.iter().sum();
        assert!(
            (sum - naive_sum).abs() < 1e-5 * naive_sum,
            "{sum} against {naive_sum}"
        );
        for (a, b) in row.iter().zip(&e) {
            assert!((a / sum - b / naive_sum).abs() < 1e-6, "{a} against {b}");
        }
    }

    #[test]
    fn layer_norm_centres_and_scales_each_row() {
        let src = [1.0f32, 2.0, 3.0, 4.0, 10.0, 10.0, 10.0, 14.0];
        let mut dst = [0f32; 8];
        layer_norm(&src, &mut dst, &[1.0, 1.0, 2.0, 1.0], &[0.0, 0.0, 0.0, 1.0]);
        // Row 1: mean 2.5, variance 1.25; row 2: mean 11, variance 3.
        let s1 = 1.0 / (1.25f32 + 1e-5).sqrt();
        let s2 = 1.0 / (3.0f32 + 1e-5).sqrt();
        let want = [
            -1.5 * s1,
            -0.5 * s1,
            2.0 * 0.5 * s1,
            1.5 * s1 + 1.0,
            -s2,
            -s2,
            -2.0 * s2,
            3.0 * s2 + 1.0,
        ];
        for (a, b) in dst.iter().zip(want) {
            assert!((a - b).abs() < 1e-5, "{dst:?} against {want:?}");
        }
    }
}

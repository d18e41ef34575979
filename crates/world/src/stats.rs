//! Small statistics helpers: exact percentiles over collected samples.

/// The `q` quantile (0 ≤ q ≤ 1, nearest rank) of `values`; reorders them in place (a
/// selection, linear time). Returns 0 for an empty slice.
pub fn quantile(values: &mut [f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let rank = (q.clamp(0.0, 1.0) * values.len() as f64).ceil() as usize;
    let (_, v, _) = values.select_nth_unstable_by(rank.clamp(1, values.len()) - 1, f64::total_cmp);
    *v
}

/// Mean of `values` (0 for an empty slice).
pub fn mean(values: &[f64]) -> f64 {
    if values.is_empty() {
        0.0
    } else {
        values.iter().sum::<f64>() / values.len() as f64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&mut v, 0.99), 99.0);
        assert_eq!(quantile(&mut v, 0.0), 1.0);
        assert_eq!(quantile(&mut v, 1.0), 100.0);
        assert_eq!(quantile(&mut [], 0.5), 0.0);
        assert_eq!(mean(&[1.0, 3.0]), 2.0);
    }
}

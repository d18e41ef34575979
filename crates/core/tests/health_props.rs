//! Property tests of the vision branch's loss window against a plain model: the outcomes
//! of every frame that ended, kept in full.

use mmsched_core::health::{CAMERA_RATE_DIVISOR, LOSS_WINDOW, RecentLosses};
use proptest::prelude::*;

proptest! {
    #[test]
    fn the_window_counts_the_losses_among_the_last_frames(
        outcomes in proptest::collection::vec(any::<bool>(), 0..64),
    ) {
        let mut window = RecentLosses::default();
        for (i, &lost) in outcomes.iter().enumerate() {
            window.record(lost);
            let seen = &outcomes[..=i];
            let last = &seen[seen.len().saturating_sub(LOSS_WINDOW as usize)..];
            let lost_in_last = last.iter().filter(|&&l| l).count() as u32;
            prop_assert_eq!(window.count(), lost_in_last);
            prop_assert_eq!(
                window.behind(),
                lost_in_last * CAMERA_RATE_DIVISOR >= LOSS_WINDOW
            );
        }
    }
}

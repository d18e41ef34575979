//! Word error rate, for judging transcripts: the scoring functions of
//! [`mmsched_core::score`], where every judgement of a result against the truth lives.

pub use mmsched_core::score::{word_error_rate, words as normalise};

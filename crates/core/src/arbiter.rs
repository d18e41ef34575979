//! The dynamic priority arbitration engine (S2). Implementation in progress.

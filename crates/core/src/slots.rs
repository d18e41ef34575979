//! The time-slot reservation layer (S1). Implementation in progress.

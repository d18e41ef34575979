//! Declares the `loom` cfg so `#[cfg(loom)]` is a known configuration.
fn main() {
    println!("cargo::rustc-check-cfg=cfg(loom)");
}

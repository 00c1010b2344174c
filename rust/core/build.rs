//! Picks the vector fast paths this build compiles.
//!
//! `fast_x86_64` (SSE2/AVX2) or `fast_aarch64` (NEON) follows the target
//! architecture, unless `--cfg strands_offload_portable` is in RUSTFLAGS: then
//! only the portable paths are compiled, so that CI can test on x86_64 the code
//! that other architectures run. A cfg rather than a cargo feature because
//! features are additive: one crate in the graph asking for the fast paths must
//! not switch them back on for another that asked for the portable ones.

fn main() {
    println!("cargo::rustc-check-cfg=cfg(strands_offload_portable)");
    println!("cargo::rustc-check-cfg=cfg(fast_x86_64)");
    println!("cargo::rustc-check-cfg=cfg(fast_aarch64)");
    println!("cargo::rerun-if-changed=build.rs");
    // Cargo hands a build script the target's cfgs, RUSTFLAGS' `--cfg`s included.
    let portable = std::env::var_os("CARGO_CFG_STRANDS_OFFLOAD_PORTABLE").is_some();
    if portable {
        return;
    }
    match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
        Ok("x86_64") => println!("cargo::rustc-cfg=fast_x86_64"),
        Ok("aarch64") => println!("cargo::rustc-cfg=fast_aarch64"),
        _ => {}
    }
}

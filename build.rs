//! Lays out the functions the monitor runs side by side at the start of `.text`, in release artifacts only.
//!
//! `assets/hot-text.ld` (written by `scripts/hot_text.py`) is an INSERT linker script: it keeps the linker's
//! default layout and adds one output section, `.text.hot`, in front of `.text`, holding the functions that ran
//! when the monitor was traced (docs/performance.md). It is opt-in: only a release-profile Linux build with
//! `GPUSIGHT_HOT_TEXT=1` in its environment passes it, which `scripts/release.sh` sets for the wheels and tarballs;
//! debug and test builds, `cargo install` and a plain `cargo build --release` link without it (many of its
//! patterns pin exact symbol hashes and go stale after an edit, mold refuses it, valgrind names no function in
//! it). `scripts/hot_text_check.py` measures how much of it still matches after the release link.
//!
//! It also sets `cfg(gpusight_fixtures)` where `tests/fixtures` exists: in a checkout, not in the published crate,
//! which leaves the fixtures out; the unit tests that read them are compiled only with it, so the crate's own
//! `cargo test` builds and passes (scripts/check_package.sh runs it from the packaged `.crate`).

use std::path::Path;

/// The environment variable that asks for the layout (`scripts/release.sh` sets it to `1`).
const HOT_TEXT_VAR: &str = "GPUSIGHT_HOT_TEXT";

/// Whether the link gets `assets/hot-text.ld`: a Linux target, the release profile (Cargo's `PROFILE`, `debug`
/// for the dev and test profiles) and `GPUSIGHT_HOT_TEXT` set to anything but empty or `0`.
pub(crate) fn hot_text_wanted(target_os: Option<&str>, profile: Option<&str>, opt_in: Option<&str>) -> bool {
    target_os == Some("linux") && profile == Some("release") && opt_in.is_some_and(|v| !v.is_empty() && v != "0")
}

fn main() {
    println!("cargo:rerun-if-env-changed={HOT_TEXT_VAR}");
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else { return };
    println!("cargo::rustc-check-cfg=cfg(gpusight_fixtures)");
    println!("cargo:rerun-if-changed=tests/fixtures");
    if Path::new(&dir).join("tests").join("fixtures").is_dir() {
        println!("cargo:rustc-cfg=gpusight_fixtures");
    }
    let target_os = std::env::var("CARGO_CFG_TARGET_OS").ok();
    let profile = std::env::var("PROFILE").ok();
    let opt_in = std::env::var(HOT_TEXT_VAR).ok();
    if !hot_text_wanted(target_os.as_deref(), profile.as_deref(), opt_in.as_deref()) {
        return;
    }
    let script = Path::new(&dir).join("assets").join("hot-text.ld");
    println!("cargo:rerun-if-changed=assets/hot-text.ld");
    assert!(
        script.is_file(),
        "{HOT_TEXT_VAR} asks for the layout but {} is missing (the published crate leaves it out)",
        script.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
}

//! Lays out the functions the monitor runs side by side at the start of `.text` (Linux binaries only).
//!
//! `assets/hot-text.ld` (written by `scripts/hot_text.py`) is an INSERT linker script: it keeps the linker's
//! default layout and adds one output section, `.text.hot`, in front of `.text`, holding the functions that ran
//! when the monitor was traced. The kernel maps a file's cached pages around every page fault, so scattered code
//! keeps most of a binary resident; grouped, the resident text is about the code that runs (docs/performance.md).
//! GNU ld, lld (Rust's default on x86_64 Linux) and zig's linker (the release wheels) all take the script; it only
//! moves sections, so a stale script costs memory, never correctness. `GPUSIGHT_NO_HOT_TEXT=1` leaves it out.
//!
//! It also sets `cfg(gpusight_fixtures)` where `tests/fixtures` exists: in a checkout, not in the published crate,
//! which leaves the fixtures out; the unit tests that read them are compiled only with it, so the crate's own
//! `cargo test` builds and passes (scripts/check_package.sh runs it from the packaged `.crate`).

use std::path::Path;

fn main() {
    println!("cargo:rerun-if-changed=assets/hot-text.ld");
    println!("cargo:rerun-if-env-changed=GPUSIGHT_NO_HOT_TEXT");
    let linux = std::env::var("CARGO_CFG_TARGET_OS").is_ok_and(|os| os == "linux");
    let wanted = std::env::var_os("GPUSIGHT_NO_HOT_TEXT").is_none_or(|v| v.is_empty() || v == "0");
    let Ok(dir) = std::env::var("CARGO_MANIFEST_DIR") else { return };
    println!("cargo::rustc-check-cfg=cfg(gpusight_fixtures)");
    println!("cargo:rerun-if-changed=tests/fixtures");
    if Path::new(&dir).join("tests").join("fixtures").is_dir() {
        println!("cargo:rustc-cfg=gpusight_fixtures");
    }
    let script = Path::new(&dir).join("assets").join("hot-text.ld");
    if linux && wanted && script.is_file() {
        println!("cargo:rustc-link-arg-bins=-Wl,-T,{}", script.display());
    }
}

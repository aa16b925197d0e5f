//! The build script's decision on the binary layout: the linker script goes only to release-profile Linux links
//! that ask for it with `GPUSIGHT_HOT_TEXT` (scripts/release.sh), never to debug or test builds.

#[allow(dead_code, reason = "the build script's `main` is not called here, only its decision")]
#[path = "../../build.rs"]
mod build_rs;

use build_rs::hot_text_wanted;

#[test]
fn a_release_build_that_asks_gets_the_layout() {
    assert!(hot_text_wanted(Some("linux"), Some("release"), Some("1")));
    assert!(hot_text_wanted(Some("linux"), Some("release"), Some("yes")));
}

#[test]
fn debug_and_test_builds_never_get_it_even_when_asked() {
    // Cargo's PROFILE is `debug` for the dev and test profiles.
    assert!(!hot_text_wanted(Some("linux"), Some("debug"), Some("1")));
    assert!(!hot_text_wanted(Some("linux"), None, Some("1")));
}

#[test]
fn a_release_build_that_does_not_ask_links_without_it() {
    // `cargo install` and a plain `cargo build --release`.
    assert!(!hot_text_wanted(Some("linux"), Some("release"), None));
    assert!(!hot_text_wanted(Some("linux"), Some("release"), Some("")));
    assert!(!hot_text_wanted(Some("linux"), Some("release"), Some("0")));
}

#[test]
fn other_systems_never_get_it() {
    assert!(!hot_text_wanted(Some("macos"), Some("release"), Some("1")));
    assert!(!hot_text_wanted(None, Some("release"), Some("1")));
}

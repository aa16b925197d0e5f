//! The config file: `config.example.toml` is exactly the defaults, and bad files fail naming what is wrong.

use std::path::Path;

use gpusight::config::Config;

#[test]
fn the_example_config_equals_the_defaults() {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("config.example.toml"))
        .expect("config.example.toml is readable");
    let parsed = Config::parse(&text, Path::new("config.example.toml")).expect("the example parses");
    assert_eq!(parsed, Config::default());
}

#[test]
fn an_unknown_key_is_named() {
    let error = Config::parse("[thresholds]\nwindw_s = 10\n", Path::new("my.toml")).expect_err("unknown key");
    let message = error.to_string();
    assert!(message.contains("my.toml") && message.contains("windw_s"), "{message}");
    let error = Config::parse("[colors]\n", Path::new("my.toml")).expect_err("unknown section");
    assert!(error.to_string().contains("colors"), "{error}");
}

#[test]
fn a_wrong_type_is_named() {
    let error = Config::parse("[general]\ninterval_s = \"fast\"\n", Path::new("my.toml")).expect_err("wrong type");
    let message = error.to_string();
    assert!(message.contains("interval_s") || message.contains("general"), "{message}");
    assert!(message.contains("string"), "{message}");
}

#[test]
fn an_empty_file_is_the_defaults() {
    assert_eq!(Config::parse("", Path::new("empty.toml")).expect("empty parses"), Config::default());
}

#[test]
fn a_missing_file_is_an_error_with_its_path() {
    let error = Config::load(Path::new("/nonexistent/gpusight.toml")).expect_err("missing");
    assert!(error.to_string().contains("/nonexistent/gpusight.toml"), "{error}");
}

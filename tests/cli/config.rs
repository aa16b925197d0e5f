//! The config file: `config.example.toml` is exactly the defaults, and bad files fail naming what is wrong.

use std::path::Path;

use gpusight::config::Config;

use crate::common::repo_path;

#[test]
fn the_example_config_equals_the_defaults() {
    let text = std::fs::read_to_string(repo_path("config.example.toml")).expect("config.example.toml is readable");
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

#[test]
fn a_lenient_load_ignores_unknown_keys_naming_file_line_and_key() {
    let text = "[general]\ninterval_s = 2.0\nfrobnicate = 1\n\n[thresholds]\nwindw_s = 10\n[colors]\nred = 1\n";
    let loaded = Config::parse_lenient(text, Path::new("my.toml"), true).expect("unknown keys are not fatal");
    assert!((loaded.config.general.interval_s - 2.0).abs() < f64::EPSILON, "known keys still apply");
    assert_eq!(
        loaded.warnings,
        [
            "config file my.toml: line 3, unknown key general.frobnicate: ignored",
            "config file my.toml: line 6, unknown key thresholds.windw_s: ignored",
            "config file my.toml: line 7, unknown key colors: ignored",
        ]
    );
    // A clean file says nothing; [keys] is free-form (the keymap checks it), not unknown.
    let loaded = Config::parse_lenient("[keys]\nquit = [\"X\"]\n", Path::new("my.toml"), true).expect("clean");
    assert!(loaded.warnings.is_empty(), "{:?}", loaded.warnings);
}

#[test]
fn bad_values_fail_where_read_and_cosmetic_ones_warn_where_not() {
    // A bad [general] value stops every command.
    assert!(Config::parse_lenient("[general]\ninterval_s = \"fast\"\n", Path::new("my.toml"), false).is_err());
    // A bad [ui] value stops the monitor, which draws with it, and is a warning elsewhere.
    let text = "[ui]\ntheme = \"purple\"\n[general]\nhistory_s = 600\n";
    assert!(Config::parse_lenient(text, Path::new("my.toml"), true).is_err());
    let loaded = Config::parse_lenient(text, Path::new("my.toml"), false).expect("not read here");
    assert_eq!(loaded.config.ui, gpusight::config::ui::UiConfig::default());
    assert_eq!(loaded.config.general.history_s, 600);
    assert_eq!(loaded.warnings.len(), 1);
    assert!(loaded.warnings[0].contains("purple") && loaded.warnings[0].contains("[ui] is ignored here"));
}

#[test]
fn config_check_names_every_unknown_key_and_the_bad_value() {
    let problems =
        Config::check_text("a = 1\n[general]\nb = 2\nhistory_s = -1\n", Path::new("my.toml")).expect_err("strict");
    assert_eq!(problems.len(), 3, "{problems:?}");
    assert!(problems[0].contains("line 1, unknown key a") && problems[1].contains("line 3, unknown key general.b"));
    assert!(problems[2].contains("history_s"), "{problems:?}");
    assert!(Config::check_text("[general]\nhistory_s = 600\n", Path::new("my.toml")).is_ok());
}

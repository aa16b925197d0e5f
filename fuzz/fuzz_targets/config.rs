//! Fuzzes the config parser: any text gives a config or an error naming what is wrong, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    if let Err(e) = gpusight::config::Config::parse(text, std::path::Path::new("fuzz.toml")) {
        let _ = e.to_string();
    }
});

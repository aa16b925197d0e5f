//! Fuzzes the Prometheus query-result reader used by the fleet view.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let _ = gpusight::export::fleet::parse_vector(text);
});

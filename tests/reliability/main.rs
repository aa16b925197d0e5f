//! Reliability: injected source faults drawn in the monitor (`faults`), recording faults (`recording`), inputs the
//! fuzzers found (`fuzz_regressions`), the terminal given back on every signal (`terminal`), and the adversarial hardening pass against hostile input (`hostile_input`).

#[path = "../common/mod.rs"]
mod common;

mod fake_nvml;
mod faults;
mod fuzz_regressions;
mod hostile_input;
mod recording;
mod terminal;

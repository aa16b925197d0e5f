//! Reliability: injected source faults drawn in the monitor (`faults`), recording faults (`recording`), inputs the
//! fuzzers found (`fuzz_regressions`), and the adversarial hardening pass against hostile input (`hostile_input`).

#[path = "../common/mod.rs"]
mod common;

mod faults;
mod fuzz_regressions;
mod hostile_input;
mod recording;

//! Healthy states that people meet every day, end to end: `gpusight doctor --synthetic NAME --json` leaves them at
//! information (exit 0), where their faulty neighbours (in the rules' unit tests) warn.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use crate::common::{doctor_json as doctor, finding, warnings};

#[test]
fn a_caching_allocator_holding_the_card_exits_0() {
    // A JAX job whose allocator reserved 97 % of the card in its first steps and holds it.
    let (output, report) = doctor(&["--synthetic", "vram-cached", "--duration", "90s"]);
    assert_eq!(warnings(&report), Vec::<String>::new(), "{report}");
    assert_eq!(output.status.code(), Some(0), "{report}");
    let held = finding(&report, "vram-nearly-full");
    assert_eq!(held["severity"], "info", "{held}");
    assert!(held["evidence"].as_str().unwrap_or_default().contains("not growing toward the total"), "{held}");
    // Dense training at its default power limit is information too.
    assert_eq!(finding(&report, "power-capped")["severity"], "info", "{report}");
}

#[test]
fn a_server_answering_one_request_every_45_s_exits_0() {
    // Over idle-holder's whole five minutes: no connection open at any read, no kernel in any sample, seven
    // connections accepted.
    let (output, report) = doctor(&["--synthetic", "serve-rare", "--duration", "6m"]);
    assert_eq!(warnings(&report), Vec::<String>::new(), "{report}");
    assert_eq!(output.status.code(), Some(0), "{report}");
    let serving = finding(&report, "serving");
    assert!(serving["evidence"].as_str().unwrap_or_default().contains("connections accepted over 5 min"), "{serving}");
    assert!(report["findings"].as_array().expect("findings").iter().all(|f| f["rule"] != "idle-holder"), "{report}");
}

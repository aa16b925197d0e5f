//! The catalogue against itself: every rule function speaks only for the rule it is paired with in [`RULES`],
//! every rule is walked once, and [`Rule::ALL`] and the rule names agree with the enum and its serde names.

use serde::Deserialize;
use std::collections::BTreeSet;

use super::RULES;
use crate::advice::testkit::Build;
use crate::advice::window::Ctx;
use crate::advice::{Rule, Thresholds};
use crate::source::synthetic::Scenario;

/// How the engine reports a kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Walk {
    /// One rule function in [`RULES`].
    Once,
    /// Several functions report it.
    Several,
    /// No rule function: it is read off the accounts (`advice::account::findings`).
    Account,
}

/// How a variant is reported (an exhaustive match: a new variant does not compile until it is classified here).
fn walk(rule: Rule) -> Walk {
    match rule {
        // Not a rule about the GPUs: the health check reports unreadable signals, and `blind` reports what could
        // not be judged, both under this one kind.
        Rule::Visibility => Walk::Several,
        Rule::CheckpointWrite | Rule::StartUp | Rule::RestartLoop => Walk::Account,
        Rule::InputBound
        | Rule::CpuBoundInput
        | Rule::ThermalThrottle
        | Rule::PowerCapped
        | Rule::HwSlowdown
        | Rule::PcieDowngraded
        | Rule::NumaMisplaced
        | Rule::VramNearlyFull
        | Rule::VramGrowing
        | Rule::IdleHolder
        | Rule::UtilMisleading
        | Rule::SharedGpu
        | Rule::HostMemoryPressure
        | Rule::CpuSteal
        | Rule::GpuErrors
        | Rule::DriverSanity
        | Rule::PersistenceOff
        | Rule::MigActive
        | Rule::GpuUnderfed
        | Rule::LaunchBound
        | Rule::H2dCopyBound
        | Rule::CpuQuotaThrottled
        | Rule::RemoteDatasetStall
        | Rule::ClocksLimited
        | Rule::HbmHot
        | Rule::MemoryBound
        | Rule::RankStraggler
        | Rule::CollectiveHang
        | Rule::MainThreadBound
        | Rule::CpusPinned
        | Rule::CompileWarmup
        | Rule::Serving
        | Rule::CommBound
        | Rule::CpuContention
        | Rule::CpuOversubscribed => Walk::Once,
    }
}

/// The tick counts at which the rules are run over each scenario: early, past the short windows, past the long.
const CHECKPOINTS: [u64; 4] = [15, 70, 180, 330];

#[test]
fn every_rule_function_reports_only_the_rule_it_is_paired_with() {
    let t = Thresholds::default();
    let mut reported: BTreeSet<Rule> = BTreeSet::new();
    for name in Scenario::NAMES {
        // The scale scenario's default thousand processes add nothing here but time.
        let spec = if name == "scale" { "scale:2x20" } else { name };
        let build = Build::new(spec);
        let mut history = build.history(0);
        let mut pushed = 0;
        for checkpoint in CHECKPOINTS {
            for i in pushed..checkpoint {
                history.push_tick(build.tick_at(i));
            }
            pushed = checkpoint;
            let ctx = Ctx::new(&history, &t).expect("ticks pushed");
            for (rule, function) in RULES {
                for observation in function(&ctx) {
                    let finding = &observation.finding;
                    assert_eq!(finding.rule, *rule, "{name} at tick {checkpoint}: {rule:?} reported {finding:#?}");
                    // Remedies are read in doctor and `--once` too, where no key does anything: a command, not a key.
                    assert!(!finding.remedy.contains("press "), "{name}: a remedy names a key: {finding:#?}");
                    reported.insert(*rule);
                }
            }
        }
    }
    // The check above means something only if the scenarios make most rules speak.
    let walked = RULES.iter().map(|(rule, _)| *rule).collect::<BTreeSet<_>>();
    assert!(reported.len() * 3 >= walked.len() * 2, "only {reported:?} reported");
}

#[test]
fn every_rule_is_walked_exactly_once() {
    for rule in Rule::ALL {
        let n = RULES.iter().filter(|(paired, _)| *paired == rule).count();
        match walk(rule) {
            Walk::Once => assert_eq!(n, 1, "{rule:?} is paired with {n} functions in RULES"),
            Walk::Several => assert!(n >= 1, "{rule:?} is reported by no function"),
            Walk::Account => {
                assert_eq!(n, 0, "{rule:?} is read off the accounts, not walked");
                let read_off = crate::advice::account::findings::ACCOUNTED.contains(&rule) || rule == Rule::RestartLoop;
                assert!(read_off, "{rule:?} is read off no account");
            }
        }
    }
}

#[test]
fn all_lists_every_variant_in_declaration_order() {
    // The derived Deserialize knows every variant by its index, so this walks the enum itself, not a copy.
    let declared: Vec<Rule> = (0_u32..)
        .map_while(|i| Rule::deserialize(serde::de::value::U32Deserializer::<serde::de::value::Error>::new(i)).ok())
        .collect();
    assert_eq!(declared, Rule::ALL);
}

#[test]
fn every_rule_name_round_trips_through_serde() {
    let mut names = BTreeSet::new();
    for rule in Rule::ALL {
        let json = serde_json::to_string(&rule).expect("a unit variant serializes");
        assert_eq!(json, format!("\"{}\"", rule.name()), "{rule:?}");
        assert_eq!(serde_json::from_str::<Rule>(&json).expect("its own name reads back"), rule);
        assert!(names.insert(rule.name()), "{} named twice", rule.name());
    }
}

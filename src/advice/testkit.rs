//! A small builder of histories for the rule tests: a synthetic scenario's ticks, with the machine and each
//! tick tweaked by a closure, pushed through `History::push_tick`.

use std::sync::Arc;

use crate::history::History;
use crate::sample::{MachineInfo, Tick};
use crate::source::Source;
use crate::source::synthetic::{SyntheticSource, SyntheticSpec};

use super::{Advisor, Finding, Rule, Thresholds, evaluate};

/// A change applied to every tick, given the tick number.
type TickTweak = Box<dyn Fn(u64, &mut Tick)>;

/// A history under construction from a synthetic scenario.
pub struct Build {
    source: SyntheticSource,
    machine: MachineInfo,
    tweaks: Vec<TickTweak>,
}

impl Build {
    /// Starts from the scenario `spec` (e.g. "input-bound", "mixed:8").
    pub fn new(spec: &str) -> Self {
        let source = SyntheticSource::new(SyntheticSpec::parse(spec).expect("scenario"));
        let machine = (*source.machine()).clone();
        Self { source, machine, tweaks: Vec::new() }
    }

    /// Changes the machine description.
    pub fn machine(mut self, tweak: impl FnOnce(&mut MachineInfo)) -> Self {
        tweak(&mut self.machine);
        self
    }

    /// Changes every tick (the closure gets the tick number).
    pub fn tick(mut self, tweak: impl Fn(u64, &mut Tick) + 'static) -> Self {
        self.tweaks.push(Box::new(tweak));
        self
    }

    /// The history of the first `n` ticks.
    pub fn history(&self, n: u64) -> History {
        let mut history = History::new(Arc::new(self.machine.clone()), 1200);
        for i in 0..n {
            history.push_tick(self.tick_at(i));
        }
        history
    }

    /// Tick `i`, tweaked.
    pub fn tick_at(&self, i: u64) -> Tick {
        let mut tick = self.source.tick_at(i);
        for tweak in &self.tweaks {
            tweak(i, &mut tick);
        }
        tick
    }

    /// The findings of a fresh evaluation after `n` ticks, with default thresholds.
    pub fn findings(&self, n: u64) -> Vec<Finding> {
        evaluate(&self.history(n), &Thresholds::default())
    }

    /// The findings after `n` ticks with an advisor that saw every tick (hysteresis in play).
    pub fn advised(&self, n: u64, t: &Thresholds) -> Vec<Finding> {
        let mut history = History::new(Arc::new(self.machine.clone()), 1200);
        let mut advisor = Advisor::default();
        for i in 0..n {
            history.push_tick(self.tick_at(i));
            advisor.update(&history, t);
        }
        advisor.active().to_vec()
    }
}

/// The rules of a list of findings, sorted and deduplicated.
pub fn rules(findings: &[Finding]) -> Vec<Rule> {
    let mut rules: Vec<Rule> = findings.iter().map(|f| f.rule).collect();
    rules.sort();
    rules.dedup();
    rules
}

/// Whether a finding of `rule` is among `findings`.
pub fn has(findings: &[Finding], rule: Rule) -> bool {
    findings.iter().any(|f| f.rule == rule)
}

/// The finding of `rule`, which must be there.
pub fn get(findings: &[Finding], rule: Rule) -> &Finding {
    findings.iter().find(|f| f.rule == rule).unwrap_or_else(|| panic!("no {rule:?} in {findings:#?}"))
}

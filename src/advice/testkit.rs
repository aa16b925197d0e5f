//! A small builder of histories for the rule tests: a synthetic scenario's ticks, with the machine and each
//! tick tweaked by a closure, pushed through `History::push_tick`.

use std::sync::Arc;

use crate::history::History;
use crate::sample::{MachineInfo, MigTick, Tick};
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

    /// Runs GPU `from`'s job on a 1g slice (GPU instance `gi`) of GPU `to`, which goes into MIG mode: the slice's SM
    /// activity is what `from` did (its GPM SM activity, else its utilization), `from`'s processes move onto the
    /// slice, `to`'s utilization reads N/A and its whole-GPU SM activity is its slices' over 7, as on a real card.
    /// `slice_sm` can drop or change the slice's reading (a driver without GPM per GPU instance).
    pub fn mig_slice(
        self,
        from: u32,
        to: u32,
        gi: u32,
        slice_sm: impl Fn(Option<f32>) -> Option<f32> + 'static,
    ) -> Self {
        let to_index = usize::try_from(to).expect("index");
        self.machine(|m| m.gpus[to_index].mig_enabled = Some(true)).tick(move |_, t| {
            let Some(source) = t.gpu(from).cloned() else { return };
            let busy = source.gpm.and_then(|g| g.sm_active_pct).or(source.util_pct.map(|u| u as f32));
            for p in t.gpu_processes.iter_mut().filter(|p| p.gpu_index == from) {
                (p.gpu_index, p.gpu_instance_id, p.compute_instance_id) = (to, Some(gi), Some(0));
                (p.sm_util_pct, p.mem_util_pct) = (None, None);
            }
            let Some(gpu) = t.gpus.iter_mut().find(|g| g.index == to) else { return };
            gpu.mig.push(MigTick {
                index: u32::try_from(gpu.mig.len()).expect("few slices"),
                gpu_instance_id: Some(gi),
                compute_instance_id: Some(0),
                profile: Some("1g.18gb".to_owned()),
                uuid: format!("MIG-test-{to}-{gi}"),
                mem_used_bytes: source.mem_used_bytes,
                mem_total_bytes: Some(16_896 << 20),
                sm_active_pct: slice_sm(busy),
            });
            gpu.util_pct = None;
            let whole: f32 = gpu.mig.iter().filter_map(|m| m.sm_active_pct).sum::<f32>() / 7.0;
            if let Some(gpm) = gpu.gpm.as_mut() {
                gpm.sm_active_pct = Some(whole);
            }
        })
    }

    /// The machine description, tweaked.
    pub fn machine_info(&self) -> MachineInfo {
        self.machine.clone()
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

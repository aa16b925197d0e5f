//! Each MIG slice's series, aligned with the machine's time column: how busy the slice is (GPM SM activity of its
//! GPU instance) and its memory. A slice is keyed by its GPU and its GPU and compute instance ids, so a layout
//! that changes starts new series; a slice not read for a whole history span is forgotten, so the set stays
//! bounded by the layouts the history spans.

use super::series::series_set;
use super::{Compact, Readings, Ring};
use crate::sample::{GpuProcess, GpuTick, MigTick, Tick};

series_set! {
    /// One MIG slice's series, aligned with [`History::times`](super::History::times).
    pub struct SliceSeries {
        pub gpu_index: u32,
        pub gpu_instance_id: u32,
        pub compute_instance_id: Option<u32>,
        /// The slice for people, as [`MigTick::label`] says it: `1g.18gb (GI 7)`.
        pub label: String,
    }
    series SliceRow {
        /// GPM SM activity of the slice's GPU instance, 0–100 %.
        pub sm_active_pct: Compact<f32>,
        pub mem_used_bytes: Compact<u64>,
        pub mem_total_bytes: Compact<u64>,
    }
}

impl SliceSeries {
    /// Whether `m`, a MIG device of GPU `gpu_index`, is this slice.
    fn is(&self, gpu_index: u32, m: &MigTick) -> bool {
        self.gpu_index == gpu_index
            && m.gpu_instance_id == Some(self.gpu_instance_id)
            && m.compute_instance_id == self.compute_instance_id
    }

    /// Whether a GPU process runs on this slice (by its instance ids; a process without a compute instance id
    /// runs on any compute instance of the GPU instance).
    #[must_use]
    pub fn holds(&self, p: &GpuProcess) -> bool {
        p.gpu_index == self.gpu_index
            && p.gpu_instance_id == Some(self.gpu_instance_id)
            && (p.compute_instance_id.is_none() || p.compute_instance_id == self.compute_instance_id)
    }

    fn row(m: Option<&MigTick>) -> SliceRow {
        SliceRow {
            sm_active_pct: Compact::new(m.and_then(|m| m.sm_active_pct)),
            mem_used_bytes: Compact::new(m.and_then(|m| m.mem_used_bytes)),
            mem_total_bytes: Compact::new(m.and_then(|m| m.mem_total_bytes)),
        }
    }

    /// Whether any sample of the series holds a reading.
    fn any_read(&self) -> bool {
        self.sm_active_pct.readings().any(|v| v.is_some()) || self.mem_used_bytes.readings().any(|v| v.is_some())
    }
}

/// Pushes one tick's MIG devices into `slices` (`n_before` samples were pushed before this one): every known
/// slice gets its reading or a gap, a new slice starts with gaps up to now, and a slice with no reading left in
/// its rings is dropped.
pub(super) fn push(slices: &mut Vec<SliceSeries>, tick: &Tick, n_before: usize, capacity: usize) {
    let devices = || tick.gpus.iter().flat_map(|g: &GpuTick| g.mig.iter().map(move |m| (g.index, m)));
    for slice in slices.iter_mut() {
        let found = devices().find(|(gpu, m)| slice.is(*gpu, m)).map(|(_, m)| m);
        slice.push_row(SliceSeries::row(found));
    }
    for (gpu, m) in devices() {
        let Some(gi) = m.gpu_instance_id else { continue };
        if slices.iter().any(|s| s.is(gpu, m)) {
            continue;
        }
        let mut slice = SliceSeries::new(gpu, gi, m.compute_instance_id, m.label(), capacity);
        for _ in 0..n_before.min(capacity.saturating_sub(1)) {
            slice.push_row(SliceSeries::row(None));
        }
        slice.push_row(SliceSeries::row(Some(m)));
        slices.push(slice);
    }
    slices.retain(SliceSeries::any_read);
}

/// Bytes the slices' series hold on the heap.
pub(super) fn heap_bytes(slices: &[SliceSeries]) -> usize {
    slices.iter().map(SliceSeries::heap_bytes).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tick(slices: &[(u32, f32)]) -> Tick {
        let mig = slices
            .iter()
            .map(|&(gi, sm)| MigTick {
                gpu_instance_id: Some(gi),
                compute_instance_id: Some(0),
                profile: Some("1g.18gb".to_owned()),
                sm_active_pct: Some(sm),
                ..MigTick::default()
            })
            .collect();
        Tick { gpus: vec![GpuTick { index: 0, mig, ..GpuTick::default() }], ..Tick::default() }
    }

    #[test]
    fn slices_stay_aligned_start_with_gaps_and_are_forgotten_when_gone() {
        let mut slices = Vec::new();
        push(&mut slices, &tick(&[(7, 90.0)]), 0, 3);
        push(&mut slices, &tick(&[(7, 91.0), (8, 5.0)]), 1, 3);
        assert_eq!(slices.len(), 2);
        assert_eq!(slices[1].sm_active_pct.readings().collect::<Vec<_>>(), vec![None, Some(5.0)]);
        assert_eq!(slices[1].label, "1g.18gb (GI 8)");
        for n in 2..5 {
            push(&mut slices, &tick(&[(8, 6.0)]), n, 3);
        }
        assert_eq!(slices.len(), 1, "GI 7 not read for the whole span is forgotten");
        assert!(slices.iter().all(|s| s.sm_active_pct.len() == 3), "every series keeps its bound");
        let p = GpuProcess { gpu_instance_id: Some(8), ..GpuProcess::default() };
        assert!(slices[0].holds(&p));
        assert!(!slices[0].holds(&GpuProcess { gpu_instance_id: Some(7), ..p }));
        assert!(!slices[0].holds(&GpuProcess { gpu_index: 1, ..p }));
    }
}

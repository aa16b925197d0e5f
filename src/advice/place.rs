//! Where a GPU process works, and the series that say how busy that place is: the whole GPU, or, on a GPU in MIG
//! mode, the slice the process runs on. The rules that judge how much a GPU works ask "how busy is the place this
//! process runs" ([`Ctx::place`]) instead of reading the whole GPU's series, so a job saturating a 1g slice is
//! judged by its slice's SM activity, not by the card's 13 %.
//!
//! A slice has no reading of its own for utilization (NVML's `utilization.gpu` is the card's, N/A under MIG) or
//! for `PCIe` (one link, shared by every slice): [`Place::util`] and [`Place::pcie_rx`] are `None` there, and the
//! rules that need them are not judged on MIG (`rules::blind::MIG_UNJUDGED`).

use crate::history::{GpuSeries, Series, SliceSeries};

use super::window::Ctx;
use crate::history::Readings;

/// A GPU, or one slice of a GPU in MIG mode, with its series.
#[derive(Debug, Clone, Copy)]
pub struct Place<'a> {
    pub gpu_index: u32,
    /// The whole GPU's series: clocks, throttling and the link, which a slice shares.
    pub gpu: &'a GpuSeries,
    /// The slice, on a GPU in MIG mode.
    pub slice: Option<&'a SliceSeries>,
}

impl<'a> Place<'a> {
    /// NVML utilization, the share of time a kernel ran: the whole GPU's; none on a slice.
    #[must_use]
    pub fn util(&self) -> Option<&'a Series<u32>> {
        self.slice.is_none().then_some(&self.gpu.util_pct)
    }

    /// GPM SM activity: the slice's own on a MIG GPU (of its GPU instance), else the whole GPU's.
    #[must_use]
    pub fn sm_active(&self) -> &'a Series<f32> {
        self.slice.map_or(&self.gpu.sm_active_pct, |s| &s.sm_active_pct)
    }

    /// `PCIe` RX and TX of the GPU, KB/s; none on a slice (the link is the card's, shared by every slice).
    #[must_use]
    pub fn pcie_rx(&self) -> Option<&'a Series<u32>> {
        self.slice.is_none().then_some(&self.gpu.pcie_rx_kbps)
    }

    /// See [`Place::pcie_rx`].
    #[must_use]
    pub fn pcie_tx(&self) -> Option<&'a Series<u32>> {
        self.slice.is_none().then_some(&self.gpu.pcie_tx_kbps)
    }

    /// Memory in use: the slice's on a MIG GPU, else the GPU's.
    #[must_use]
    pub fn mem_used(&self) -> &'a Series<u64> {
        self.slice.map_or(&self.gpu.mem_used_bytes, |s| &s.mem_used_bytes)
    }

    /// The slice's GPU instance id, on a MIG GPU.
    #[must_use]
    pub fn gpu_instance_id(&self) -> Option<u32> {
        self.slice.map(|s| s.gpu_instance_id)
    }

    /// What identifies the place: GPU index and GPU instance id.
    #[must_use]
    pub fn key(&self) -> (u32, Option<u32>) {
        (self.gpu_index, self.gpu_instance_id())
    }

    /// "GPU 0", or "GPU 0 slice 1g.18gb (GI 7)".
    #[must_use]
    pub fn label(&self) -> String {
        label_of(self.gpu_index, self.slice)
    }

    /// What its SM activity is called in evidence: "GPM SM activity", or "slice SM activity".
    #[must_use]
    pub fn sm_name(&self) -> &'static str {
        if self.slice.is_some() { "slice SM activity" } else { "GPM SM activity" }
    }
}

/// "GPU 0", or with its slice "GPU 0 slice 1g.18gb (GI 7)": how findings name a place.
#[must_use]
pub fn label_of(gpu_index: u32, slice: Option<&SliceSeries>) -> String {
    match slice {
        Some(s) => format!("GPU {gpu_index} slice {}", crate::text::visible(&s.label)),
        None => format!("GPU {gpu_index}"),
    }
}

impl<'a> Ctx<'a> {
    /// Whether the GPU with this index is in MIG mode.
    #[must_use]
    pub fn mig(&self, gpu_index: u32) -> bool {
        self.gpu_info(gpu_index).is_some_and(|g| g.mig_enabled == Some(true))
    }

    /// Where the process `pid` works on GPU `gpu_index`: the GPU, or on a MIG GPU its slice; `None` for a process
    /// on a MIG GPU whose slice is not known (no instance ids, or the slice not read).
    #[must_use]
    pub fn place(&self, gpu_index: u32, pid: u32) -> Option<Place<'a>> {
        let gpu = self.history.gpu(gpu_index)?;
        if !self.mig(gpu_index) {
            return Some(Place { gpu_index, gpu, slice: None });
        }
        let process =
            self.history.latest().gpu_processes.iter().find(|p| p.gpu_index == gpu_index && p.pid == Some(pid))?;
        let slice = self.history.slice_of(process)?;
        Some(Place { gpu_index, gpu, slice: Some(slice) })
    }

    /// Every place a process can work: each GPU, and on a MIG GPU each of its slices instead.
    #[must_use]
    pub fn places(&self) -> Vec<Place<'a>> {
        let mut out = Vec::with_capacity(self.history.gpus.len());
        for gpu in &self.history.gpus {
            let gpu_index = gpu.index;
            if self.mig(gpu_index) {
                let slices = self.history.slices.iter().filter(|s| s.gpu_index == gpu_index);
                out.extend(slices.map(|s| Place { gpu_index, gpu, slice: Some(s) }));
            } else {
                out.push(Place { gpu_index, gpu, slice: None });
            }
        }
        out
    }

    /// Whether a MIG GPU's slices carry SM activity (GPM per GPU instance) in the newest sample: without it, no
    /// slice's work can be judged.
    #[must_use]
    pub fn slices_read(&self, gpu_index: u32) -> bool {
        self.history.slices.iter().any(|s| s.gpu_index == gpu_index && s.sm_active_pct.last_reading().is_some())
    }
}

//! What to do about a cause, chosen from the evidence rather than from the cause's name: never "more workers" when
//! the workers wait for a CPU or no core is idle; the thread count per worker when the job oversubscribes its CPUs;
//! the other users' processes when they hold the CPUs; what to run next when the account does not point.

use crate::sample::{HostProcess, MachineInfo, Tick};

use super::evidence::TickIndex;
use super::{Account, Cause};
use crate::units::share_label;

/// What the remedies need to know about the job and its CPUs at the newest tick.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub pid: Option<u32>,
    /// `DataLoader` workers that did work (compile workers and idle ones left out), and the most threads one of them
    /// runs.
    pub workers: u32,
    pub threads_per_worker: Option<u32>,
    /// CPUs the job may run on, and the idle ones among them (cores' worth).
    pub cpus: usize,
    pub idle_cpus: f64,
    /// The job's threads ready to run (on a CPU or waiting for one), cores' worth, where walked.
    pub runnable_threads: Option<u32>,
    /// The other processes that hold the most CPU, for people: "bob's stress (PID 4242) 790 %".
    pub others: Vec<String>,
}

impl Facts {
    /// The facts about the job of `account` at `index`'s tick.
    #[must_use]
    pub fn of(account: &Account, index: &TickIndex<'_>, machine: &MachineInfo) -> Self {
        let Some(step) = account.pid.and_then(|p| index.process(p)) else { return Self::default() };
        let below = index.below(step.pid);
        // The workers that feed the GPU: those that did work (an evaluation loader's persistent workers wait at 0 %).
        let busy = |p: &HostProcess| {
            p.cpu_pct.is_some_and(|c| c >= crate::history::input::BUSY_WORKER_CPU_PCT)
                || matches!(p.state, Some('R' | 'D'))
        };
        let workers: Vec<&&HostProcess> = below.iter().filter(|p| !p.is_compile_worker() && busy(p)).collect();
        let threads_per_worker = workers.iter().filter_map(|w| w.n_threads).max();
        let tick = index.tick;
        let cpus = step.allowed_cpus.as_ref().map_or(machine.n_cpus, Vec::len);
        let runnable: Option<u32> = std::iter::once(step)
            .chain(below.iter().copied())
            .map(|p| p.times.as_ref().and_then(|t| t.all.as_ref()).map(|a| a.runnable))
            .sum();
        Self {
            pid: Some(step.pid),
            workers: u32::try_from(workers.len()).unwrap_or(u32::MAX),
            threads_per_worker,
            cpus,
            idle_cpus: idle_cpus(tick, step, machine),
            runnable_threads: runnable,
            others: others(tick),
        }
    }
}

/// The idle CPUs (cores' worth) among those the process may run on.
fn idle_cpus(tick: &Tick, step: &HostProcess, machine: &MachineInfo) -> f64 {
    let per_cpu = &tick.host.per_cpu_busy_pct;
    let busy = |c: usize| per_cpu.get(c).copied().flatten().map(|b| f64::from(b) / 100.0);
    match step.allowed_cpus.as_ref() {
        Some(cpus) => cpus.iter().filter_map(|c| busy(usize::try_from(*c).ok()?)).map(|b| 1.0 - b).sum(),
        None if per_cpu.iter().any(Option::is_some) => (0..per_cpu.len()).filter_map(busy).map(|b| 1.0 - b).sum(),
        None => tick.host.cpu.map_or(0.0, |c| f64::from(c.idle_pct) / 100.0 * machine.n_cpus as f64),
    }
}

/// The other processes that hold the most CPU, for people (from the scan of processes outside the GPU jobs).
fn others(tick: &Tick) -> Vec<String> {
    let Some(others) = tick.host.cpu_others.as_ref() else { return Vec::new() };
    others
        .top
        .iter()
        .take(3)
        .map(|c| {
            let user = c.user.clone().or_else(|| c.uid.map(|u| format!("uid {u}"))).unwrap_or_else(|| "?".to_owned());
            let more = if c.processes > 1 { format!(" and {} more", c.processes - 1) } else { String::new() };
            format!(
                "{user}'s {} (PID {}{more}, cgroup {}) at {:.0} % of a core",
                crate::text::visible(&c.command),
                c.pid,
                crate::text::visible(&c.cgroup),
                c.cpu_pct
            )
        })
        .collect()
}

/// The remedy for `cause` in `account`, from `facts`.
#[must_use]
pub fn remedy(cause: Cause, account: &Account, facts: &Facts) -> String {
    let share = share_label(account.share(cause));
    let pid = facts.pid.map_or_else(|| "PID".to_owned(), |p| p.to_string());
    match cause {
        Cause::CpuBoundInput
        | Cause::CpuContention
        | Cause::CpuOversubscribed
        | Cause::CpuQuotaThrottled
        | Cause::CpusPinned => cpu_remedy(cause, facts, &share),
        Cause::InputBound if facts.workers == 0 => format!(
            "The step's own thread reads its input from storage (no DataLoader workers): set num_workers to about {} \
             so that reads overlap the GPU's work, and copy the dataset to local NVMe or keep it in the page cache \
             (packed shards: WebDataset, tar, Arrow).",
            idle_whole(facts).saturating_sub(1).clamp(1, 8)
        ),
        _ => other_remedy(cause, &share, &pid),
    }
}

/// The idle CPUs as a whole number.
fn idle_whole(facts: &Facts) -> u32 {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a count of idle CPUs, small")]
    let idle = facts.idle_cpus.max(0.0).floor() as u32;
    idle
}

/// The remedies of the causes that wait for CPUs or for work done on them.
fn cpu_remedy(cause: Cause, facts: &Facts, share: &str) -> String {
    #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a count of idle CPUs, small")]
    let idle = facts.idle_cpus.max(0.0).floor() as u32;
    match cause {
        Cause::CpuBoundInput if facts.workers == 0 => format!(
            "The step's own thread prepares its data: set DataLoader num_workers to about {} so that worker processes \
             decode and augment while the GPU computes.",
            idle.saturating_sub(1).clamp(1, 8)
        ),
        Cause::CpuBoundInput if idle >= 2 => format!(
            "The workers are busy on the CPU and {idle} CPUs are idle: raise DataLoader num_workers from {} to about \
             {}; or make each sample cheaper (decode JPEGs on the GPU with torchvision.io.decode_jpeg(device=\"cuda\") \
             or DALI, smaller images, simpler augmentation).",
            facts.workers,
            (facts.workers + idle - 1).min(facts.workers.saturating_mul(4).max(1))
        ),
        Cause::CpuBoundInput => format!(
            "The workers keep every CPU the job may use busy ({} CPUs, none idle): more workers would only queue for \
             them. Make each sample cheaper (decode on the GPU with torchvision.io.decode_jpeg(device=\"cuda\") or \
             DALI, smaller images, simpler augmentation, pre-processed shards), or run where there are more cores.",
            facts.cpus
        ),
        Cause::CpuContention => contention(facts, share),
        Cause::CpuOversubscribed => oversubscribed(facts),
        Cause::CpuQuotaThrottled => "The cgroup's CPU quota throttles the job: keep num_workers at most the quota's \
             CPUs minus one and torch.set_num_threads() at the quota, or raise the limit (Kubernetes limits.cpu, \
             Slurm --cpus-per-task, docker --cpus). More workers make it worse."
            .to_owned(),
        Cause::CpusPinned => format!(
            "The job is pinned to {} CPUs while CPUs outside its mask idle: widen the mask (taskset, numactl, Slurm \
             --cpus-per-task, the container's cpuset) or keep num_workers at most {}.",
            facts.cpus,
            facts.cpus.saturating_sub(1).max(1)
        ),
        _ => other_remedy(cause, share, "PID"),
    }
}

/// The remedies of the other causes.
fn other_remedy(cause: Cause, share: &str, pid: &str) -> String {
    match cause {
        Cause::InputBound => {
            "The DataLoader workers wait for storage: copy the dataset to local NVMe or keep it in the page \
             cache, pack small files into shards (WebDataset, tar, Arrow), and keep enough reads in flight \
             (num_workers, prefetch_factor) where CPUs are idle."
                .to_owned()
        }
        Cause::RemoteDatasetStall => "The input waits on the network or a network file system: cache the shards on \
             local NVMe, read larger shards, keep more requests in flight (more workers or prefetch_factor while \
             CPUs are idle), and check the mount's or the object store's latency."
            .to_owned(),
        Cause::MainThreadBound => format!(
            "CPU work in the step's own thread sets the pace ({share} of the GPU's time): profile one step \
             (py-spy dump --pid {pid}; torch.profiler with CPU activities) and look at an optimizer on the CPU, metrics \
             or logging every step, .item() and .cpu() syncs. More DataLoader workers will not help."
        ),
        Cause::LaunchBound => "The step launches many small kernels: capture it in a CUDA graph or \
             torch.compile(mode=\"reduce-overhead\"), use a larger batch, fuse ops, avoid host syncs in the step."
            .to_owned(),
        Cause::H2dCopyBound => "Copies to the GPU hold it up: pin_memory=True in the DataLoader and \
             .to(device, non_blocking=True), send compact types (uint8 images) and convert on the GPU, overlap the \
             next batch's copy with compute."
            .to_owned(),
        Cause::CommBound => "The ranks wait for each other's data: check which transport NCCL uses (NCCL_DEBUG=INFO \
             prints NET/Socket for TCP, NET/IB for InfiniBand, P2P/NVLink), overlap communication with the backward \
             pass (DDP buckets), accumulate gradients over more steps, or use a faster interconnect."
            .to_owned(),
        Cause::RankStraggler => "The other ranks wait for a slower rank: follow the rank-straggler finding's remedy \
             for it."
            .to_owned(),
        Cause::CheckpointWrite => format!(
            "Writing checkpoints holds up the step ({share} of the GPU's time): save asynchronously \
             (torch.distributed.checkpoint.async_save, or copy the state to the CPU and write it in a background \
             thread), save less often, or write to local NVMe and copy it away later."
        ),
        Cause::HostMemoryPressure => "The host is short of memory (reclaim, swap): lower num_workers or \
             prefetch_factor, use smaller pinned buffers, or load the dataset lazily."
            .to_owned(),
        Cause::StartUp => "A start-up: nothing to do if it happens once. Where it is long, load weights with mmap \
             (safetensors) from local disk and build the model on the GPU (device=\"cuda\" or meta-device \
             initialisation)."
            .to_owned(),
        Cause::RestartLoop => "The job keeps restarting and the GPU idles through each start: look at why it exits \
             (its exit status and last log lines, OOM kills in `dmesg`, `kubectl describe pod` for restarts and \
             their reason, the Slurm job's log)."
            .to_owned(),
        Cause::CompileWarmup => "The model compiles: nothing to do while it warms up; cache compiled kernels across \
             runs (TORCHINDUCTOR_CACHE_DIR, TORCHINDUCTOR_FX_GRAPH_CACHE=1) to shorten the next start."
            .to_owned(),
        Cause::Serving => "Nothing is wrong: a server waits for requests. Batch them, share the GPU (MPS, MIG) or \
             scale to zero if it is idle most of the time."
            .to_owned(),
        Cause::UtilMisleading => "Utilization counts time any kernel runs: kernels on a sliver of the SMs read 100 %. \
             Larger batches, fused kernels or CUDA graphs make the SMs work."
            .to_owned(),
        _ => format!(
            "The account cannot tell where {share} of the GPU's time goes from the threads. Run `py-spy dump --pid \
             {pid}` a few times while the GPU waits, or torch.profiler over a few steps with CPU and CUDA activities, \
             and look at what the step's thread does between kernels."
        ),
    }
}

/// Other users' processes hold the CPUs: name them.
fn contention(facts: &Facts, share: &str) -> String {
    let who = if facts.others.is_empty() { "processes outside the job".to_owned() } else { facts.others.join("; ") };
    format!(
        "The job waits for CPUs other processes hold ({share} of the GPU's time): {who}. Ask their owners, run where \
         CPUs are free, or reserve CPUs for the job (Slurm --exclusive or --cpus-per-task, a Kubernetes Guaranteed pod \
         with the static CPU manager, a cpuset). More DataLoader workers would only queue for the same CPUs."
    )
}

/// The job's own threads oversubscribe its CPUs: say how many a worker runs.
fn oversubscribed(facts: &Facts) -> String {
    let per_worker = match (facts.workers, facts.threads_per_worker) {
        (0, _) | (_, None) => String::new(),
        (n, Some(k)) => format!(" its {n} workers run up to {k} threads each;"),
    };
    let runnable = facts.runnable_threads.map_or_else(String::new, |r| format!("{r} threads ready to run on "));
    format!(
        "The job runs more threads than it has CPUs ({}{} CPUs);{per_worker} give each worker one thread: \
         torch.set_num_threads(1) in worker_init_fn, OMP_NUM_THREADS=1 and MKL_NUM_THREADS=1 in the workers' \
         environment, cv2.setNumThreads(0) for OpenCV; keep num_workers at most {}. Do not raise num_workers.",
        runnable,
        facts.cpus,
        facts.cpus.saturating_sub(1).max(1)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advice::account::{Basis, CauseShare};

    fn account(cause: Cause, share: f64) -> Account {
        Account {
            gpu_index: 0,
            gpu_instance_id: None,
            job: "pid:2001".to_owned(),
            pid: Some(2001),
            command: String::new(),
            window_s: 30.0,
            seconds: 30.0,
            basis: Basis::Threads,
            causes: vec![CauseShare { cause, seconds: 30.0 * share, share, energy_j: None }],
            energy_j: None,
            alone: true,
            unseen: Vec::new(),
        }
    }

    #[test]
    fn more_workers_only_where_cpus_are_idle() {
        let a = account(Cause::CpuBoundInput, 0.5);
        let idle = Facts { workers: 8, idle_cpus: 6.5, cpus: 32, ..Facts::default() };
        assert!(remedy(Cause::CpuBoundInput, &a, &idle).contains("raise DataLoader num_workers from 8 to about 13"));
        let full = Facts { workers: 8, idle_cpus: 0.3, cpus: 16, ..Facts::default() };
        let text = remedy(Cause::CpuBoundInput, &a, &full);
        assert!(!text.contains("raise") && text.contains("more workers would only queue"), "{text}");
        let main = Facts { workers: 0, idle_cpus: 12.0, cpus: 16, ..Facts::default() };
        assert!(remedy(Cause::CpuBoundInput, &a, &main).contains("set DataLoader num_workers to about 8"));
    }

    #[test]
    fn oversubscription_names_the_threads_per_worker_and_contention_the_others() {
        let facts = Facts {
            workers: 8,
            threads_per_worker: Some(35),
            cpus: 16,
            runnable_threads: Some(120),
            ..Facts::default()
        };
        let text = remedy(Cause::CpuOversubscribed, &account(Cause::CpuOversubscribed, 0.6), &facts);
        assert!(text.contains("120 threads ready to run on 16 CPUs") && text.contains("35 threads each"), "{text}");
        assert!(text.contains("Do not raise num_workers"), "{text}");
        let facts = Facts {
            others: vec!["bob's stress (PID 4242, cgroup /user.slice) at 790 % of a core".to_owned()],
            ..Facts::default()
        };
        let text = remedy(Cause::CpuContention, &account(Cause::CpuContention, 0.4), &facts);
        assert!(text.contains("bob's stress (PID 4242") && text.contains("40 %"), "{text}");
    }
}

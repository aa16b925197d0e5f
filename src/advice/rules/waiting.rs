//! Why does a GPU wait, beyond storage and CPU preprocessing? The umbrella gpu-underfed and the causes it names:
//! launch-bound, h2d-copy-bound, cpu-quota-throttled and remote-dataset-stall (input-bound and cpu-bound-input live
//! in `throughput.rs`). Each cause keeps its own rule name; `advice::name_the_cause` makes one verdict per GPU.
//!
//! How much a GPU works is GPM SM activity where the GPU has it (Hopper and newer), else NVML utilization: the
//! share of time *any* kernel ran, which a stream of tiny kernels keeps high while the chip idles.

use super::super::window::{Ctx, bytes_label, pct_label, share_label};
use super::super::{Finding, Observation, Rule, Severity};
use super::draft;
pub(super) use super::signals::{GpuWindow, ProcWindow};
use crate::history::InputSample;

/// The compute processes with their GPU's window over `secs` (their slice's on a MIG GPU), where it waits.
/// Each place's window is computed once: at 8 GPUs × 1,000 busy processes no process gets further than a lookup.
pub(super) fn waiting_processes<'a>(ctx: &Ctx<'a>, secs: u64) -> Vec<(u32, u32, GpuWindow<'a>, ProcWindow<'a>)> {
    let windows: Vec<GpuWindow<'a>> = ctx
        .places()
        .into_iter()
        .filter_map(|place| GpuWindow::of(ctx, place, secs))
        .filter(|w| w.waiting(ctx.t))
        .collect();
    let mut out = Vec::new();
    if windows.is_empty() {
        return out;
    }
    for (gpu_index, pid) in ctx.compute_processes() {
        if !windows.iter().any(|w| w.place.gpu_index == gpu_index) {
            continue;
        }
        let Some(place) = ctx.place(gpu_index, pid) else { continue };
        let Some(&window) = windows.iter().find(|w| w.place.key() == place.key()) else { continue };
        let Some(process) = ProcWindow::of(ctx, pid, secs) else { continue };
        out.push((gpu_index, pid, window, process));
    }
    out
}

/// launch-bound: the CPU cannot issue kernels fast enough. NVML utilization is moderate or high while SM activity
/// is a small fraction of it, the busiest thread is near one full core, and nothing waits for I/O.
#[must_use]
pub fn launch_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let (Some(util), Some(active)) = (gw.util, gw.sm_active) else { continue };
        let tiny = |margin: f64| {
            util >= t.launch_min_util_pct - margin
                && util < t.launch_max_util_pct + margin
                && active <= t.launch_max_sm_share * util
        };
        let thread = pw.busiest_thread().unwrap_or(0.0);
        let no_io = pw.in_d_share() < t.d_state_share
            && ctx.window(t.window_s).and_then(|s| s.median(&ctx.history.host.psi_io_some)).unwrap_or(0.0)
                < t.psi_io_some_pct;
        if !tiny(10.0) || thread < t.launch_thread_pct - 10.0 || !no_io {
            continue;
        }
        let main = ctx.host_process(pid).and_then(|p| p.busiest_thread.as_ref());
        let who = main.map_or_else(
            || format!("PID {pid}"),
            |b| format!("{} TID {} ({})", if b.tid == pid { "its main thread" } else { "its thread" }, b.tid, b.name),
        );
        let finding = Finding {
            title: format!("{} waits for kernel launches from PID {pid} (tiny kernels)", gw.place.label()),
            evidence: format!(
                "{}: SM activity is {} of utilization; {who} at {} of one core (median); no I/O wait (D {} of \
                 samples)",
                gw.evidence(),
                share_label(active / util.max(1.0)),
                pct_label(thread),
                share_label(pw.in_d_share()),
            ),
            remedy: "Give the GPU bigger pieces of work: a larger batch; capture the step in CUDA graphs or use \
                     torch.compile(mode=\"reduce-overhead\"); fuse small ops; remove per-step host syncs (.item(), \
                     .cpu(), printing losses every step)."
                .to_owned(),
            explanation: "NVML utilization counts the time any kernel ran, however small; GPM SM activity counts how \
                          much of the chip worked. When kernels run most of the time but use a sliver of the SMs, and \
                          one CPU thread is flat out, the GPU is waiting for the next launch: the step is bound by \
                          Python and the CUDA launch path, not by the GPU."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::LaunchBound, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        let enter = gw.span.covered && pw.span.covered && tiny(0.0) && thread >= t.launch_thread_pct;
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

/// h2d-copy-bound: host-to-device copies set the pace. `PCIe` RX near the link's capacity while the SMs idle, or a
/// pegged thread copying from pageable memory at a moderate rate.
#[must_use]
pub fn h2d_copy_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let Some(rx_share) = gw.rx_share() else { continue };
        // A rank's traffic both ways is its collectives, not its inputs: comm-bound's business.
        if comm_traffic(ctx, gpu_index, &gw).is_some() {
            continue;
        }
        let thread = pw.busiest_thread().unwrap_or(0.0);
        let near_capacity = rx_share >= t.h2d_rx_share;
        let pageable = rx_share >= t.h2d_pageable_rx_share && thread >= t.launch_thread_pct;
        let exit = rx_share >= t.h2d_pageable_rx_share * 0.8;
        if !exit {
            continue;
        }
        let rx_gb_s = gw.rx_kb_s.unwrap_or(0.0) / 1e6;
        let cap_gb_s = gw.link_kb_s.unwrap_or(0.0) / 1e6;
        let finding = Finding {
            title: format!("{} waits for host-to-device copies from PID {pid}", gw.place.label()),
            evidence: format!(
                "{}; PCIe RX mean {rx_gb_s:.1} GB/s = {} of the link's {cap_gb_s:.0} GB/s; busiest thread at {} of \
                 one core (median){}",
                gw.evidence(),
                share_label(rx_share),
                pct_label(thread),
                if near_capacity { "" } else { ": a thread copying from pageable memory" },
            ),
            remedy: "Make the copies cheaper or hide them: DataLoader(pin_memory=True) and .to(device, \
                     non_blocking=True) so they overlap compute; send uint8 (or fp16) and convert on the GPU; move \
                     augmentation to the GPU; keep tensors that do not change on the GPU."
                .to_owned(),
            explanation: "The GPU receives data over PCIe near what the link carries (generation × width), or at a \
                          fair rate while one CPU thread is flat out (copies from pageable memory go through a \
                          staging buffer on the CPU), while its SMs do little: the step waits for its inputs to \
                          arrive."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::H2dCopyBound, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        let enter = gw.span.covered && (near_capacity || pageable);
        out.push(Observation { finding, enter, stay: exit });
    }
    out
}

/// Each direction of a rank's PCIe traffic is at least this share of the other for it to be collectives' (NCCL
/// sends what it receives); host-to-device copies run one way.
const COMM_BALANCE: f64 = 0.5;

/// comm-bound enters when each direction carries at least this share of the link, and stays above 80 % of it.
const COMM_MIN_LINK_SHARE: f64 = 0.05;

/// A rank's collective traffic over PCIe in a window: (RX KB/s, TX KB/s, the smaller one's share of the link), for a
/// GPU that holds a rank of a job over several GPUs and whose PCIe traffic runs both ways alike.
fn comm_traffic(ctx: &Ctx<'_>, gpu_index: u32, gw: &GpuWindow<'_>) -> Option<(f64, f64, f64)> {
    let gpu = ctx.history.gpu(gpu_index)?;
    let (rx, tx, link) = (gw.rx_kb_s?, gw.span.mean(&gpu.pcie_tx_kbps)?, gw.link_kb_s.filter(|l| *l > 0.0)?);
    let balanced = rx > 0.0 && tx > 0.0 && tx >= rx * COMM_BALANCE && rx >= tx * COMM_BALANCE;
    (balanced && super::jobs::multi_rank_job(ctx, gpu_index).is_some()).then(|| (rx, tx, rx.min(tx) / link))
}

/// comm-bound: a rank of a job over several GPUs waits while its GPU's PCIe carries traffic both ways alike: the
/// job's collectives (NCCL over PCIe, or through the host to the network) set the pace, not copies of its inputs.
#[must_use]
pub fn comm_bound(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let by_link = comm_traffic(ctx, gpu_index, &gw).filter(|(_, _, share)| *share >= COMM_MIN_LINK_SHARE * 0.8);
        let Some((rx, tx, share)) = by_link else {
            if let Some(spin) = super::jobs::all_ranks_wait_for_data(ctx, gpu_index) {
                out.push(comm_by_spin(ctx, (gpu_index, pid), &gw, &spin));
            }
            continue;
        };
        let Some((job, rank_pid)) = super::jobs::multi_rank_job(ctx, gpu_index) else { continue };
        let job_name = super::jobs::job_name(ctx, job, rank_pid);
        let rank = job.rank.map_or_else(|| format!("PID {pid}"), |r| format!("rank {r} (PID {pid})"));
        let gpu = ctx.history.gpu(gpu_index);
        let nvlink =
            gpu.and_then(|g| gw.span.mean(&g.nvlink_rx_mib_s)).zip(gpu.and_then(|g| gw.span.mean(&g.nvlink_tx_mib_s)));
        let nvlink = nvlink
            .map_or_else(|| "NVLink not read".to_owned(), |(r, x)| format!("NVLink RX {r:.0} MiB/s, TX {x:.0} MiB/s"));
        let finding = Finding {
            title: format!(
                "GPU {gpu_index} waits for the job's communication: {rank} of job {}",
                crate::text::visible(&job_name)
            ),
            evidence: format!(
                "{}; PCIe RX mean {:.1} GB/s and TX {:.1} GB/s (both ways alike: collectives, not input copies; the \
                 smaller is {} of the link); {nvlink}; {rank} of a job of {} ranks",
                gw.evidence(),
                rx / 1e6,
                tx / 1e6,
                share_label(share),
                job.world_size.map_or_else(|| "several".to_owned(), |w| w.to_string()),
            ),
            remedy: "Communicate less or hide it: overlap the all-reduce with backward (DDP's bucket_cap_mb, no \
                     find_unused_parameters), accumulate gradients over several steps (no_sync), a larger batch per \
                     step, bf16 gradients (a compression communication hook), or shard differently (FSDP's hybrid \
                     sharding keeps traffic inside the node). Check the transport: NCCL_DEBUG=INFO names it; GPUs \
                     that should talk over NVLink or InfiniBand (GPUDirect RDMA) should not go through the host."
                .to_owned(),
            explanation:
                "NCCL sends what it receives: a rank's collectives over PCIe (between GPUs without NVLink, or \
                          through the host to a network card) show as traffic both ways alike, while input copies \
                          run one way. A rank that waits with its link busy both ways is bound by the job's \
                          communication; pin_memory would not help."
                    .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::CommBound, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        let enter = gw.span.covered && pw.span.covered && share >= COMM_MIN_LINK_SHARE;
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

/// comm-bound from the ranks themselves: every rank of the job spins in its collectives while data moves (see
/// `jobs::all_ranks_wait_for_data`), whatever the transport; the network's rates, where read, say which way it goes.
fn comm_by_spin(ctx: &Ctx<'_>, (gpu_index, pid): (u32, u32), gw: &GpuWindow<'_>, spin: &str) -> Observation {
    let net = ctx.history.latest().host.net.iter().filter(|n| n.kind != crate::sample::NetKind::Virtual).take(2);
    let net: Vec<String> = net
        .map(|n| {
            format!(
                "{} RX {}/s TX {}/s",
                crate::text::visible(&n.name),
                bytes_label(n.rx_bytes_per_s as f64),
                bytes_label(n.tx_bytes_per_s as f64)
            )
        })
        .collect();
    let net = if net.is_empty() { "network not read".to_owned() } else { format!("network now: {}", net.join(", ")) };
    let finding = Finding {
        title: format!("GPU {gpu_index} waits for the job's communication: every rank spins in its collectives"),
        evidence: format!("{}; {spin}; {net}", gw.evidence()),
        remedy: "The ranks wait for each other's data, not for one rank: check which transport NCCL uses \
                 (NCCL_DEBUG=INFO prints NET/Socket for TCP, NET/IB for InfiniBand, P2P/NVLink), overlap the \
                 all-reduce with backward (DDP buckets), accumulate gradients over more steps (no_sync), send bf16 \
                 gradients, or use a faster interconnect."
            .to_owned(),
        explanation: "A rank waiting in a collective shows high utilization (NCCL's kernels spin) with little SM \
                      activity. When every rank of a job does so at once while data moves, none of them sets the \
                      pace: the job waits for its communication. Over TCP sockets the data goes through host memory, \
                      so it shows on PCIe and the network card rather than on NVLink."
            .to_owned(),
        gpu_instance_id: gw.place.gpu_instance_id(),
        ..draft(Rule::CommBound, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
    };
    Observation { finding, enter: gw.span.covered, stay: true }
}

/// cpu-quota-throttled: the GPU process or its workers run in a cgroup whose CPU quota throttles them while the
/// GPU waits. Names the quota against the number of workers.
#[must_use]
pub fn cpu_quota_throttled(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        // The mean share of throttled periods, not the share of samples over a level: CFS throttling comes in
        // bursts (on the H200 a 2-CPU quota throttled 39 % of periods over the case, unevenly from second to second,
        // and a rule asking 80 % of samples over 20 % never entered).
        let Some(throttled) = pw.span.mean(&pw.series.tree_throttled_pct) else { continue };
        let share = pw.share(|p| &p.tree_throttled_pct, |v| f64::from(v) >= t.quota_throttled_pct);
        if throttled < t.quota_throttled_pct / 2.0 {
            continue;
        }
        let latest = ctx.history.latest();
        let cgroup = latest
            .processes
            .iter()
            .filter(|p| p.pid == pid || p.ppid == Some(pid))
            .filter_map(|p| p.cgroup_cpu.as_ref())
            .find(|c| c.quota_cpus.is_some());
        let workers = pw.workers();
        let quota = cgroup.and_then(|c| c.quota_cpus);
        let quota_text = quota.map_or_else(|| "a CPU quota".to_owned(), |q| format!("{q:.1} CPUs").replace(".0 ", " "));
        let cpuset = cgroup.and_then(|c| c.cpuset_cpus).map_or_else(String::new, |n| format!(", cpuset {n} CPUs"));
        let path = cgroup.map_or_else(|| "its cgroup".to_owned(), |c| format!("cgroup {}", c.path));
        let ms = cgroup.and_then(|c| c.throttled_ms_per_s).map_or_else(String::new, |m| format!(", {m:.0} ms/s"));
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a positive quota in CPUs, floored"
        )]
        let fit = quota.map_or(1, |q| (q.floor() as u32).saturating_sub(1).max(1));
        let finding = Finding {
            title: format!(
                "{} waits: PID {pid}'s cgroup allows {quota_text} for {workers} DataLoader workers",
                gw.place.label()
            ),
            evidence: format!(
                "{}; {path}: quota {quota_text}{cpuset}; throttled in {} of scheduler periods (mean){ms}, in at least \
                 {} of periods in {} of samples; {workers} DataLoader worker{} plus the main process",
                gw.evidence(),
                pct_label(throttled),
                pct_label(t.quota_throttled_pct),
                share_label(share),
                if workers == 1 { "" } else { "s" },
            ),
            remedy: format!(
                "Match the work to the quota or the quota to the work: num_workers about {fit} within {quota_text}, \
                 or raise the limit (cpu.max, the container's --cpus, Kubernetes resources.limits.cpu) to at least \
                 {} CPUs; workers beyond the quota only add context switches.",
                workers + 2
            ),
            explanation: "The kernel's CFS bandwidth control stops every process of a cgroup for the rest of a period \
                          once the cgroup has used its quota (cpu.max; cfs_quota_us in cgroup v1). cpu.stat counts the \
                          periods in which that happened. With more busy workers than CPUs in the quota, decoding \
                          stalls in bursts and the GPU waits, although the host shows idle cores."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::CpuQuotaThrottled, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        let enter = gw.span.covered && pw.span.covered && throttled >= t.quota_throttled_pct;
        out.push(Observation { finding, enter, stay: true });
    }
    out
}

/// Per sample, which way a remote dataset keeps the GPU waiting, if one does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RemoteWait {
    /// `DataLoader` workers holding TCP connections of their own (HTTP, object storage), or asleep on sockets.
    /// Connections alone count: on the H200 the workers of a job reading over HTTP held one each while their
    /// `wchan` read as a generic poll (Python waits in `poll` before `recv`), never as a socket wait.
    Network,
    /// Threads in network file system or FUSE waits while the tree reads files open read-only on such a mount.
    FileSystem,
}

/// The remote wait of one sample. A server's handler threads on sockets (the GPU process's own, not workers'),
/// sockets a worker inherited, writes to a remote mount (logs, `slurm-%j.out`, checkpoints, TensorBoard events)
/// and reads that do not wait (a warm page cache) are none. A file system wait counts where a reader waits: a
/// `DataLoader` worker, or the GPU process while it reads its read-only remote files; and, where the tree's read
/// rate through those files is known, only while it is above zero or the waits are the workers'. Threads waiting
/// on write-back (`write_waits`) are a class of their own and never count; the waits of a process that writes to
/// the mount and reads nothing there are its writes'. Recordings made before waits were split and open modes read
/// give no file system evidence.
fn remote_wait(input: Option<InputSample>, children_tcp: Option<u32>) -> Option<RemoteWait> {
    let input = input?;
    if input.worker_socket_waits > 0 || children_tcp.unwrap_or(0) > 0 {
        return Some(RemoteWait::Network);
    }
    let reading = input.remote_read_only.unwrap_or(0) > 0 || input.remote_read_kib_s.unwrap_or(0) > 0;
    let workers = input.worker_fs_waits.unwrap_or(0) > 0;
    let reader = input.reader_fs_waits.unwrap_or(0) > 0 && input.remote_read_kib_s.is_none_or(|k| k > 0);
    (input.fs_waits.unwrap_or(0) > 0 && reading && (workers || reader)).then_some(RemoteWait::FileSystem)
}

/// remote-dataset-stall: the GPU waits while its input comes over the network or a shared file system: its
/// `DataLoader` workers asleep on their own TCP connections, or threads in NFS, Lustre or FUSE waits while the tree
/// reads dataset files open read-only on such a mount.
#[must_use]
pub fn remote_dataset_stall(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    let mut out = Vec::new();
    for (gpu_index, pid, gw, pw) in waiting_processes(ctx, t.window_s) {
        let span = pw.span;
        let s = pw.series;
        let waits: Vec<Option<RemoteWait>> =
            pw.inputs().zip(span.values(&s.children_tcp)).map(|(i, c)| remote_wait(i, c)).collect();
        let share = super::super::window::share_of(waits.iter().map(Option::is_some));
        let stay = share >= t.exit_share.min(t.remote_share);
        if !stay {
            continue;
        }
        let network = waits.iter().filter(|w| **w == Some(RemoteWait::Network)).count();
        let file_system = waits.iter().filter(|w| **w == Some(RemoteWait::FileSystem)).count();
        let finding = Finding {
            title: format!("{} waits for a dataset read over the network by PID {pid}", gw.place.label()),
            evidence: format!(
                "{}; {}; held in {} of samples",
                gw.evidence(),
                remote_evidence(ctx, pid, &pw),
                share_label(share)
            ),
            remedy: if file_system > network {
                "Take the shared file system out of the step: stage the dataset on local NVMe (or in RAM) before \
                 training; pack small files into large shards (WebDataset/tar, TFRecord) so each open and read pays \
                 fewer round trips; keep more reads in flight (more workers, a larger prefetch_factor)."
            } else {
                "Take the network out of the step: cache the shards on local NVMe (or in RAM) before training; use \
                 larger shards (WebDataset/tar, TFRecord) so each request carries more; keep more requests in flight \
                 (more workers or an async prefetching reader)."
            }
            .to_owned(),
            explanation: "The job's input arrives over a network (HTTP or object storage) or a shared file system \
                          (NFS, Lustre, GPFS, BeeGFS, CephFS, SMB, FUSE) and the GPU waits: every request pays a \
                          round trip that local disk does not. Seen as DataLoader workers asleep on their own TCP \
                          connections, or threads in file system waits while the job reads files it opened \
                          read-only on such a mount. Writes there (logs, checkpoints) and reads served from the page \
                          cache are not a stall; neither is a server's threads waiting for requests."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::RemoteDatasetStall, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        // Appears at `remote_share` (the engine's `enter_share` by default) and stays down to `exit_share`, as the
        // other rules do: a share that hovers around one level does not flicker.
        let enter = gw.span.covered && span.covered && share >= t.remote_share;
        out.push(Observation { finding, enter, stay });
    }
    out
}

/// The waits and files of a remote stall, for its evidence: threads by kind (medians), the workers' connections,
/// the read-only files and their read rate, and the written mount left out.
fn remote_evidence(ctx: &Ctx<'_>, pid: u32, pw: &ProcWindow<'_>) -> String {
    use std::fmt::Write as _;
    let inputs: Vec<InputSample> = pw.inputs().flatten().collect();
    let med = |pick: fn(&InputSample) -> Option<u32>| {
        super::super::window::median(inputs.iter().map(pick)).map_or_else(|| "N/A".to_owned(), |m| format!("{m:.0}"))
    };
    let mut text = format!(
        "threads waiting: {} on sockets in DataLoader workers, {} in network file system waits (medians); TCP \
         connections of the workers: {} (median)",
        med(|i| Some(u32::from(i.worker_socket_waits))),
        med(|i| i.fs_waits.map(u32::from)),
        pw.median(|p| &p.children_tcp).map_or_else(|| "N/A".to_owned(), |m| format!("{m:.0}")),
    );
    let tree = ctx.history.latest().processes.iter().filter(|p| p.pid == pid || p.ppid == Some(pid));
    let files: Vec<&crate::sample::RemoteFiles> = tree.filter_map(|p| p.remote_files.as_ref()).collect();
    if let Some(read) = files.iter().find(|r| r.read_only > 0) {
        let n: u32 = files.iter().map(|r| r.read_only).sum();
        let rate = super::super::window::median(inputs.iter().map(|i| i.remote_read_kib_s))
            .map_or_else(String::new, |k| format!(", read at {}/s (median)", bytes_label(k * 1024.0)));
        let _ = write!(
            text,
            "; {n} file{} open read-only on {} ({}){rate}",
            if n == 1 { "" } else { "s" },
            read.mount,
            read.fs_type
        );
    }
    if let Some(written) = files.iter().find(|r| r.written > 0) {
        let _ = write!(text, "; writes to {} ({}) not counted", written.written_mount, written.written_fs_type);
    }
    text
}

/// gpu-underfed: the umbrella. A compute process holds a GPU whose mean SM activity (or utilization) stays low
/// over a minute with no throttling to explain it. Drafted as "cause unknown"; `advice::name_the_cause` names the
/// strongest specific cause when one holds on the same GPU, or adds which causes did not hold.
#[must_use]
pub fn gpu_underfed(ctx: &Ctx<'_>) -> Vec<Observation> {
    let t = ctx.t;
    // Per GPU once: the minute's window, its work level and limit. The minute and its last `window_s` both must
    // be low: a job that got faster clears with its cause, not a minute later.
    let mut low: Vec<(GpuWindow<'_>, f64, f64)> = Vec::new();
    for place in ctx.places() {
        let Some(gw) = GpuWindow::of(ctx, place, t.underfed_window_s) else { continue };
        let limit = if gw.sm_active.is_some() { t.underfed_sm_active_pct } else { t.underfed_util_pct };
        let recent = GpuWindow::of(ctx, place, t.window_s).and_then(|w| w.work());
        let (Some(work), Some(recent)) = (gw.work(), recent) else { continue };
        if work.max(recent) < limit + t.underfed_exit_margin_pct && gw.throttled_share < t.exit_share / 2.0 {
            low.push((gw, work.max(recent), limit));
        }
    }
    let mut out: Vec<(f64, Observation)> = Vec::new();
    if low.is_empty() {
        return Vec::new();
    }
    for (gpu_index, pid) in ctx.compute_processes() {
        let place = || ctx.place(gpu_index, pid).map(|p| p.key());
        let Some(&(gw, work, limit)) =
            low.iter().find(|(w, _, _)| w.place.gpu_index == gpu_index && Some(w.place.key()) == place())
        else {
            continue;
        };
        let stay = true;
        let Some(pw) = ProcWindow::of(ctx, pid, t.underfed_window_s) else { continue };
        // An idle holder (idle-holder's business) and a checkpoint writer are not waiting for input.
        let cpu = pw.median(|p| &p.cpu_pct).unwrap_or(0.0).max(pw.median(|p| &p.max_child_cpu_pct).unwrap_or(0.0));
        let own_sm = pw.median(|p| &p.sm_util_pct).or(gw.util).unwrap_or(work);
        if (own_sm <= t.idle_util_pct && cpu < 5.0) || pw.writes_dominate(t) {
            continue;
        }
        let cgroups_read = ctx.host_process(pid).is_some_and(|p| p.cgroup_cpu.is_some());
        let writes = write_waits_note(ctx, pid, &pw);
        let finding = Finding {
            title: format!("{} is underfed (PID {pid}): cause unknown", gw.place.label()),
            evidence: format!(
                "{}{}; no power, thermal or hardware throttling{}",
                gw.evidence(),
                writes,
                if cgroups_read { "" } else { "; cgroup CPU limits could not be read" },
            ),
            remedy: format!(
                "Profile one step (torch.profiler or Nsight Systems): compare the DataLoader's __next__ time with \
                 the kernel time. If __next__ dominates, the input pipeline is the limiter; if kernels are short \
                 with gaps between them, the CPU side of the step is (Python, launches, host syncs, a lock or a \
                 collective waiting for a slower rank).{}",
                if writes.is_empty() {
                    ""
                } else {
                    " If the writes are in the step's path (logging or checkpointing synchronously), make them \
                     asynchronous or write to local disk first."
                }
            ),
            explanation: "A GPU with a compute process whose SMs are busy a small part of the time over a minute, \
                          with no throttling to explain it, is waiting for something. gpusight names the cause when a \
                          more specific rule finds it (storage, CPU preprocessing, kernel launches, host-to-device \
                          copies, a cgroup CPU quota, a remote dataset); otherwise it says so, with how to find out."
                .to_owned(),
            gpu_instance_id: gw.place.gpu_instance_id(),
            ..draft(Rule::GpuUnderfed, Severity::Warning, Some(gpu_index), Some(pid), ctx.now_ms)
        };
        let enter = gw.span.covered && pw.span.covered && work < limit;
        let obs = Observation { finding, enter, stay };
        // One umbrella per GPU or slice: about its busiest process (the one that is waiting, not a neighbour that
        // idles).
        match out.iter_mut().find(|(_, o)| o.finding.place() == (Some(gpu_index), gw.place.gpu_instance_id())) {
            Some(slot) if cpu > slot.0 => *slot = (cpu, obs),
            Some(_) => {}
            None => out.push((cpu, obs)),
        }
    }
    out.into_iter().map(|(_, obs)| obs).collect()
}

/// "; threads wait on writes to /home (nfs4) in 95 % of samples (logs or checkpoints, not the input)", when the
/// tree's threads wait on writes: dirty-page throttling, or a network file system whose files it only writes.
fn write_waits_note(ctx: &Ctx<'_>, pid: u32, pw: &ProcWindow<'_>) -> String {
    let inputs: Vec<Option<InputSample>> = pw.inputs().collect();
    let writing = |i: &InputSample| {
        let write_only = i.remote_read_only == Some(0) && i.remote_written.unwrap_or(0) > 0;
        i.write_waits.unwrap_or(0) > 0 || (write_only && i.fs_waits.unwrap_or(0) > 0)
    };
    let share = super::super::window::share_of(inputs.iter().map(|i| i.as_ref().is_some_and(writing)));
    if share <= 0.0 {
        return String::new();
    }
    let mount = ctx
        .history
        .latest()
        .processes
        .iter()
        .filter(|p| p.pid == pid || p.ppid == Some(pid))
        .filter_map(|p| p.remote_files.as_ref())
        .find(|r| r.written > 0)
        .map_or_else(String::new, |r| format!(" to {} ({})", r.written_mount, r.written_fs_type));
    format!("; threads wait on writes{mount} in {} of samples (logs or checkpoints, not the input)", share_label(share))
}

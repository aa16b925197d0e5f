//! What the host read about a GPU process's input path at one sample, folded over the process and its children
//! into one small record per sample (one ring, not one per count: a process keeps up to 300 of them).

use crate::sample::HostProcess;

/// CPU (% of one core over the last interval) from which a `DataLoader` worker counts as having done work: a
/// persistent worker of an evaluation loader that waits for its next epoch sits near 0 %.
pub const BUSY_WORKER_CPU_PCT: f32 = 1.0;

/// The input path of a GPU process at one sample. Counts saturate at 255.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct InputSample {
    /// Children that did work over the last interval (at least [`BUSY_WORKER_CPU_PCT`], running or in D), compile
    /// workers left out: the `DataLoader` workers that feed the GPU.
    pub busy_workers: u8,
    /// Children that are `torch.compile` (inductor) compile workers ([`HostProcess::is_compile_worker`]).
    pub compile_workers: u8,
    /// Of those, the ones that used at least [`BUSY_WORKER_CPU_PCT`] of a core.
    pub compile_busy: u8,
    /// Threads of the children asleep on a socket (in recordings that do not split waits, in any network wait).
    pub worker_socket_waits: u8,
    /// Threads of the process and its children in a network file system or FUSE wait (`None`: waits not split).
    pub fs_waits: Option<u8>,
    /// Of `fs_waits`, those of `DataLoader` workers (compile workers left out): threads that fetch the input.
    pub worker_fs_waits: Option<u8>,
    /// Of `fs_waits`, those of the GPU process itself when it reads remote files: files open read-only read at a
    /// nonzero rate or, where the rate is unknown, files open read-only and none open for writing. The network file
    /// system waits of a process that reads nothing there while it writes (a log, a checkpoint) are its writes'.
    pub reader_fs_waits: Option<u8>,
    /// Threads of the process and its children waiting for their writes to reach storage.
    pub write_waits: Option<u8>,
    /// Remote files the tree has open read-only, and open for writing (`None`: open modes not read).
    pub remote_read_only: Option<u8>,
    pub remote_written: Option<u8>,
    /// KiB/s read through the tree's read-only remote descriptors since their previous scan.
    pub remote_read_kib_s: Option<u32>,
    /// CPUs the GPU process may run on (`Cpus_allowed_list`), when fewer than the host has online.
    pub allowed_cpus: Option<u16>,
    /// The mean busy share (%) of those CPUs.
    pub allowed_busy_pct: Option<u8>,
    /// `DataLoader` workers runnable (state R) at the sample, compile workers left out.
    pub workers_runnable: u8,
    /// The `DataLoader` workers' CPU use summed, % of one core (compile workers left out); `None` without workers.
    pub workers_cpu_pct: Option<u16>,
}

fn sat(n: u32) -> u8 {
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// The sum of a reading over processes: `None` when none of them had it.
fn sum(values: impl Iterator<Item = Option<u32>>) -> Option<u8> {
    values.flatten().fold(None, |acc: Option<u32>, v| Some(acc.unwrap_or(0).saturating_add(v))).map(sat)
}

impl InputSample {
    /// Folds a GPU process (`host`) and its `children` at one tick (an iterator it clones, so nothing is collected);
    /// `per_cpu` is the host's busy share per CPU.
    pub fn of<'a>(
        host: Option<&'a HostProcess>,
        children: &(impl Iterator<Item = &'a HostProcess> + Clone),
        per_cpu: &[Option<f32>],
    ) -> Self {
        let tree = || host.into_iter().chain(children.clone());
        let busy = |p: &HostProcess| p.cpu_pct.is_some_and(|c| c >= BUSY_WORKER_CPU_PCT);
        let count = |n: usize| sat(u32::try_from(n).unwrap_or(u32::MAX));
        let workers = || children.clone().filter(|c| !c.is_compile_worker());
        let compile = || children.clone().filter(|c| c.is_compile_worker());
        let socket = |p: &HostProcess| p.remote_waits.map(|r| r.saturating_sub(p.fs_waits.unwrap_or(0)));
        let files = |pick: fn(&crate::sample::RemoteFiles) -> u32| {
            sum(tree().map(|p| p.remote_files.as_ref().filter(|f| f.modes_read).map(pick)))
        };
        let reads_remote = |p: &HostProcess| {
            p.remote_files
                .as_ref()
                .is_some_and(|f| f.read_only > 0 && f.read_bytes_per_s.map_or(f.written == 0, |r| r > 0))
        };
        let read_bytes: Option<u64> =
            tree().filter_map(|p| p.remote_files.as_ref()?.read_bytes_per_s).reduce(u64::saturating_add);
        let (allowed_cpus, allowed_busy_pct) = allowed(host, per_cpu);
        #[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a CPU percentage, clamped")]
        let workers_cpu_pct = workers()
            .filter_map(|w| w.cpu_pct)
            .reduce(|a, b| a + b)
            .map(|sum| sum.clamp(0.0, f32::from(u16::MAX)).round() as u16);
        Self {
            busy_workers: count(workers().filter(|c| busy(c) || matches!(c.state, Some('R' | 'D'))).count()),
            compile_workers: count(compile().count()),
            compile_busy: count(compile().filter(|c| busy(c)).count()),
            worker_socket_waits: sum(workers().map(socket)).unwrap_or(0),
            fs_waits: sum(tree().map(|p| p.fs_waits)),
            worker_fs_waits: sum(workers().map(|p| p.fs_waits)),
            reader_fs_waits: sum(host.into_iter().map(|p| p.fs_waits.map(|n| if reads_remote(p) { n } else { 0 }))),
            write_waits: sum(tree().map(|p| p.write_waits)),
            remote_read_only: files(|f| f.read_only),
            remote_written: files(|f| f.written),
            remote_read_kib_s: read_bytes.map(|b| u32::try_from(b / 1024).unwrap_or(u32::MAX)),
            allowed_cpus,
            allowed_busy_pct,
            workers_runnable: count(workers().filter(|c| c.state == Some('R')).count()),
            workers_cpu_pct,
        }
    }
}

/// How many CPUs the process may run on, when fewer than the host has online, and their mean busy share.
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a percentage in 0..=100")]
fn allowed(host: Option<&HostProcess>, per_cpu: &[Option<f32>]) -> (Option<u16>, Option<u8>) {
    let Some(cpus) = host.and_then(|h| h.allowed_cpus.as_deref()) else { return (None, None) };
    let online = per_cpu.iter().filter(|c| c.is_some()).count();
    if cpus.is_empty() || online == 0 || cpus.len() >= online {
        return (None, None);
    }
    let busy: Vec<f32> =
        cpus.iter().filter_map(|c| per_cpu.get(usize::try_from(*c).ok()?).copied().flatten()).collect();
    let mean =
        (!busy.is_empty()).then(|| (busy.iter().sum::<f32>() / busy.len() as f32).clamp(0.0, 100.0).round() as u8);
    (u16::try_from(cpus.len()).ok(), mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::RemoteFiles;

    fn proc(pid: u32, cmdline: &str, cpu: f32, state: char) -> HostProcess {
        HostProcess {
            pid,
            ppid: Some(1),
            cmdline: cmdline.to_owned(),
            cpu_pct: Some(cpu),
            state: Some(state),
            ..HostProcess::default()
        }
    }

    #[test]
    fn idle_workers_and_compile_workers_are_not_feeding() {
        let gpu = proc(1, "python train.py", 100.0, 'R');
        let children = [
            proc(2, "python train.py", 60.0, 'S'),
            proc(3, "python train.py", 0.0, 'D'),
            proc(4, "python train.py", 0.2, 'S'),
            proc(
                5,
                "/usr/bin/python3 /opt/torch/_inductor/compile_worker/__main__.py --workers=32 --parent=1",
                30.0,
                'S',
            ),
            proc(6, "python -m torch._inductor.compile_worker --parent=1", 0.0, 'S'),
        ];
        let s = InputSample::of(Some(&gpu), &children.iter(), &[]);
        assert_eq!(s.busy_workers, 2, "a worker at 60 % and one in D; the idle one at 0.2 % is not feeding");
        assert_eq!((s.compile_workers, s.compile_busy), (2, 1));
        assert_eq!((s.fs_waits, s.remote_read_only, s.allowed_cpus), (None, None, None), "not read: None");
    }

    #[test]
    fn waits_and_remote_files_are_summed_over_the_tree() {
        let mut gpu = proc(1, "python serve.py", 10.0, 'S');
        (gpu.remote_waits, gpu.fs_waits, gpu.write_waits) = (Some(16), Some(0), Some(1));
        gpu.remote_files = Some(RemoteFiles { open: 2, written: 2, modes_read: true, ..RemoteFiles::default() });
        let mut worker = proc(2, "python serve.py", 10.0, 'S');
        (worker.remote_waits, worker.fs_waits) = (Some(1), Some(1));
        worker.remote_files = Some(RemoteFiles {
            open: 1,
            read_only: 1,
            modes_read: true,
            read_bytes_per_s: Some(10 * 1024 * 1024),
            ..RemoteFiles::default()
        });
        let mut old = proc(3, "python serve.py", 10.0, 'S');
        old.remote_waits = Some(1);
        let s = InputSample::of(Some(&gpu), &[worker, old].iter(), &[]);
        assert_eq!(s.worker_socket_waits, 1, "the worker's NFS wait is not a socket; the unsplit one counts");
        assert_eq!((s.fs_waits, s.write_waits), (Some(1), Some(1)));
        assert_eq!((s.remote_read_only, s.remote_written, s.remote_read_kib_s), (Some(1), Some(2), Some(10_240)));
    }

    #[test]
    fn a_process_on_fewer_cpus_than_the_host_has() {
        let mut gpu = proc(1, "python train.py", 100.0, 'R');
        let per_cpu: Vec<Option<f32>> = (0..16).map(|c| Some(if c < 2 { 99.0 } else { 3.0 })).collect();
        gpu.allowed_cpus = Some(vec![0, 1]);
        assert_eq!(allowed(Some(&gpu), &per_cpu), (Some(2), Some(99)));
        gpu.allowed_cpus = Some((0..16).collect());
        assert_eq!(allowed(Some(&gpu), &per_cpu), (None, None), "every CPU: not pinned");
    }
}

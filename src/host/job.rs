//! Job identity: which multi-process training job a GPU process belongs to, from what the host already shows.
//!
//! A training job on several GPUs is several processes (torchrun, `DeepSpeed`, Accelerate, Slurm's srun, mpirun),
//! one per rank. The pieces that tie them together, each read without privileges beyond what reading the
//! process's own files needs:
//! - the rendezvous in its environment (`/proc/PID/environ`, readable for one's own processes or as root):
//!   `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR`/`MASTER_PORT`, `TORCHELASTIC_RUN_ID`, Slurm's and Open MPI's
//!   rank variables, `SLURM_JOB_ID`, and in Kubernetes the pod's name (`HOSTNAME`) and namespace (`POD_NAMESPACE`);
//! - the container or scheduler in its cgroup path (`/proc/PID/cgroup`): a Docker container id, a Kubernetes pod uid
//!   and container id, a Slurm job id and step;
//! - the launcher among its ancestors' command lines.
//!
//! The cgroup is the stronger witness: a process cannot move itself out of the cgroup Slurm or the kubelet put it
//! in, while it can set any variable it likes. So a Slurm job named by Slurm's cgroup wins over `SLURM_JOB_ID`, and
//! it is read for every process, whether its environment can be read or not. Paths under a user's delegated
//! subtree (`user@UID.service`, where a user may create cgroups of any name) name neither a Slurm job nor a pod.
//! Every value taken from the environment is cut to [`ENV_VALUE_MAX_BYTES`].
//!
//! Everything here is a pure function over text; the sampler reads the files. An environment that cannot be read is
//! a note for the person, never an error: the process is then grouped by what else is known.

use std::fmt;

use crate::sample::JobInfo;

/// How a [`JobInfo::note`] starts when the process's `/proc/PID/environ` could not be read (another user's process,
/// without root): the jobs view counts these notes to say why such processes are grouped by launcher and cgroup only.
pub const ENVIRON_UNREADABLE: &str = "environment unreadable";

/// The most bytes kept of one environment value (a longer one is cut with [`crate::text::CUT_MARKER`]): a process
/// may set a variable of any size, and what is kept of it is held per process and may be exported as a label.
pub const ENV_VALUE_MAX_BYTES: usize = 256;

/// What a process's environment says about the job it belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct JobEnv {
    pub rank: Option<u32>,
    pub local_rank: Option<u32>,
    pub world_size: Option<u32>,
    /// `MASTER_ADDR:MASTER_PORT`, the rendezvous every rank of a torch.distributed job shares.
    pub master: Option<String>,
    /// torchrun's run id (`TORCHELASTIC_RUN_ID`), shared by every rank it started.
    pub run_id: Option<String>,
    pub slurm_job_id: Option<String>,
    /// The Slurm job's name (`SLURM_JOB_NAME`): for people only, never part of the key.
    pub slurm_job_name: Option<String>,
    /// Kubernetes pod name (`HOSTNAME` where `KUBERNETES_SERVICE_HOST` is set) and namespace (`POD_NAMESPACE`, set
    /// through the downward API where a deployment asks for it).
    pub pod: Option<String>,
    pub namespace: Option<String>,
}

impl JobEnv {
    /// Reads the job's variables from `(name, value)` pairs (as `host::maps::parse_environ` gives them).
    #[must_use]
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut env = Self::default();
        let (mut addr, mut port, mut kubernetes, mut hostname) = (None, None, false, None);
        // Several launchers name the same thing; the first of each list that is set wins.
        let mut ranks: [Option<u32>; 4] = [None; 4];
        let mut local_ranks: [Option<u32>; 4] = [None; 4];
        let mut sizes: [Option<u32>; 4] = [None; 4];
        for (name, value) in pairs {
            let number = || value.trim().parse::<u32>().ok();
            let text =
                || Some(crate::text::bounded(value.trim(), ENV_VALUE_MAX_BYTES).into_owned()).filter(|v| !v.is_empty());
            match name {
                "RANK" => ranks[0] = number(),
                "PMI_RANK" => ranks[1] = number(),
                "OMPI_COMM_WORLD_RANK" => ranks[2] = number(),
                "SLURM_PROCID" => ranks[3] = number(),
                "LOCAL_RANK" => local_ranks[0] = number(),
                "MPI_LOCALRANKID" => local_ranks[1] = number(),
                "OMPI_COMM_WORLD_LOCAL_RANK" => local_ranks[2] = number(),
                "SLURM_LOCALID" => local_ranks[3] = number(),
                "WORLD_SIZE" => sizes[0] = number(),
                "PMI_SIZE" => sizes[1] = number(),
                "OMPI_COMM_WORLD_SIZE" => sizes[2] = number(),
                "SLURM_NTASKS" => sizes[3] = number(),
                "MASTER_ADDR" => addr = text(),
                "MASTER_PORT" => port = text(),
                "TORCHELASTIC_RUN_ID" => env.run_id = text(),
                "SLURM_JOB_ID" => env.slurm_job_id = text(),
                "SLURM_JOBID" if env.slurm_job_id.is_none() => env.slurm_job_id = text(),
                "SLURM_JOB_NAME" => env.slurm_job_name = text(),
                "KUBERNETES_SERVICE_HOST" => kubernetes = true,
                "HOSTNAME" => hostname = text(),
                "POD_NAME" => env.pod = text(),
                "POD_NAMESPACE" => env.namespace = text(),
                _ => {}
            }
        }
        env.rank = ranks.into_iter().flatten().next();
        env.local_rank = local_ranks.into_iter().flatten().next();
        env.world_size = sizes.into_iter().flatten().next();
        env.master = addr.map(|a| port.map_or_else(|| a.clone(), |p| format!("{a}:{p}")));
        if kubernetes && env.pod.is_none() {
            env.pod = hostname;
        }
        env
    }

    /// Whether the environment says anything about a job.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }
}

/// The container or scheduler a cgroup path names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Container {
    /// A Docker container (or one started by containerd/CRI-O outside Kubernetes): its full id.
    Docker { id: String },
    /// A Kubernetes pod (its uid) and, where the path names it, the container's id.
    Kubernetes { pod_uid: String, container_id: Option<String> },
    /// A Slurm job, and its step where the path names one (`0`, `batch`, `extern`, `interactive`).
    Slurm { job_id: String, step: Option<String> },
}

impl fmt::Display for Container {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Docker { id } => write!(f, "container {}", short_id(id)),
            Self::Kubernetes { pod_uid, container_id: Some(c) } => {
                write!(f, "pod {} container {}", short_id(pod_uid), short_id(c))
            }
            Self::Kubernetes { pod_uid, container_id: None } => write!(f, "pod {}", short_id(pod_uid)),
            Self::Slurm { job_id, step: Some(step) } => write!(f, "Slurm job {job_id} step {step}"),
            Self::Slurm { job_id, step: None } => write!(f, "Slurm job {job_id}"),
        }
    }
}

/// The first 12 characters of a container id, as `docker ps` shows it.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The container or scheduler named by `/proc/PID/cgroup` (v1 or v2 lines, `ID:CONTROLLERS:PATH`), if any.
#[must_use]
pub fn container_of(cgroup_file: &str) -> Option<Container> {
    // v2's unified line ("0::") first, then any v1 line: the same path shows under each controller.
    let mut paths: Vec<&str> = cgroup_file.lines().filter_map(|l| l.splitn(3, ':').nth(2)).collect();
    paths.sort_by_key(|p| !cgroup_file.contains(&format!("0::{p}")));
    paths.into_iter().find_map(container_in_path)
}

/// The container or scheduler named by one cgroup path.
fn container_in_path(path: &str) -> Option<Container> {
    // A reader in its own cgroup namespace sees the paths of processes outside it as `/../../system.slice/...`.
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != "..").collect();
    if let Some((job_id, step)) = slurm_in_parts(&parts) {
        return Some(Container::Slurm { job_id: job_id.to_owned(), step: step.map(str::to_owned) });
    }
    if let Some((at, pod_uid)) = parts.iter().enumerate().find_map(|(i, p)| pod_uid_in(p).map(|uid| (i, uid)))
        && parts[..=at].iter().any(|p| p.contains("kubepods"))
        && !delegated(&parts[..at])
    {
        let container_id = parts[at + 1..].iter().rev().find_map(|p| container_id_in(p));
        return Some(Container::Kubernetes { pod_uid, container_id });
    }
    let container_id = parts.iter().rev().find_map(|p| container_id_in(p));
    let docker = parts.iter().any(|p| *p == "docker" || p.starts_with("docker-") || p.starts_with("libpod-"));
    container_id.filter(|_| docker || parts.len() == 1).map(|id| Container::Docker { id })
}

/// The Slurm job id and step that one cgroup path names, the way Slurm's own cgroup plugins lay them out:
/// - v1: `/slurm/uid_UID/job_ID/step_STEP/task_N` (`slurm_NODENAME` with several slurmd on one host);
/// - v2: `/system.slice/slurmstepd.scope/job_ID/step_STEP/user/task_N` (`NODENAME_slurmstepd.scope` likewise);
///
/// where STEP is a number, `batch`, `extern` or `interactive`, and the step and task may be absent (the job's own
/// cgroup). A path under a user's delegated subtree names no job.
#[must_use]
pub fn slurm_in_path(path: &str) -> Option<(&str, Option<&str>)> {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty() && *p != "..").collect();
    slurm_in_parts(&parts)
}

fn slurm_in_parts<'a>(parts: &[&'a str]) -> Option<(&'a str, Option<&'a str>)> {
    let job_at = parts.iter().enumerate().find_map(|(i, part)| {
        let v1 = (*part == "slurm" || part.starts_with("slurm_"))
            && parts.get(i + 1).and_then(|p| p.strip_prefix("uid_")).is_some_and(is_digits);
        let v2 = part.ends_with("slurmstepd.scope");
        match (v1, v2) {
            (true, _) => Some(i + 2),
            (false, true) => Some(i + 1),
            _ => None,
        }
    })?;
    if delegated(&parts[..job_at]) {
        return None;
    }
    let job_id = parts.get(job_at)?.strip_prefix("job_").filter(|id| is_digits(id))?;
    let step = parts
        .get(job_at + 1)
        .and_then(|p| p.strip_prefix("step_"))
        .filter(|s| !s.is_empty() && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'));
    Some((job_id, step))
}

/// Whether a path lies under a user's delegated subtree (`user@UID.service`), where the user may create cgroups
/// of any name, `job_4242` or `pod<uid>` included.
fn delegated(parts: &[&str]) -> bool {
    parts.iter().any(|p| p.starts_with("user@"))
}

/// A container id in one path component: `docker-<id>.scope`, `cri-containerd-<id>.scope`, `crio-<id>.scope`,
/// `libpod-<id>.scope` or a bare 64-hex id.
fn container_id_in(part: &str) -> Option<String> {
    let part = part.strip_suffix(".scope").unwrap_or(part);
    let id = ["docker-", "cri-containerd-", "crio-", "libpod-", "containerd-"]
        .iter()
        .find_map(|prefix| part.strip_prefix(prefix))
        .unwrap_or(part);
    (id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit())).then(|| id.to_owned())
}

/// A pod uid in one path component: `pod<uid>` (v1, dashes) or `kubepods-<qos>-pod<uid>.slice` (systemd,
/// underscores for dashes).
fn pod_uid_in(part: &str) -> Option<String> {
    let part = part.strip_suffix(".slice").unwrap_or(part);
    let start = part.rfind("pod")?;
    // `kubepods-besteffort-pod<uid>` (systemd) or, in kind's nested kubelet, `kubelet-kubepods-...-pod<uid>`.
    if start > 0 && !part.contains("kubepods") {
        return None;
    }
    let uid = part.get(start + 3..)?.replace('_', "-");
    let looks_like_uid = uid.len() == 36 && uid.bytes().all(|b| b.is_ascii_hexdigit() || b == b'-');
    looks_like_uid.then_some(uid)
}

fn is_digits(text: &str) -> bool {
    !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit())
}

/// A program that starts the ranks of a distributed job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Launcher {
    Torchrun,
    DeepSpeed,
    Accelerate,
    Srun,
    Mpirun,
}

impl Launcher {
    /// The name a person knows it by.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Self::Torchrun => "torchrun",
            Self::DeepSpeed => "deepspeed",
            Self::Accelerate => "accelerate",
            Self::Srun => "srun",
            Self::Mpirun => "mpirun",
        }
    }
}

/// The launcher a command line runs, if it is one: `torchrun`, `python -m torch.distributed.run` (or `.launch`),
/// `deepspeed`, `accelerate launch`, `srun`, `mpirun`/`mpiexec`.
#[must_use]
pub fn launcher_of(cmdline: &[String]) -> Option<Launcher> {
    let base = |arg: &String| arg.rsplit('/').next().unwrap_or(arg).to_owned();
    let program = cmdline.first().map(base)?;
    let by_name = |name: &str| match name {
        "torchrun" => Some(Launcher::Torchrun),
        "deepspeed" => Some(Launcher::DeepSpeed),
        "srun" => Some(Launcher::Srun),
        "mpirun" | "mpiexec" | "orterun" | "prterun" => Some(Launcher::Mpirun),
        _ => None,
    };
    if let Some(launcher) = by_name(&program) {
        return Some(launcher);
    }
    // A Python entry point: `python -m torch.distributed.run`, `python /usr/bin/torchrun`, `accelerate launch`.
    let args: Vec<String> = cmdline.iter().skip(1).map(base).collect();
    let is_python = program.starts_with("python");
    if program == "accelerate" || (is_python && args.first().is_some_and(|a| a == "accelerate")) {
        return args.iter().any(|a| a == "launch").then_some(Launcher::Accelerate);
    }
    if is_python {
        let module = cmdline.iter().position(|a| a == "-m").and_then(|i| cmdline.get(i + 1));
        match module.map(String::as_str) {
            Some("torch.distributed.run" | "torch.distributed.launch") => return Some(Launcher::Torchrun),
            Some("deepspeed.launcher.runner" | "deepspeed") => return Some(Launcher::DeepSpeed),
            _ => {}
        }
        return args.first().and_then(|script| by_name(script));
    }
    None
}

/// What ties a process to the other ranks of its job, strongest first. Two GPU processes with equal keys are one job.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum JobKey {
    /// The torch.distributed rendezvous (`MASTER_ADDR:MASTER_PORT`, with torchrun's run id where set).
    Rendezvous { master: String, run_id: Option<String> },
    /// A Slurm job.
    Slurm(String),
    /// The launcher process (its PID) that started the ranks.
    Launcher(u32),
    /// A Kubernetes pod or a container: the processes of one are one job.
    Container(String),
    /// Nothing ties it to another process: a job of its own.
    Alone(u32),
}

/// The job key of a process from what is known of it: its environment, the PID of a launcher among its ancestors,
/// its container. A Slurm job named by Slurm's cgroup comes first: every process of the job has it, whether its
/// environment could be read or not, and no variable can change it.
#[must_use]
pub fn job_key(pid: u32, env: &JobEnv, launcher_pid: Option<u32>, container: Option<&Container>) -> JobKey {
    if let Some(Container::Slurm { job_id, .. }) = container {
        return JobKey::Slurm(job_id.clone());
    }
    if let Some(master) = &env.master
        && (env.world_size.is_some_and(|n| n > 1) || env.rank.is_some())
    {
        return JobKey::Rendezvous { master: master.clone(), run_id: env.run_id.clone() };
    }
    if let Some(id) = env.slurm_job_id.clone() {
        return JobKey::Slurm(id);
    }
    if let Some(launcher) = launcher_pid {
        return JobKey::Launcher(launcher);
    }
    match container {
        Some(Container::Kubernetes { pod_uid, .. }) => JobKey::Container(pod_uid.clone()),
        Some(Container::Docker { id }) => JobKey::Container(id.clone()),
        Some(Container::Slurm { .. }) | None => JobKey::Alone(pid),
    }
}

impl JobKey {
    /// The key as a stable string id: `torch:ADDR:PORT[/RUN_ID]`, `slurm:ID`, `launcher:PID`, `container:ID`,
    /// `pid:PID`.
    #[must_use]
    pub fn id(&self) -> String {
        match self {
            Self::Rendezvous { master, run_id: Some(run) } => format!("torch:{master}/{run}"),
            Self::Rendezvous { master, run_id: None } => format!("torch:{master}"),
            Self::Slurm(id) => format!("slurm:{id}"),
            Self::Launcher(pid) => format!("launcher:{pid}"),
            Self::Container(id) => format!("container:{}", short_id(id)),
            Self::Alone(pid) => format!("pid:{pid}"),
        }
    }
}

/// The job of one GPU process, from its environment (if read), the launcher among its ancestors (its PID and
/// kind) and its cgroup file.
#[must_use]
pub fn job_info(
    pid: u32,
    env: &JobEnv,
    launcher: Option<(u32, Launcher)>,
    cgroup_file: &str,
    note: Option<String>,
) -> JobInfo {
    let container = container_of(cgroup_file);
    let key = job_key(pid, env, launcher.map(|(p, _)| p), container.as_ref());
    let (pod_uid, container_id, slurm) = match container {
        Some(Container::Kubernetes { pod_uid, container_id }) => (Some(pod_uid), container_id, None),
        Some(Container::Docker { id }) => (None, Some(id), None),
        Some(Container::Slurm { job_id, step }) => (None, None, Some((job_id, step))),
        None => (None, None, None),
    };
    let slurm_job_from_cgroup = slurm.is_some();
    let (slurm_job_id, slurm_step) = match slurm {
        Some((job_id, step)) => (Some(job_id), step),
        None => (env.slurm_job_id.clone(), None),
    };
    JobInfo {
        key: key.id(),
        rank: env.rank,
        local_rank: env.local_rank,
        world_size: env.world_size,
        launcher: launcher.map(|(_, l)| l.name().to_owned()),
        master: env.master.clone(),
        slurm_job_id,
        pod: env.pod.clone(),
        namespace: env.namespace.clone(),
        container: container_id,
        note,
        slurm_step,
        slurm_job_from_cgroup,
        pod_uid,
        slurm_job_name: env.slurm_job_name.clone(),
    }
}

/// The script a command line runs, as a person names it: a Python program's script (`train.py`) or module
/// (`-m pkg.train`), else the program's base name; `None` for an empty command line.
#[must_use]
pub fn short_command(cmdline: &str) -> Option<String> {
    let base = |arg: &str| arg.rsplit('/').next().unwrap_or(arg).to_owned();
    let mut args = cmdline.split_whitespace();
    let program = base(args.next()?);
    if !program.starts_with("python") {
        return Some(program);
    }
    while let Some(arg) = args.next() {
        match arg {
            "-m" => return Some(args.next().map_or(program, |m| format!("-m {m}"))),
            "-c" => return Some(format!("{program} -c")),
            "-W" | "-X" => {
                args.next();
            }
            a if a.starts_with('-') => {}
            a => return Some(base(a)),
        }
    }
    Some(program)
}

/// The name people read for a job, from what is known of it and one rank's command line: the Slurm job's id and
/// name ("slurm 4242 train"), else the launcher and script with the rendezvous ("torchrun train.py
/// @127.0.0.1:29500"), else the command ("python3 serve.py"). Text from outside: print it through
/// [`crate::text::visible`].
#[must_use]
pub fn display_name(job: &JobInfo, cmdline: &str) -> String {
    if let Some(id) = &job.slurm_job_id {
        return match &job.slurm_job_name {
            Some(name) => format!("slurm {id} {name}"),
            None => format!("slurm {id}"),
        };
    }
    let command = short_command(cmdline);
    let mut parts: Vec<String> = Vec::new();
    parts.extend(job.launcher.clone());
    parts.extend(command);
    if let Some(master) = &job.master {
        parts.push(format!("@{master}"));
    }
    if parts.is_empty() {
        return job.key.clone();
    }
    if job.master.is_none() {
        // A job of its own, or the ranks of one launcher: its PID (the launcher's) tells two runs of one script
        // apart.
        if let Some(pid) = job.key.strip_prefix("pid:").or_else(|| job.key.strip_prefix("launcher:")) {
            parts.push(format!("(pid {pid})"));
        }
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> JobEnv {
        JobEnv::from_pairs(pairs.iter().copied())
    }

    fn cmd(args: &[&str]) -> Vec<String> {
        args.iter().map(|&a| a.to_owned()).collect()
    }

    #[test]
    fn torchrun_ranks_read_their_rendezvous() {
        let e = env(&[
            ("RANK", "1"),
            ("LOCAL_RANK", "1"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "none"),
            ("PATH", "/usr/bin"),
        ]);
        assert_eq!((e.rank, e.local_rank, e.world_size), (Some(1), Some(1), Some(2)));
        assert_eq!(e.master.as_deref(), Some("127.0.0.1:29500"));
        let key = job_key(900, &e, Some(800), None);
        assert_eq!(key, JobKey::Rendezvous { master: "127.0.0.1:29500".into(), run_id: Some("none".into()) });
        // Rank 0 of the same job has the same key.
        let rank0 = env(&[
            ("RANK", "0"),
            ("WORLD_SIZE", "2"),
            ("MASTER_ADDR", "127.0.0.1"),
            ("MASTER_PORT", "29500"),
            ("TORCHELASTIC_RUN_ID", "none"),
        ]);
        assert_eq!(job_key(899, &rank0, Some(800), None), key);
    }

    #[test]
    fn mpi_and_slurm_ranks_fall_back_in_order() {
        let e =
            env(&[("OMPI_COMM_WORLD_RANK", "3"), ("OMPI_COMM_WORLD_LOCAL_RANK", "1"), ("OMPI_COMM_WORLD_SIZE", "8")]);
        assert_eq!((e.rank, e.local_rank, e.world_size), (Some(3), Some(1), Some(8)));
        let s = env(&[("SLURM_PROCID", "5"), ("SLURM_LOCALID", "1"), ("SLURM_NTASKS", "16"), ("SLURM_JOB_ID", "4242")]);
        assert_eq!((s.rank, s.local_rank, s.world_size), (Some(5), Some(1), Some(16)));
        assert_eq!(job_key(1, &s, None, None), JobKey::Slurm("4242".into()));
        // torch's own RANK wins over the scheduler's when both are set.
        let both = env(&[("SLURM_PROCID", "5"), ("RANK", "2")]);
        assert_eq!(both.rank, Some(2));
    }

    #[test]
    fn an_empty_or_unrelated_environment_is_a_job_of_its_own() {
        let e = env(&[("PATH", "/usr/bin"), ("RANK", "not a number"), ("MASTER_ADDR", "")]);
        assert!(e.is_empty());
        assert_eq!(job_key(77, &e, None, None), JobKey::Alone(77));
        // A MASTER_ADDR with neither a rank nor a world size (a leftover export) does not make a job.
        let leftover = env(&[("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "1234")]);
        assert_eq!(job_key(78, &leftover, None, None), JobKey::Alone(78));
    }

    #[test]
    fn kubernetes_pods_are_named_from_the_environment() {
        let e = env(&[("KUBERNETES_SERVICE_HOST", "10.96.0.1"), ("HOSTNAME", "trainer-0"), ("POD_NAMESPACE", "ml")]);
        assert_eq!(e.pod.as_deref(), Some("trainer-0"));
        assert_eq!(e.namespace.as_deref(), Some("ml"));
        // HOSTNAME outside Kubernetes is only a host name.
        assert_eq!(env(&[("HOSTNAME", "box")]).pod, None);
    }

    const ID: &str = "3f0c9a1b2c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7";

    #[test]
    fn containers_from_cgroup_paths() {
        assert_eq!(
            container_of(&format!("0::/system.slice/docker-{ID}.scope\n")),
            Some(Container::Docker { id: ID.into() })
        );
        assert_eq!(
            container_of(&format!("12:memory:/docker/{ID}\n11:cpu:/docker/{ID}\n")),
            Some(Container::Docker { id: ID.into() })
        );
        let pod = "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-".to_owned() + ID + ".scope\n";
        assert_eq!(
            container_of(&pod),
            Some(Container::Kubernetes {
                pod_uid: "1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901".into(),
                container_id: Some(ID.into())
            })
        );
        let v1 = format!("4:cpu:/kubepods/besteffort/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901/{ID}\n");
        assert!(matches!(container_of(&v1), Some(Container::Kubernetes { container_id: Some(_), .. })));
        assert_eq!(
            container_of("0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n"),
            Some(Container::Slurm { job_id: "4242".into(), step: Some("0".into()) })
        );
        assert_eq!(
            container_of("7:cpuset:/slurm/uid_1000/job_77/step_batch/task_0\n"),
            Some(Container::Slurm { job_id: "77".into(), step: Some("batch".into()) })
        );
    }

    #[test]
    fn ordinary_cgroups_name_no_container() {
        for text in [
            "0::/user.slice/user-1000.slice/session-3.scope\n",
            "0::/process_api/abcca2579c36bd8c86c1252fbbe7f884\n",
            "0::/\n",
            "0::/system.slice/ssh.service\n",
            "garbage without colons\n",
            "",
        ] {
            assert_eq!(container_of(text), None, "{text:?}");
        }
    }

    #[test]
    fn container_ids_show_short() {
        assert_eq!(Container::Docker { id: ID.into() }.to_string(), "container 3f0c9a1b2c4d");
        assert_eq!(Container::Slurm { job_id: "4242".into(), step: None }.to_string(), "Slurm job 4242");
        let step = Container::Slurm { job_id: "4242".into(), step: Some("batch".into()) };
        assert_eq!(step.to_string(), "Slurm job 4242 step batch");
    }

    #[test]
    fn launchers_from_command_lines() {
        let cases: [(&[&str], Option<Launcher>); 11] = [
            (&["/usr/local/bin/torchrun", "--nproc-per-node=2", "train.py"], Some(Launcher::Torchrun)),
            (
                &["/usr/bin/python3", "/usr/local/bin/torchrun", "--nproc-per-node=2", "train.py"],
                Some(Launcher::Torchrun),
            ),
            (&["python", "-m", "torch.distributed.run", "--nproc_per_node", "8", "t.py"], Some(Launcher::Torchrun)),
            (&["python3", "-m", "torch.distributed.launch", "t.py"], Some(Launcher::Torchrun)),
            (&["/opt/venv/bin/deepspeed", "--num_gpus", "8", "t.py"], Some(Launcher::DeepSpeed)),
            (&["/opt/venv/bin/python", "/opt/venv/bin/accelerate", "launch", "t.py"], Some(Launcher::Accelerate)),
            (&["accelerate", "config"], None),
            (&["srun", "-n", "8", "python", "t.py"], Some(Launcher::Srun)),
            (&["mpiexec", "-n", "4", "python", "t.py"], Some(Launcher::Mpirun)),
            (&["python", "train.py"], None),
            (&["bash", "-c", "torchrun t.py"], None),
        ];
        for (line, want) in cases {
            assert_eq!(launcher_of(&cmd(line)), want, "{line:?}");
        }
        assert_eq!(launcher_of(&[]), None);
    }

    #[test]
    fn keys_prefer_the_strongest_tie() {
        let none = JobEnv::default();
        let pod = Container::Kubernetes { pod_uid: "u".into(), container_id: None };
        assert_eq!(job_key(5, &none, Some(4), Some(&pod)), JobKey::Launcher(4));
        assert_eq!(job_key(5, &none, None, Some(&pod)), JobKey::Container("u".into()));
        let slurm = Container::Slurm { job_id: "9".into(), step: None };
        assert_eq!(job_key(5, &none, Some(4), Some(&slurm)), JobKey::Slurm("9".into()));
    }

    #[test]
    fn job_info_names_the_key_and_what_is_known() {
        let e = env(&[("RANK", "1"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "10.0.0.1"), ("MASTER_PORT", "29500")]);
        let info = job_info(901, &e, Some((900, Launcher::Torchrun)), &format!("0::/docker/{ID}\n"), None);
        assert_eq!(info.key, "torch:10.0.0.1:29500");
        assert_eq!((info.rank, info.world_size), (Some(1), Some(2)));
        assert_eq!(info.launcher.as_deref(), Some("torchrun"));
        assert_eq!(info.container.as_deref(), Some(ID));
        assert!(info.is_shared());
        let alone = job_info(5, &JobEnv::default(), None, "0::/\n", Some("environment unreadable".into()));
        assert_eq!(alone.key, "pid:5");
        assert!(!alone.is_shared());
        assert_eq!(JobKey::Launcher(4).id(), "launcher:4");
        assert_eq!(JobKey::Slurm("7".into()).id(), "slurm:7");
        assert_eq!(JobKey::Container(ID.into()).id(), "container:3f0c9a1b2c4d");
        let run = JobKey::Rendezvous { master: "h:1".into(), run_id: Some("r".into()) };
        assert_eq!(run.id(), "torch:h:1/r");
    }

    #[test]
    fn slurm_jobs_and_steps_from_real_cgroup_paths() {
        type Job<'a> = Option<(&'a str, Option<&'a str>)>;
        let cases: [(&str, Job<'_>); 14] = [
            // cgroup v1 (proctrack/cgroup, task/cgroup), each controller's line.
            ("/slurm/uid_1000/job_4242/step_0/task_0", Some(("4242", Some("0")))),
            ("/slurm/uid_1000/job_4242/step_batch/task_0", Some(("4242", Some("batch")))),
            ("/slurm/uid_1000/job_4242/step_extern/task_0", Some(("4242", Some("extern")))),
            ("/slurm/uid_1000/job_4242/step_interactive", Some(("4242", Some("interactive")))),
            ("/slurm/uid_1000/job_4242", Some(("4242", None))),
            // Several slurmd on one host (multiple-slurmd): the node's name after `slurm_`.
            ("/slurm_node07/uid_0/job_17/step_3/task_1", Some(("17", Some("3")))),
            // cgroup v2 (cgroup/v2 plugin): slurmstepd's scope, then the job, the step, `user` and the task.
            ("/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", Some(("4242", Some("0")))),
            ("/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0", Some(("4242", Some("batch")))),
            ("/system.slice/slurmstepd.scope/job_4242/step_extern/user/task_special", Some(("4242", Some("extern")))),
            ("/system.slice/slurmstepd.scope/job_4242", Some(("4242", None))),
            ("/system.slice/node07_slurmstepd.scope/job_9/step_1/user/task_0", Some(("9", Some("1")))),
            // Seen from inside another cgroup namespace.
            ("/../../system.slice/slurmstepd.scope/job_4242/step_0/user/task_0", Some(("4242", Some("0")))),
            // slurmd itself, and a job-less path with a `job_` name, are no job.
            ("/system.slice/slurmd.service", None),
            ("/system.slice/cron.service/job_12", None),
        ];
        for (path, want) in cases {
            assert_eq!(slurm_in_path(path), want, "{path}");
        }
    }

    #[test]
    fn a_users_delegated_cgroups_name_no_job_or_pod() {
        // Under user@UID.service a user may create cgroups of any name: none of them is Slurm's or the kubelet's.
        let forged = [
            "0::/user.slice/user-1000.slice/user@1000.service/app.slice/slurmstepd.scope/job_9999/step_0\n",
            "0::/user.slice/user-1000.slice/user@1000.service/slurm/uid_1000/job_9999\n",
            "0::/user.slice/user-1000.slice/user@1000.service/kubepods/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901\n",
        ];
        for text in forged {
            assert_eq!(container_of(text), None, "{text}");
        }
        // A pod uid outside the kubelet's hierarchy names no pod either.
        assert_eq!(container_of("0::/system.slice/pod1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901\n"), None);
        // kind's nested kubelet (systemd cgroup driver) is the kubelet's.
        let kind = "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-".to_owned() + ID + ".scope\n";
        assert!(matches!(container_of(&kind), Some(Container::Kubernetes { container_id: Some(_), .. })));
    }

    #[test]
    fn the_cgroups_slurm_job_wins_over_the_environment() {
        let forged = env(&[("SLURM_JOB_ID", "9999"), ("RANK", "0"), ("WORLD_SIZE", "2"), ("MASTER_ADDR", "h")]);
        let cgroup = "0::/system.slice/slurmstepd.scope/job_4242/step_0/user/task_0\n";
        let info = job_info(10, &forged, None, cgroup, None);
        assert_eq!(info.slurm_job_id.as_deref(), Some("4242"));
        assert_eq!(info.slurm_step.as_deref(), Some("0"));
        assert!(info.slurm_job_from_cgroup);
        // Every process of the job gets the same key, its environment readable or not.
        assert_eq!(info.key, "slurm:4242");
        let unreadable = job_info(11, &JobEnv::default(), None, cgroup, Some(ENVIRON_UNREADABLE.into()));
        assert_eq!((unreadable.key.as_str(), unreadable.slurm_job_id.as_deref()), ("slurm:4242", Some("4242")));
        // Without Slurm's cgroup, the environment's id is kept and said to be the environment's.
        let env_only = job_info(12, &env(&[("SLURM_JOB_ID", "77")]), None, "0::/user.slice\n", None);
        assert_eq!((env_only.slurm_job_id.as_deref(), env_only.slurm_job_from_cgroup), (Some("77"), false));
    }

    #[test]
    fn pods_keep_their_uid_apart_from_the_environments_name() {
        let pod = "0::/kubepods.slice/kubepods-pod1b2c3d4e_5f60_7182_93a4_b5c6d7e8f901.slice/cri-containerd-"
            .to_owned()
            + ID
            + ".scope\n";
        let unreadable = job_info(5, &JobEnv::default(), None, &pod, None);
        assert_eq!(unreadable.pod, None, "the uid is not the pod's name");
        assert_eq!(unreadable.pod_uid.as_deref(), Some("1b2c3d4e-5f60-7182-93a4-b5c6d7e8f901"));
        assert_eq!(unreadable.container.as_deref(), Some(ID));
        let named = job_info(5, &env(&[("KUBERNETES_SERVICE_HOST", "x"), ("HOSTNAME", "trainer-0")]), None, &pod, None);
        assert_eq!((named.pod.as_deref(), named.pod_uid.is_some()), (Some("trainer-0"), true));
    }

    #[test]
    fn huge_environment_values_are_cut() {
        let huge = "x".repeat(100 * 1024);
        let e = env(&[("SLURM_JOB_ID", &huge), ("POD_NAME", &huge), ("POD_NAMESPACE", &huge), ("MASTER_ADDR", &huge)]);
        for value in [&e.slurm_job_id, &e.pod, &e.namespace, &e.master] {
            let value = value.as_deref().expect("set");
            assert!(value.len() <= ENV_VALUE_MAX_BYTES, "{}", value.len());
            assert!(value.ends_with(crate::text::CUT_MARKER));
        }
    }

    #[test]
    fn jobs_are_named_for_people_by_slurm_then_launcher_script_and_rendezvous_then_command() {
        let torch = JobInfo {
            key: "torch:127.0.0.1:29500/none".to_owned(),
            launcher: Some("torchrun".to_owned()),
            master: Some("127.0.0.1:29500".to_owned()),
            ..JobInfo::default()
        };
        assert_eq!(
            display_name(&torch, "/usr/bin/python3 -u train.py --lr 3e-4"),
            "torchrun train.py @127.0.0.1:29500"
        );
        let slurm = JobInfo {
            key: "slurm:4242".to_owned(),
            slurm_job_id: Some("4242".to_owned()),
            slurm_job_name: Some("train".to_owned()),
            ..torch
        };
        assert_eq!(display_name(&slurm, "python train.py"), "slurm 4242 train");
        let unnamed = JobInfo { slurm_job_name: None, ..slurm };
        assert_eq!(display_name(&unnamed, "python train.py"), "slurm 4242");
        let alone = JobInfo { key: "pid:77".to_owned(), ..JobInfo::default() };
        assert_eq!(
            display_name(&alone, "python3 -m vllm.entrypoints.api_server"),
            "-m vllm.entrypoints.api_server (pid 77)"
        );
        assert_eq!(display_name(&alone, "/opt/bin/llama-server -m x.gguf"), "llama-server (pid 77)");
        let launched =
            JobInfo { key: "launcher:2000".to_owned(), launcher: Some("torchrun".to_owned()), ..JobInfo::default() };
        assert_eq!(display_name(&launched, "python train.py"), "torchrun train.py (pid 2000)");
        // Nothing known but the key: the key.
        assert_eq!(
            display_name(&JobInfo { key: "container:abc".to_owned(), ..JobInfo::default() }, ""),
            "container:abc"
        );
        let e = env(&[("SLURM_JOB_ID", "9"), ("SLURM_JOB_NAME", "bert")]);
        assert_eq!(e.slurm_job_name.as_deref(), Some("bert"));
    }
}

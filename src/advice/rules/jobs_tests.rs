//! The rules for jobs over several GPUs: rank-straggler and collective-hang fire on their scenarios and stay
//! quiet on a healthy neighbour one signal away.

use crate::advice::testkit::{Build, get, has};
use crate::advice::{Rule, Severity};
use crate::sample::Tick;

/// The GPU processes (ranks) of the two-GPU job scenarios.
const RANK0: u32 = 2001;
const RANK1: u32 = 3001;

fn set_gpm(tick: &mut Tick, gpu: usize, sm_active: f32) {
    if let Some(gpm) = tick.gpus[gpu].gpm.as_mut() {
        gpm.sm_active_pct = Some(sm_active);
    }
}

#[test]
fn rank_straggler_names_the_rank_the_others_wait_for_and_its_cause() {
    let f = Build::new("straggler").findings(90);
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!((straggler.gpu_index, straggler.pid, straggler.severity), (Some(1), Some(RANK1), Severity::Warning));
    assert!(straggler.title.starts_with("rank 1 (GPU 1, PID 3001)"), "{}", straggler.title);
    assert!(straggler.evidence.contains("rank 0 (GPU 0, PID 2001)"), "{}", straggler.evidence);
    assert!(straggler.evidence.contains("its own cause: cpu-bound-input in PID 3001"), "{}", straggler.evidence);
    // The waiting rank's GPU is underfed because of the straggler, not "cause unknown".
    let underfed = f.iter().find(|x| x.rule == Rule::GpuUnderfed && x.gpu_index == Some(0)).expect("underfed GPU 0");
    assert_eq!(underfed.severity, Severity::Info);
    assert!(underfed.title.contains("rank-straggler in PID 3001"), "{}", underfed.title);
    assert!(!has(&f, Rule::CollectiveHang));
    assert!(!has(&Build::new("straggler").findings(45), Rule::RankStraggler), "a minute is not judged on 45 s");
}

#[test]
fn rank_straggler_without_a_known_cause_says_so() {
    // The starved rank's worker is no longer pegged: no rule knows why it is slow.
    let b = Build::new("straggler").tick(|_, t| {
        for p in t.processes.iter_mut().filter(|p| p.pid == RANK1 + 1) {
            p.cpu_pct = Some(20.0);
        }
    });
    let f = b.findings(90);
    assert!(get(&f, Rule::RankStraggler).evidence.contains(super::jobs::CAUSE_UNKNOWN));
}

#[test]
fn rank_straggler_is_quiet_for_balanced_single_gpu_and_unrelated_ranks() {
    // Balanced: both ranks work (or both wait) alike.
    let working = Build::new("straggler").tick(|_, t| {
        for gpu in 0..2 {
            t.gpus[gpu].util_pct = Some(99);
            set_gpm(t, gpu, 95.0);
        }
    });
    assert!(!has(&working.findings(90), Rule::RankStraggler));
    let all_waiting = Build::new("straggler").tick(|_, t| {
        t.gpus[1].util_pct = Some(99);
        set_gpm(t, 1, 9.0);
    });
    assert!(!has(&all_waiting.findings(90), Rule::RankStraggler));
    // One GPU: nobody to wait for.
    assert!(!has(&Build::new("straggler:1").findings(90), Rule::RankStraggler));
    // The same numbers from unrelated processes (each a job of its own, or no job known) are no job.
    let unrelated = Build::new("straggler").tick(|_, t| {
        for p in &mut t.processes {
            if let Some(job) = p.job.as_mut() {
                job.key = format!("pid:{}", p.pid);
            }
        }
    });
    assert!(!has(&unrelated.findings(90), Rule::RankStraggler));
    let unknown = Build::new("straggler").tick(|_, t| t.processes.iter_mut().for_each(|p| p.job = None));
    assert!(!has(&unknown.findings(90), Rule::RankStraggler));
}

#[test]
fn collective_hang_is_critical_when_every_rank_spins() {
    let f = Build::new("hang").findings(150);
    let hang = get(&f, Rule::CollectiveHang);
    assert_eq!((hang.severity, hang.gpu_index, hang.pid), (Severity::Critical, Some(0), Some(RANK0)));
    assert!(hang.remedy.contains("NCCL's watchdog aborts it only at its timeout"), "{}", hang.remedy);
    assert!(hang.evidence.contains("rank 1 (GPU 1, PID 3001)"), "{}", hang.evidence);
    // The spinning GPUs are underfed because of the hang; nothing else warns.
    let others: Vec<Rule> = f
        .iter()
        .filter(|x| x.severity >= Severity::Warning && x.rule != Rule::CollectiveHang)
        .map(|x| x.rule)
        .collect();
    assert_eq!(others, Vec::<Rule>::new(), "{f:#?}");
    assert!(!has(&f, Rule::RankStraggler));
    assert!(!has(&Build::new("hang").findings(90), Rule::CollectiveHang), "two minutes are not judged on 90 s");
}

#[test]
fn collective_hang_is_quiet_while_data_moves_or_a_rank_works() {
    let moving = Build::new("hang").tick(|_, t| t.gpus[1].pcie_rx_kbps = Some(500_000));
    assert!(!has(&moving.findings(150), Rule::CollectiveHang));
    // NVLink carries the collective's data on NVLink machines: traffic there is no hang either.
    let nvlink = Build::new("hang").tick(|_, t| t.gpus[0].nvlink_rx_mib_s = Some(4_000));
    assert!(!has(&nvlink.findings(150), Rule::CollectiveHang));
    let working = Build::new("hang").tick(|_, t| set_gpm(t, 1, 60.0));
    assert!(!has(&working.findings(150), Rule::CollectiveHang));
    assert!(!has(&Build::new("straggler").findings(150), Rule::CollectiveHang));
    // Without GPM a spinning kernel cannot be told from work: no verdict.
    let blind = Build::new("hang").tick(|_, t| t.gpus.iter_mut().for_each(|g| g.gpm = None));
    assert!(!has(&blind.findings(150), Rule::CollectiveHang));
}

#[test]
fn rank_straggler_without_gpm_reads_power_for_utilization() {
    let no_gpm = |power_w: u32| {
        Build::new("straggler").machine(|m| m.gpus.iter_mut().for_each(|g| g.gpm_supported = false)).tick(
            move |_, t| {
                t.gpus.iter_mut().for_each(|g| g.gpm = None);
                t.gpus[0].power_mw = Some(power_w * 1000);
            },
        )
    };
    // The waiting rank: 99 % utilization at 250 W of 700 W (36 %).
    let f = no_gpm(250).findings(90);
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!((straggler.gpu_index, straggler.pid), (Some(1), Some(RANK1)));
    assert!(straggler.evidence.contains("of its limit (no GPM)"), "{}", straggler.evidence);
    // The neighbour: the same utilization at 600 W is work, not waiting.
    assert!(!has(&no_gpm(600).findings(90), Rule::RankStraggler));
}

#[test]
fn rank_straggler_names_compute_when_its_gpu_works_flat_out() {
    // Rank 1 runs twice the forward/backward per step (the recorded compute straggler): its GPU busy with real SM
    // work, rank 0's NCCL kernels spinning while it waits.
    fn heavy(t: &mut Tick) {
        t.gpus[0].util_pct = Some(99);
        set_gpm(t, 0, 12.0);
        t.gpus[1].util_pct = Some(98);
        set_gpm(t, 1, 85.0);
        for p in t.processes.iter_mut().filter(|p| p.pid == RANK1 + 1) {
            p.cpu_pct = Some(20.0); // its loader keeps up
        }
    }
    let f = Build::new("straggler").tick(|_, t| heavy(t)).findings(90);
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!((straggler.gpu_index, straggler.pid), (Some(1), Some(RANK1)), "{f:#?}");
    assert!(straggler.evidence.contains("its own cause: compute"), "{}", straggler.evidence);
    assert!(straggler.remedy.contains("the same work per step"), "{}", straggler.remedy);
    // Its neighbour: the same straggler whose GPU does little (SM activity 35 %) is not called compute.
    let light = Build::new("straggler").tick(|_, t| {
        heavy(t);
        set_gpm(t, 1, 35.0);
    });
    let f = light.findings(90);
    assert!(!get(&f, Rule::RankStraggler).evidence.contains("compute"), "{f:#?}");
}

/// The hang two H200s showed (docs/validation.md): rank 1 left the step loop, so it never reached the all_reduce
/// rank 0 spins in. Rank 0: 100 % utilization, SM activity 18 %; rank 1: no GPU work; no traffic.
fn rank1_absent(t: &mut Tick) {
    t.gpus[1].util_pct = Some(0);
    set_gpm(t, 1, 0.0);
}

#[test]
fn collective_hang_names_the_rank_that_never_joined() {
    let f = Build::new("hang").tick(|_, t| rank1_absent(t)).findings(150);
    let hang = get(&f, Rule::CollectiveHang);
    assert_eq!((hang.severity, hang.gpu_index, hang.pid), (Severity::Critical, Some(1), Some(RANK1)), "{f:#?}");
    assert!(hang.title.contains("rank 1 (GPU 1, PID 3001) never joined it"), "{}", hang.title);
    assert!(hang.evidence.contains("spinning in the collective: rank 0 (GPU 0, PID 2001)"), "{}", hang.evidence);
    assert!(hang.remedy.contains("py-spy dump --pid 3001"), "{}", hang.remedy);
    // One verdict: not also a straggler, and both GPUs' underfed findings name the hang.
    assert!(!has(&f, Rule::RankStraggler), "{f:#?}");
    // Before the two minutes are up the same job is a straggler whose rank shows no GPU work.
    let early = Build::new("hang").tick(|_, t| rank1_absent(t)).findings(90);
    assert!(!has(&early, Rule::CollectiveHang));
    let straggler = get(&early, Rule::RankStraggler);
    assert_eq!(straggler.gpu_index, Some(1));
    assert!(straggler.evidence.contains("it shows no GPU work"), "{}", straggler.evidence);
}

#[test]
fn collective_hang_is_quiet_for_a_slow_rank_or_a_checkpoint() {
    // The absent-looking rank does some GPU work (5 %): a straggler, not a hang.
    let slow = Build::new("hang").tick(|_, t| {
        rank1_absent(t);
        t.gpus[1].util_pct = Some(5);
    });
    let f = slow.findings(150);
    assert!(!has(&f, Rule::CollectiveHang), "{f:#?}");
    assert_eq!(get(&f, Rule::RankStraggler).gpu_index, Some(1));
    // Rank 1 writes a checkpoint while rank 0 waits: slow, not stuck.
    let checkpoint = Build::new("hang").tick(|_, t| {
        rank1_absent(t);
        for p in t.processes.iter_mut().filter(|p| p.pid == RANK1) {
            p.write_bytes_per_s = Some(800 << 20);
        }
    });
    assert!(!has(&checkpoint.findings(150), Rule::CollectiveHang));
    // Every rank absent: nobody spins, nothing to say here (idle-holder's business).
    let idle = Build::new("hang").tick(|_, t| {
        rank1_absent(t);
        t.gpus[0].util_pct = Some(0);
        set_gpm(t, 0, 0.0);
    });
    assert!(!has(&idle.findings(150), Rule::CollectiveHang));
}

/// The compute straggler two H200s showed (docs/validation.md): rank 1 runs forward/backward twice a step. Rank 0
/// waits half of every step: util 90 %, SM activity 43 %; rank 1: util 81 %, SM activity 65 %. No rank looks idle.
fn twice_the_work(t: &mut Tick, waiting_sm: f32) {
    t.gpus[0].util_pct = Some(90);
    set_gpm(t, 0, waiting_sm);
    t.gpus[1].util_pct = Some(81);
    set_gpm(t, 1, 65.0);
    for p in t.processes.iter_mut().filter(|p| p.pid == RANK1 + 1) {
        p.cpu_pct = Some(20.0); // its loader keeps up
    }
}

#[test]
fn rank_straggler_finds_a_rank_with_more_work_per_step() {
    let f = Build::new("straggler").tick(|_, t| twice_the_work(t, 43.0)).findings(90);
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!((straggler.gpu_index, straggler.pid), (Some(1), Some(RANK1)), "{f:#?}");
    assert!(straggler.evidence.contains("its own cause: compute"), "{}", straggler.evidence);
    assert!(straggler.evidence.contains("rank 0 (GPU 0, PID 2001): util 90 %"), "{}", straggler.evidence);
    // Neighbours: SM activity within the ratio (55 % against 65 %), and a waiting rank less busy than the pace
    // setter (it would not be spinning through the gap).
    assert!(!has(&Build::new("straggler").tick(|_, t| twice_the_work(t, 55.0)).findings(90), Rule::RankStraggler));
    let less_busy = Build::new("straggler").tick(|_, t| {
        twice_the_work(t, 43.0);
        t.gpus[0].util_pct = Some(70);
    });
    assert!(!has(&less_busy.findings(90), Rule::RankStraggler));
}

/// Scenario `straggler` with rank 1 preparing its data in its main thread (num_workers=0, the thread pegged), and
/// rank 0's main thread pegged too (a rank that waits in a collective spins in its synchronizing main thread).
fn rank1_prepares_alone(t: &mut Tick) {
    t.processes.retain(|p| p.ppid != Some(RANK1) && p.ppid != Some(RANK0));
    for p in t.processes.iter_mut().filter(|p| p.pid == RANK1 || p.pid == RANK0) {
        p.busiest_thread =
            Some(crate::sample::ThreadCpu { tid: p.pid, name: "pt_main_thread".to_owned(), cpu_pct: 99.5 });
    }
}

#[test]
fn a_rank_that_prepares_its_data_in_its_main_thread_is_cpu_bound_input() {
    let f = Build::new("straggler").tick(|_, t| rank1_prepares_alone(t)).findings(90);
    let cpu = f.iter().find(|x| x.rule == Rule::CpuBoundInput && x.pid == Some(RANK1)).expect("cpu-bound-input");
    assert!(cpu.remedy.contains("prepares the data itself"), "{}", cpu.remedy);
    assert!(get(&f, Rule::RankStraggler).evidence.contains("its own cause: cpu-bound-input in PID 3001"), "{f:#?}");
    // Rank 0 spins in the collective (its utilization high, SM activity low): its pegged main thread is a wait.
    assert!(
        !f.iter().any(|x| x.pid == Some(RANK0) && matches!(x.rule, Rule::CpuBoundInput | Rule::MainThreadBound)),
        "{f:#?}"
    );
    // One signal away: rank 1's GPU spins too (utilization high, SM activity low): no host-side cause named.
    let spinning = Build::new("straggler").tick(|_, t| {
        rank1_prepares_alone(t);
        t.gpus[1].util_pct = Some(99);
    });
    let f = spinning.findings(90);
    assert!(!f.iter().any(|x| matches!(x.rule, Rule::CpuBoundInput | Rule::MainThreadBound)), "{f:#?}");
}

#[test]
fn every_rank_spinning_while_data_moves_waits_for_communication_whatever_the_transport() {
    // Scenario `hang` with data moving (NCCL over TCP sockets copies through the host: PCIe both ways, a fraction
    // of the link): the ranks wait for their communication, not for each other, and the job is not stuck.
    let tcp = Build::new("hang").tick(|_, t| {
        for gpu in &mut t.gpus {
            (gpu.pcie_rx_kbps, gpu.pcie_tx_kbps) = (Some(600_000), Some(600_000));
        }
        t.host.net = vec![crate::sample::NetRate {
            name: "eth0".to_owned(),
            kind: crate::sample::NetKind::Ethernet,
            rx_bytes_per_s: 1_150_000_000,
            tx_bytes_per_s: 1_150_000_000,
        }];
    });
    let f = tcp.findings(150);
    let comm: Vec<&crate::advice::Finding> = f.iter().filter(|x| x.rule == Rule::CommBound).collect();
    assert_eq!(comm.len(), 2, "{f:#?}");
    assert!(comm.iter().all(|c| c.severity == Severity::Warning), "{comm:#?}");
    assert!(
        comm[0].evidence.contains("every rank of job") && comm[0].evidence.contains("eth0 RX 1.1 GiB/s"),
        "{comm:#?}"
    );
    assert!(!has(&f, Rule::CollectiveHang) && !has(&f, Rule::RankStraggler), "{f:#?}");
    // With nothing moving it stays a hang.
    assert!(has(&Build::new("hang").findings(150), Rule::CollectiveHang));
}

#[test]
fn a_rank_at_ninety_nine_percent_waits_for_a_throttled_rank_at_a_hundred() {
    // Rank 1 runs flat out on a thermally throttled GPU (SM activity 90 %, utilization 100 %); rank 0 does half
    // its work and reads 99 %, within the driver's sampling noise of "as busy".
    let b = Build::new("straggler").tick(|_, t| {
        t.gpus[0].util_pct = Some(99);
        set_gpm(t, 0, 45.0);
        t.gpus[1].util_pct = Some(100);
        set_gpm(t, 1, 90.0);
        t.gpus[1].throttle_bits = Some(crate::sample::throttle::HW_THERMAL_SLOWDOWN);
        for p in t.processes.iter_mut().filter(|p| p.pid == RANK1 + 1) {
            p.cpu_pct = Some(20.0);
        }
    });
    let f = b.findings(90);
    let straggler = get(&f, Rule::RankStraggler);
    assert_eq!(straggler.gpu_index, Some(1), "{f:#?}");
    assert!(straggler.evidence.contains("throttled"), "{}", straggler.evidence);
}

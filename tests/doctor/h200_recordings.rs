//! Recordings made on a real H200 while real PyTorch jobs ran (`scripts/device/cluster_cases.sh` with GROUP=findings,
//! waits, ranks and memory; docs/validation.md, "Findings on real PyTorch jobs"), replayed through `doctor --json`: the
//! verdicts seen on the hardware stay the verdicts.
#![allow(
    clippy::expect_used,
    clippy::disallowed_methods,
    reason = "tests run the binary and may panic on broken fixtures"
)]

use serde_json::Value;

use crate::common::{finding, repo_path, warnings};

/// `doctor --replay FIXTURE --json`: the document and the exit code.
fn doctor(fixture: &str) -> (Value, i32) {
    let path = repo_path(&format!("tests/fixtures/h200/{fixture}"));
    let (output, doc) = crate::common::doctor_json(&["--replay", path.to_str().expect("utf-8 path")]);
    (doc, output.status.code().expect("an exit code"))
}

fn rules(doc: &Value) -> Vec<(String, String)> {
    doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| (f["rule"].as_str().unwrap_or("").to_owned(), f["severity"].as_str().unwrap_or("").to_owned()))
        .collect()
}

#[test]
fn a_loader_behind_a_slow_store_is_input_bound() {
    // ResNet-50 reading 24,000 small raw files through 2 DataLoader workers held behind io.max (600 reads/s,
    // 64 MiB/s) with the page cache dropped every second: torch.profiler put the DataLoader at 98.7 % of the step.
    // The workers read about 3 MiB/s and sat in D; a 5 MiB/s floor on "in D while reading" once hid this.
    let (doc, code) = doctor("small-files.jsonl.gz");
    assert_eq!(code, 1, "{doc}");
    assert_eq!(rules(&doc), vec![("input-bound".to_owned(), "warning".to_owned())], "{doc}");
    let finding = &doc["findings"][0];
    assert_eq!(finding["pid"], 775, "the training process");
    assert!(finding["evidence"].as_str().unwrap_or("").contains("a DataLoader child in 100 %"), "{finding}");
}

/// Asserts the one warning a case gives (none for a healthy neighbour) and returns the document.
fn expect_warnings(fixture: &str, want: &[&str]) -> Value {
    let (doc, code) = doctor(fixture);
    assert_eq!(warnings(&doc), want, "{fixture}: {doc}");
    assert_eq!(code, i32::from(!want.is_empty()), "{fixture}: {doc}");
    doc
}

/// The severity of `rule` in the document, or "" when it is not there.
fn severity<'a>(doc: &'a Value, rule: &str) -> &'a str {
    doc["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == rule))
        .map_or("", |f| f["severity"].as_str().unwrap_or(""))
}

/// The rules folded into the verdict of `rule` ("also seen"): one verdict per GPU.
fn folded<'a>(doc: &'a Value, rule: &str) -> Vec<&'a str> {
    doc["findings"]
        .as_array()
        .and_then(|a| a.iter().find(|f| f["rule"] == rule))
        .and_then(|f| f["also"].as_array())
        .map(|also| also.iter().filter_map(|a| a["rule"].as_str()).collect())
        .unwrap_or_default()
}

// A GPU waiting on its host: the cases recorded beside doctor by `scripts/device/cluster_cases.sh` with GROUP=waits
// on one H200 (the ground truth profiled only after doctor's window). Figures in the comments are torch.profiler's.

#[test]
fn eager_tiny_ops_are_launch_bound() {
    // 2,000 tiny elementwise ops and an MLP at batch 8, eager: step 25.5 ms, NVML util 16 %, GPM SM activity 0.1 %,
    // the main thread at 96 % of a core. cpu-bound-input also holds (0 workers, pegged main thread): folded into it.
    let doc = expect_warnings("launch-tiny.jsonl.gz", &["launch-bound"]);
    assert_eq!(severity(&doc, "cpu-bound-input"), "", "{doc}");
    assert!(folded(&doc, "launch-bound").contains(&"cpu-bound-input"), "{doc}");
}

#[test]
fn the_same_ops_in_a_cuda_graph_are_not_launch_bound_but_do_little_work() {
    // One CUDA graph replay per step (1.97 ms): util 94 %, GPM SM activity 0.8 %. The CPU keeps up, so no
    // launch-bound; the kernels use a sliver of the chip, which util-misleading says, named by the umbrella.
    let doc = expect_warnings("launch-graph.jsonl.gz", &["util-misleading"]);
    assert_eq!(severity(&doc, "launch-bound"), "", "{doc}");
    assert_eq!(folded(&doc, "util-misleading"), vec!["gpu-underfed"], "{doc}");
}

#[test]
fn the_same_op_count_on_big_tensors_is_healthy() {
    // 4096x4096 tensors, the MLP at batch 4096: util 100 %, 532 W. memory-bound is info.
    let doc = expect_warnings("launch-b4096.jsonl.gz", &[]);
    assert_eq!(severity(&doc, "memory-bound"), "info", "{doc}");
}

#[test]
fn pageable_copies_are_h2d_copy_bound_and_the_rest_is_said_under_it() {
    // 1 GiB from pageable memory each step with a tiny reduction: copies 99.5 % of the step, at 7.6 GB/s. Everything
    // else that holds on the GPU is folded into the one verdict.
    expect_warnings("h2d-pageable.jsonl.gz", &["h2d-copy-bound"]);
}

#[test]
fn pinned_copies_near_the_link_rate_are_h2d_copy_bound() {
    // 1 GiB from pinned memory: copies 98.4 % of the step at 54.7 GB/s (RX 93 % of the link). NVML util 98 % with SM
    // activity 0 %: util-misleading holds too, folded into the copies' verdict.
    let doc = expect_warnings("h2d-pinned.jsonl.gz", &["h2d-copy-bound"]);
    assert_eq!(severity(&doc, "util-misleading"), "", "{doc}");
    assert!(folded(&doc, "h2d-copy-bound").contains(&"util-misleading"), "{doc}");
}

#[test]
fn copies_hidden_under_compute_are_not_a_finding() {
    // Pinned copies at 53 GB/s on a side stream under bf16 matmuls: the GPU is busy (util 99 %, 691 W).
    expect_warnings("h2d-overlap.jsonl.gz", &[]);
}

#[test]
fn a_loader_in_a_two_cpu_quota_is_cpu_quota_throttled() {
    // ResNet-152 on JPEGs, 8 workers, in a cgroup v2 with cpu.max of 2 CPUs: 358 images/s against 1,166 outside it;
    // cpu.stat throttled 619 of 653 periods over the case.
    let doc = expect_warnings("cpu-quota.jsonl.gz", &["cpu-quota-throttled"]);
    let finding = &doc["findings"][0];
    assert!(finding["evidence"].as_str().unwrap_or("").contains("quota 2 CPUs"), "{finding}");
}

#[test]
fn the_same_loader_outside_the_quota_is_healthy() {
    expect_warnings("cpu-quota-free.jsonl.gz", &[]);
}

#[test]
fn a_dataset_read_over_http_is_a_remote_dataset_stall() {
    // Each JPEG from a 127.0.0.1 server sleeping 20 ms per request: DataLoader 81 % of the step, 297 images/s.
    expect_warnings("remote-http.jsonl.gz", &["remote-dataset-stall"]);
}

#[test]
fn the_same_job_from_local_disk_is_healthy() {
    // The same files from local disk: 1,298 images/s, DataLoader 0.2 % of the step.
    expect_warnings("remote-local.jsonl.gz", &[]);
}

#[test]
fn a_job_starved_by_its_own_profiler_is_main_thread_bound() {
    // An earlier recording of remote-local, whose harness summed every profiled cycle's events in the main thread (at
    // 98 % of a core, below a full core in a quarter of the samples) while the workers idled: GPU util mean 17 %. The
    // main thread's own work set the pace; no input or storage cause may be named.
    let (doc, _) = doctor("remote-local-profiler-starved.jsonl.gz");
    for rule in rules(&doc).iter().map(|(r, _)| r.as_str()) {
        assert!(
            !matches!(rule, "input-bound" | "cpu-bound-input" | "remote-dataset-stall" | "cpu-quota-throttled"),
            "{rule} named on local files: {doc}"
        );
    }
    assert_eq!(warnings(&doc), ["main-thread-bound"], "{doc}");
}

// Jobs over several GPUs, four shapes, recorded beside doctor by `scripts/device/cluster_cases.sh` with GROUP=ranks on
// two H200s: a real torchrun job of two ranks (ResNet-50, DDP over NCCL, a real DataLoader per rank), one rank per GPU.
// The ground truth is the job's own per-rank log (docs/validation.md, "Findings on real PyTorch jobs"). ranks-loader
// and ranks-hang were recorded before the host reader stopped counting the TCP sockets a DataLoader worker inherits
// from its rank: their workers' counts are rewritten to what the fixed reader reads (each worker held exactly its
// rank's 8 store and NCCL sockets, so 0 of its own); ranks-balanced and ranks-compute come from the re-run with the
// fixed reader, whose live verdicts were the ones asserted here.

#[test]
fn balanced_ranks_are_no_straggler_and_no_hang() {
    // 8 DataLoader workers per rank: both ranks at 2,658 img/s, util 78 % and SM activity 54 % on each GPU.
    expect_warnings("ranks-balanced.jsonl.gz", &[]);
}

#[test]
fn a_rank_starved_by_its_loader_is_the_straggler_with_its_loader_named() {
    // Rank 1 with one DataLoader worker: both ranks at 436 img/s, rank 1 waiting 87 % of its step for data. Rank
    // 0's GPU looked busiest (util 98 %, SM activity 25 %: NCCL spinning), rank 1's idle (util 7 %, SM 9 %).
    let doc = expect_warnings("ranks-loader.jsonl.gz", &["cpu-bound-input", "rank-straggler"]);
    let straggler = finding(&doc, "rank-straggler");
    assert_eq!((straggler["gpu_index"].as_u64(), straggler["pid"].as_u64()), (Some(1), Some(956)), "{straggler}");
    let evidence = straggler["evidence"].as_str().unwrap_or("");
    assert!(evidence.contains("its own cause: cpu-bound-input in PID 956"), "{evidence}");
    assert!(evidence.contains("rank 0 (GPU 0, PID 955): util 98 %"), "{evidence}");
    assert_eq!(severity(&doc, "remote-dataset-stall"), "", "inherited sockets are not a remote dataset");
}

#[test]
fn a_rank_with_twice_the_work_is_the_straggler_with_compute_named() {
    // Rank 1 runs forward/backward twice a step: both ranks at 1,792 img/s; rank 0 util 92 %, SM activity 47 %,
    // rank 1 util 90 %, SM activity 73 %. No rank looks idle, so only the comparison finds it.
    let doc = expect_warnings("ranks-compute.jsonl.gz", &["rank-straggler"]);
    let straggler = finding(&doc, "rank-straggler");
    assert_eq!((straggler["gpu_index"].as_u64(), straggler["pid"].as_u64()), (Some(1), Some(1103)), "{straggler}");
    assert!(straggler["evidence"].as_str().unwrap_or("").contains("its own cause: compute"), "{straggler}");
}

#[test]
fn a_rank_that_left_the_all_reduce_is_a_collective_hang() {
    // Rank 1 stopped joining all_reduce at step 20 (process-group timeout 300 s): rank 0 spun at util 100 %, SM
    // activity 18 %, 124 W; rank 1 showed util 0 %; PCIe ~1 MiB/s and NVLink 0 on both for the whole recording.
    let (doc, code) = doctor("ranks-hang.jsonl.gz");
    assert_eq!(code, 2, "critical: {doc}");
    assert_eq!(warnings(&doc), vec!["collective-hang".to_owned()], "{doc}");
    let hang = finding(&doc, "collective-hang");
    assert_eq!((hang["gpu_index"].as_u64(), hang["pid"].as_u64()), (Some(1), Some(2175)), "{hang}");
    assert!(hang["title"].as_str().unwrap_or("").contains("rank 1 (GPU 1, PID 2175) never joined it"), "{hang}");
}

// Recordings of real PyTorch programs in cluster conditions on one H200 (scripts/device/cluster_cases.sh,
// docs/validation.md, "Findings in cluster conditions"), each with the program's own ground truth.

/// `doctor --replay` of a `GROUP=memory` recording, with that group's thresholds file (idle-holder judged over
/// 40 s instead of 300; everything else at its default), as it was judged on the card.
fn doctor_memory(fixture: &str) -> Value {
    let config = repo_path("tests/fixtures/h200/memory-thresholds.toml");
    let path = repo_path(&format!("tests/fixtures/h200/{fixture}"));
    let (output, doc) = crate::common::doctor_json(&[
        "--config",
        config.to_str().expect("utf-8 path"),
        "--replay",
        path.to_str().expect("utf-8 path"),
    ]);
    assert!(output.status.code().is_some(), "{fixture}: an exit code");
    doc
}

// The memory rules on real programs (`GROUP=memory`, docs/validation.md, "The memory rules on real programs"); each
// program logged its own `memory_reserved` timeline. Figures in the comments are the programs' own.

#[test]
fn a_loop_keeping_each_validation_loss_with_its_graph_is_vram_growing() {
    // A 4-layer MLP training loop that appended every 10th step's validation loss with its graph: reserved memory
    // rose 2,148 MiB/min (R² 0.999) in a straight line, 585 graphs kept by the end.
    let doc = doctor_memory("memory-leak.jsonl.gz");
    assert_eq!(warnings(&doc), ["vram-growing"], "{doc}");
    let found = finding(&doc, "vram-growing");
    assert_eq!(found["pid"], 497, "{found}");
    let evidence = found["evidence"].as_str().unwrap_or("");
    assert!(evidence.contains("MiB/min, R² 1.00"), "{evidence}");
}

#[test]
fn the_same_loop_keeping_plain_numbers_is_not_vram_growing() {
    // The same loop keeping `.item()`: reserved memory flat (0 MiB/min) after its warm-up.
    let doc = doctor_memory("memory-leak-free.jsonl.gz");
    assert_eq!(warnings(&doc), Vec::<String>::new(), "{doc}");
    assert!(doc["findings"].as_array().expect("findings").is_empty(), "{doc}");
}

#[test]
fn a_notebook_idle_after_training_is_an_idle_holder() {
    // 20 s of training, then 80 s holding 9.1 GiB reserved (a 4 GiB dataset on the GPU) and running nothing.
    let doc = doctor_memory("memory-idle-holder.jsonl.gz");
    assert_eq!(warnings(&doc), ["idle-holder"], "{doc}");
    assert_eq!(finding(&doc, "idle-holder")["pid"], 1112);
    // At the default 5-minute window the same 80 s of idleness is too short to judge.
    let path = repo_path("tests/fixtures/h200/memory-idle-holder.jsonl.gz");
    let (_, default) = crate::common::doctor_json(&["--replay", path.to_str().expect("utf-8 path")]);
    assert_eq!(warnings(&default), Vec::<String>::new(), "{default}");
}

#[test]
fn a_server_pausing_longer_than_the_idle_window_is_serving_not_idle() {
    // Bursts of 6 s with 50 s pauses (272 requests, inference 16 % of wall time), 2 GiB held beside the weights:
    // each pause covers a whole 40 s idle-holder window while its clients' connections are still open.
    let doc = doctor_memory("memory-serve-pauses.jsonl.gz");
    assert_eq!(warnings(&doc), Vec::<String>::new(), "{doc}");
    assert_eq!(severity(&doc, "serving"), "info", "{doc}");
    assert_eq!(finding(&doc, "serving")["pid"], 1338);
}

#[test]
fn a_bursty_inference_server_is_serving_not_idle() {
    // A ResNet-50 behind a threaded HTTP server, 4 clients in bursts of about 6 s with 20 s pauses, 933 requests
    // in 363 s, 1 GiB held beside the weights: its own SM utilization was above 0 in a fifth of the samples.
    let doc = expect_warnings("serve-bursty-http.jsonl.gz", &[]);
    assert_eq!(severity(&doc, "serving"), "info", "{doc}");
    assert_eq!(severity(&doc, "idle-holder"), "", "a server that runs kernels is not idle: {doc}");
}

#[test]
fn an_optimizer_on_the_cpu_is_the_main_thread_not_the_input() {
    // AdamW on the CPU by the main thread after 8 accumulated micro-steps (ZeRO-offload's shape): the program
    // measured 94 % of its wall time in the CPU optimizer step and 4 % on the GPU.
    let doc = expect_warnings("offload-cpu-adamw.jsonl.gz", &["main-thread-bound"]);
    let remedy = doc["findings"][0]["remedy"].as_str().unwrap_or("");
    assert!(remedy.contains("more DataLoader workers will not help"), "{remedy}");
}

#[test]
fn workers_pinned_to_two_cpus_are_named() {
    // ResNet-50 with 8 DataLoader workers decoding JPEGs under `taskset -c 0,1` on a 16-CPU host: the GPU busy
    // about 5 %, the two CPUs 80 % busy at the median as the main thread and the workers took turns.
    let doc = expect_warnings("pinned-taskset-2cpus.jsonl.gz", &["cpus-pinned"]);
    let evidence = doc["findings"][0]["evidence"].as_str().unwrap_or("");
    assert!(evidence.contains("may run on 2 CPUs (Cpus_allowed_list 0-1)"), "{evidence}");
    assert!(evidence.contains("14 of 16 cores idle"), "{evidence}");
}

#[test]
fn writes_to_a_fuse_mount_are_not_a_dataset_stall() {
    // A GPU-bound bf16 step whose stdout (slurm-4242.out), train.log, an event file and checkpoints every 10 s
    // went to a FUSE mount (fuse.gsremote, every write through a user-space daemon): healthy, 89 % GPU share.
    let doc = expect_warnings("fuse-writes-healthy.jsonl.gz", &[]);
    assert_eq!(severity(&doc, "remote-dataset-stall"), "", "{doc}");
}

#[test]
fn a_resnet_paced_by_its_main_thread_is_main_thread_bound() {
    // ResNet-50 (bf16, batch 128) on 8 DataLoader workers decoding local JPEGs, with torch.profiler recording 5 of
    // every 10 steps and the harness summing each cycle's events in the main thread: the program measured 18 % of
    // its step waiting for data, the GPU was 8 % busy and the main thread at 86 % of a core. Not a full core (it
    // waits for its batch part of the step), and yet it, not the input, set the pace.
    let doc = expect_warnings("resnet-main-thread-paced.jsonl.gz", &["main-thread-bound"]);
    let f = finding(&doc, "main-thread-bound");
    assert_eq!(f["pid"], 1894, "{f}");
    let evidence = f["evidence"].as_str().unwrap_or("");
    assert!(evidence.contains("8 DataLoader workers keep up"), "{evidence}");
    let remedy = f["remedy"].as_str().unwrap_or("");
    assert!(remedy.contains("more DataLoader workers will not help"), "{remedy}");
}

#[test]
fn torch_compile_warms_up_as_info_and_its_allocator_is_no_leak() {
    // torch.compile of an MLP: 50 s of tracing and compiling (a compile worker alive, the GPU idle), then steady
    // at 27 ms a step. At the first steps the caching allocator climbed from 0.9 GiB to 7.2 GiB in three steps and
    // stayed there: not a leak.
    let doc = expect_warnings("compile-warmup-steady.jsonl.gz", &[]);
    assert_eq!(severity(&doc, "vram-growing"), "", "{doc}");
    let cleared = doc["cleared"].as_array().expect("cleared");
    let warmup = cleared.iter().find(|f| f["rule"] == "compile-warmup").expect("compile-warmup while compiling");
    assert_eq!(warmup["severity"], "info", "{warmup}");
    assert!(warmup["evidence"].as_str().unwrap_or("").contains("torch.compile worker (PID 749)"), "{warmup}");
}

#[test]
fn a_rank_in_a_long_cpu_phase_is_no_hang() {
    // Two ranks over gloo on one GPU: rank 0 (PID 576) computed metrics on the CPU for 128 s while rank 1 waited
    // in a barrier. Not a collective hang; rank 0's main thread is named, with its remedy's hedge.
    let (doc, code) = doctor("evalrank-rank0-cpu.jsonl.gz");
    assert_eq!(code, 1, "{doc}");
    assert_eq!(severity(&doc, "collective-hang"), "", "{doc}");
    let f = finding(&doc, "cpu-bound-input");
    assert_eq!(f["pid"], 576, "{f}");
    assert!(f["remedy"].as_str().unwrap_or("").contains("py-spy dump --pid 576"), "{f}");
}

#[test]
fn a_resnet_fed_by_twelve_workers_is_healthy() {
    // ResNet-50 (bf16, batch 128) on local JPEGs through 12 DataLoader workers, no profiler in the job: 2,481
    // images/s, a quarter of the step waiting for data by wall clock, nvidia-smi between 0 and 99 % busy. The live
    // doctor watched 7 minutes of it and found nothing; these are its first 2.5 minutes.
    let doc = expect_warnings("resnet-healthy-12-workers.jsonl.gz", &[]);
    assert_eq!(severity(&doc, "main-thread-bound"), "", "{doc}");
}

//! gpusight: a terminal GPU monitor that says why a training job is slow.
//!
//! # Code map
//!
//! Data flows one way:
//!
//! ```text
//!  NVML ─┐                                                          ┌─> ui/ (widgets read App, draw a frame)
//!        ├─ source/sampler thread ─ Snapshot ─> channel ─> Pipeline ┤
//! /proc ─┘   (blocking calls, tiers,   (owned)              history, └─> output/ (--once, JSON), doctor,
//!  sysfs      watchdog)                                     findings      report, export/
//! ```
//!
//! - [`sample`]: the plain data every part shares: `MachineInfo` (read once), `Tick` (each sample), `Snapshot`.
//! - [`source`]: where ticks come from: [`source::nvml`] (live; a MIG GPU's devices in [`source::nvml::mig`];
//!   tested without a GPU on the fake NVML of `fake-nvml/`, docs/fake-nvml.md), [`source::replay`] (recordings),
//!   [`source::synthetic`] (scenarios and scale), [`source::sampler`] (the thread and watchdog),
//!   [`source::xid`] (Xid/ECC events), [`source::select`] (`--only`), [`source::visible`] (`--only-visible`:
//!   the GPUs `CUDA_VISIBLE_DEVICES` names).
//! - [`host`]: CPU, memory, PSI, network throughput ([`host::net`]) and the GPU processes with their relatives,
//!   from procfs; each GPU process's job (rank, launcher, container; [`host::job`]) read once per process; their
//!   threads' time on a CPU, waiting for one and what they wait in ([`host::threads`]); while the CPUs are
//!   contended, the other processes' CPU ([`host::others`]).
//! - [`history`]: fixed-capacity rings with gaps ([`history::ring`], each reading compact: [`history::compact`]) and
//!   windows over them ([`history::window`]),
//!   the machine's series ([`history::series`]), each MIG slice's ([`history::slices`]) and each process's
//!   ([`history::process`]); [`pipeline`]: history
//!   plus findings per snapshot.
//! - [`advice`]: the account of each job's GPU time ([`advice::account`]: the split of a span's waiting time from the
//!   job's threads in [`advice::account::attribute`], kept in [`advice::account::book`], the findings read off it in
//!   [`advice::account::findings`]) and the rules, pure functions of the history (multi-GPU jobs:
//!   [`advice::rules::jobs`]; the windows several rules share: [`advice::rules::signals`]; what is watched before the
//!   first window is covered: [`advice::judging`]; findings alike on several GPUs, grouped for the advice pane:
//!   [`advice::group`]; where a process works, its GPU or MIG slice, and how busy that is: [`advice::place`]).
//! - [`table`]: the process table's rows, sort, state, filters and columns, shared by the monitor, `--once` and
//!   the fleet view; [`keys`]: the actions and the keymap, shared by the monitor, the fleet view and the config.
//! - [`app`] and [`ui`]: the interactive monitor only (the jobs view's rows: [`app::jobs`]; text written straight
//!   into the buffer: [`ui::blit`]); [`terminal`]: the only owner of raw mode and the alternate screen.
//! - [`output`]: `--once` and JSON (fitted to a terminal by [`output::fit`], which doctor uses too) and the
//!   `--status` line with the state file watchers leave for it ([`output::status_file`]); [`doctor`] and
//!   [`report`]: the one-shot diagnosis and record; [`export`]:
//!   Prometheus metrics (one table of metric names, [`export::names`]); [`fleet`]: the fleet view over a
//!   Prometheus server (reader, model, screen state; its widget is in [`ui`], its event loop in [`run`]);
//!   [`remote`]: `gpusight ssh`, hosts streaming their samples over the system's ssh into one pipeline each, shown
//!   in the fleet view ([`remote::ssh`] is the one module that runs a program).
//! - [`units`]: numbers for people, the same units in every output; [`text`]: text from outside (command lines,
//!   names, labels) made safe to print on a terminal; [`fast_map`]: the hash map of the per-tick paths.
//! - [`cli`] only parses the command line; [`run`] dispatches it, one module per mode, every real-time mode
//!   sampling through [`run::feed::spawn_feed`], the event loops joining state and widgets there; `main.rs` only
//!   calls [`run::main`]. [`config`]: the config file (its `[ui]` section: [`config::ui`]);
//!   [`flag_checks`]: flags that would do nothing where they were given. [`crash`]: what a fatal signal inside a
//!   driver library leaves behind. [`completions`]: shell completions and the man page. [`exit`]: the exit
//!   statuses and what each means, the one source of the code, `--help` and the man page.
//!
//! # Architecture invariants
//!
//! - Nothing under `source/` or `host/` knows ratatui, the terminal or the app.
//! - No import circle between top-level modules: models (`sample`, `source`, `host`, `history`, `advice`, `export`,
//!   `fleet`, `table`, `keys`, `config`, `app`) never import `ui`; `ui` reads them; `run` joins them; nor between the
//!   modules inside `advice` (`scripts/module_cycles.py` checks both).
//! - [`app`] is the interactive monitor only: nothing but [`run`] and [`ui`] imports it; what others share with it
//!   lives in [`table`], [`keys`], [`config`] and [`source::visible`] (the same script checks it).
//! - `ui/` never mutates the app, except the process table's scroll offset (its widget's state); `advice/` never
//!   does I/O and never reads the clock: time comes from samples. Its only state across samples is the advisor's:
//!   the active findings (hysteresis) and the account book, both rebuilt the same from the same samples.
//! - An absent reading is `None` all the way to the screen ("N/A"); no fake zeros.
//! - The UI thread never calls NVML and never blocks on it.
//! - Units are in names and types: `power_mw`, `mem_used_bytes`, `util_pct`, `interval: Duration`.
//! - Replay and synthetic data go through the same pipeline as live data; nothing branches on the source
//!   except the header that says which it is.
//! - One module owns terminal setup and restore; a panic restores the terminal before printing, and so does a
//!   fatal signal ([`crash`]).
//! - gpusight runs no other program, except the system's `ssh` in [`remote::ssh`] (`gpusight ssh`), the one module
//!   where clippy.toml's ban of `std::process::Command` is allowed.
//! - No import circle: [`cli`] imports nothing from [`run`]; no function over 80 lines outside tests (clippy's
//!   `too_many_lines` at 80, pedantic on).
//! - GPM calls are made by one thread for all GPUs (NVML crashes when two overlap); every other NVML family runs
//!   on per-GPU threads. ARCHITECTURE.md, "NVML and threads", says which thread calls what.

pub mod advice;
pub mod app;
pub mod cli;
pub mod completions;
pub mod config;
pub mod crash;
pub mod doctor;
pub mod exit;
pub mod export;
pub mod fast_map;
pub mod flag_checks;
pub mod fleet;
pub mod history;
pub mod host;
pub mod keys;
pub mod output;
pub mod pipeline;
pub mod remote;
pub mod report;
pub mod run;
pub mod sample;
pub mod source;
pub mod table;
pub mod terminal;
pub mod text;
pub mod ui;
pub mod units;

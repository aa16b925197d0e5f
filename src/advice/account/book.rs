//! The book the accounts are read from: each tick's GPU time per place, attributed to causes when the job's threads
//! were gathered (the time since the previous gather, in one entry), or booked as waiting the rules name where they
//! were not. It keeps each place's entries for a bounded time, the totals since the start (the exporter's counters),
//! the lineages of the jobs (restarts) and what the split needs between gathers.

use std::collections::VecDeque;

use smallvec::SmallVec;

use crate::fast_map::FastMap;
use crate::history::History;
use crate::sample::{GpuTick, HostProcess, ProcessRole, ThreadTimes, UnixMs, WaitKind};

use super::attribute::{Context, GpuTime, StepCpu, StepTimes, WorkerTimes, attribute};
use super::evidence::{PlaceKey, TickIndex, cpu_wait_split, pcie_busy, readings, worker_times};
use super::lineage::{Life, Lineages, lineage_key};
use super::{Account, Basis, Cause, CauseShare};
use crate::advice::{Finding, Rule, Thresholds};

/// How long after its last gather a step process is still judged from its threads: the calm cadence's period and a
/// tick to spare. Past it (threads hidden, a recording without them) the waiting goes to the rules' verdict.
const THREADS_FRESH_MS: u64 = 12_000;
/// GPU time waiting for a gather is booked anyway after this long, as not attributed.
const PENDING_MAX_MS: u64 = 20_000;
/// The share of a sample the GPU must run kernels for a young process to have started working: a process starting
/// up (creating its CUDA context, loading weights, building its model) runs no kernels or a few, and copies are not
/// kernels; a job's first step puts the GPU to work, however starved it is.
const FIRST_WORK_SHARE: f64 = 0.1;
/// Entries of one second or less of processes-only time are merged into one.
const BUCKET_MS: u64 = 1_000;
/// The write rate (bytes a second, storage layer) from which a step process busy on a CPU while its GPU waits is
/// producing a checkpoint (serializing it and copying it into the page cache): logs, metrics and TensorBoard events
/// write kilobytes a second, a checkpoint hundreds of megabytes at the storage's speed.
const CHECKPOINT_WRITE_BYTES_S: u64 = 50 << 20;
/// The energy counter readings a place keeps (one every ~30 s: an hour of them).
const MAX_ENERGY_READINGS: usize = 128;
/// The most entries a place keeps (a gather a second over fifteen minutes).
const MAX_ENTRIES: usize = 1_000;

/// Causes booked for one entry.
type Booked = SmallVec<[(Cause, f32); 4]>;

/// One span of a place's time, attributed.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    pub end_ms: UnixMs,
    /// The job's lineage (an index into the book's names).
    pub job: u32,
    pub basis: Basis,
    pub seconds: f32,
    pub busy: f32,
    /// Waiting time booked to causes, seconds.
    pub causes: Booked,
    /// Waiting time no thread evidence explained, and the cause the rules' verdict named when it was booked (not
    /// determined before a rule had its window: a verdict that names one later takes it from its start on).
    pub unattributed: f32,
    pub verdict: Cause,
    /// Energy while busy and while waiting, joules (from the power readings).
    pub busy_j: f32,
    pub wait_j: f32,
}

/// GPU time not booked yet: since the step process's last gather.
#[derive(Debug, Clone, Copy, Default)]
struct Pending {
    gpu: GpuTime,
    busy_j: f64,
    wait_j: f64,
    since_ms: Option<UnixMs>,
}

/// What the book keeps of one place.
#[derive(Debug, Clone, Default)]
struct PlaceBook {
    entries: VecDeque<Entry>,
    pending: Pending,
    /// The last job seen on the place, kept through a gap (its restarts are read while no process holds the GPU).
    last_job: Option<u32>,
    /// The job on the place at the last tick (its lineage), and the job as the jobs view names it (`torch:...`,
    /// `pid:PID`): the exporter's label, never the lineage's command line.
    job: Option<u32>,
    job_label: String,
    /// The last gather of the step process's threads.
    last_gather_ms: Option<UnixMs>,
    /// What the step's main thread slept in at recent gathers, decayed (by [`WaitKind::ALL`]'s order).
    sleep_mix: [f64; WaitKind::ALL.len()],
    /// The workers' last gathered times, per second of span, carried to ticks where they were not gathered.
    workers_per_s: Option<WorkerTimes>,
    /// Since the place's job left it: its lineage, and the GPU time of the gap.
    gap: Option<(u32, f32)>,
    /// NVML's energy counter where it moved (read every ~30 s): when, and its value in mJ.
    energy: VecDeque<(UnixMs, u64)>,
    /// The step process's GPU memory on the place: its PID, its bytes, and when they last changed (`None` while they
    /// have held the value they had when the process was first seen).
    mem: Option<(u32, u64, Option<UnixMs>)>,
}

impl PlaceBook {
    /// When the step process `pid`'s GPU memory on the place last changed while watched; `None` for a process whose
    /// memory has not changed since it was first seen (it was past loading then).
    fn mem_changed(&mut self, pid: u32, index: &TickIndex<'_>, at: &PlaceTick<'_>) -> Option<UnixMs> {
        let now: u64 = index.compute_on(at.place).filter(|(p, _, _)| *p == pid).map(|(_, _, m)| m).sum();
        match &mut self.mem {
            Some((p, bytes, changed)) if *p == pid => {
                if *bytes != now {
                    (*bytes, *changed) = (now, Some(at.now_ms));
                }
                *changed
            }
            _ => {
                self.mem = Some((pid, now, None));
                None
            }
        }
    }
}

/// The totals of one job on one place since the book started: the exporter's counters.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub seconds: FastMap<Cause, f64>,
    /// The energy of each cause's part, joules: busy at the power drawn while busy, each entry's waiting energy split
    /// over its causes by their seconds (as an account splits it). They add up to `energy_j`.
    pub cause_energy_j: FastMap<Cause, f64>,
    pub energy_j: f64,
}

/// Every place's entries, totals and lineages.
#[derive(Debug, Clone, Default)]
pub struct AccountBook {
    places: FastMap<PlaceKey, PlaceBook>,
    lineages: Lineages,
    /// The lineage names, by index.
    names: Vec<String>,
    ids: FastMap<String, u32>,
    totals: FastMap<(PlaceKey, u32), Totals>,
    last_ms: Option<UnixMs>,
}

/// Everything one place's tick needs to be booked.
struct PlaceTick<'t> {
    place: PlaceKey,
    gpu: &'t GpuTick,
    time: GpuTime,
    power_w: Option<f64>,
    now_ms: UnixMs,
}

impl AccountBook {
    /// Books the newest tick of `history`: each place's time since the previous tick, attributed where the job's
    /// threads were gathered. `verdicts` are the findings of the previous evaluation (the rules' causes).
    pub fn push(&mut self, history: &History, t: &Thresholds, verdicts: &[Finding], hints: &[(PlaceKey, Rule)]) {
        let tick = history.latest();
        let now_ms = tick.at_ms;
        let dt_ms = self.last_ms.filter(|last| *last < now_ms).map(|last| now_ms - last);
        self.last_ms = Some(now_ms);
        let index = TickIndex::new(tick);
        for gpu in &tick.gpus {
            for place in places_of(gpu) {
                let Some(time) = dt_ms.and_then(|dt| {
                    let (util, sm) = readings(gpu, place.1)?;
                    GpuTime::of_sample(dt as f64 / 1000.0, util, sm)
                }) else {
                    continue;
                };
                let power_w = gpu.power_mw.map(|mw| f64::from(mw) / 1000.0).filter(|_| place.1.is_none());
                if let Some(mj) = gpu.energy_mj.filter(|_| place.1.is_none()) {
                    let energy = &mut self.places.entry(place).or_default().energy;
                    if energy.back().is_none_or(|(_, last)| *last != mj) {
                        energy.push_back((now_ms, mj));
                    }
                    while energy.len() > MAX_ENERGY_READINGS {
                        energy.pop_front();
                    }
                }
                let at = PlaceTick { place, gpu, time, power_w, now_ms };
                self.push_place(&at, &index, history, t, (verdicts, hints));
            }
        }
        let keep_ms = keep_ms(t);
        for book in self.places.values_mut() {
            while book.entries.front().is_some_and(|e| e.end_ms + keep_ms < now_ms) || book.entries.len() > MAX_ENTRIES
            {
                book.entries.pop_front();
            }
        }
        self.lineages.forget_before(now_ms.saturating_sub(t.account.restart_window_s * 1000));
    }

    /// Books one place's tick.
    fn push_place(
        &mut self,
        at: &PlaceTick<'_>,
        index: &TickIndex<'_>,
        history: &History,
        t: &Thresholds,
        (verdicts, hints): (&[Finding], &[(PlaceKey, Rule)]),
    ) {
        let Some((pid, _shared)) = index.step_on(at.place) else {
            let book = self.places.entry(at.place).or_default();
            if let Some(job) = book.job.take() {
                book.gap = Some((job, 0.0));
            }
            if let Some((_, seconds)) = book.gap.as_mut() {
                *seconds += narrow(at.time.seconds);
            }
            return;
        };
        let host = index.process(pid);
        let key = host.map_or_else(|| format!("pid:{pid}"), lineage_key);
        let key = format!("{key}@{}", at.place.0);
        let job = self.intern(&key);
        let busy_now = at.time.kernel() >= FIRST_WORK_SHARE * at.time.seconds;
        let life = host.map(|h| self.lineages.observe(&key, h, at.now_ms, busy_now));
        let verdict = verdict_cause(verdicts, at.place).0;
        let book = self.places.entry(at.place).or_default();
        book.job = Some(job);
        book.last_job = Some(job);
        let label = host.and_then(|h| h.job.as_ref()).map_or_else(|| format!("pid:{pid}"), |j| j.key.clone());
        if book.job_label != label {
            book.job_label = label;
        }
        // A phase (a start-up, a restart) is booked as the place's other time is: from threads where they are read.
        let threads_read = host.and_then(|h| h.times.as_ref()).is_some()
            || book.last_gather_ms.is_some_and(|g| at.now_ms.saturating_sub(g) < THREADS_FRESH_MS);
        let basis = if threads_read { Basis::Threads } else { Basis::Processes };
        if let Some((gap_job, seconds)) = book.gap.take().filter(|(j, _)| *j == job)
            && life.is_some_and(|l| l.restart)
        {
            // The GPU sat unused between the job's previous process and this one: the restart's cost.
            let entry = phase_entry(at.now_ms, gap_job, f64::from(seconds), (Cause::RestartLoop, basis), None);
            add_totals(&mut self.totals, at.place, &entry, verdict);
            book.entries.push_back(entry);
        }
        add_pending(book, at);
        if let (Some(life), Some(host)) = (life, host)
            && let Some(cause) = starting(life, (host, book.mem_changed(pid, index, at)), index, at.now_ms, t)
        {
            let entry = flush_as(book, at.now_ms, job, cause, basis);
            add_totals(&mut self.totals, at.place, &entry, verdict);
            book.entries.push_back(entry);
            return;
        }
        if let Some(host) = host
            && let Some(times) = host.times.as_ref()
        {
            let ctx = context(at, host, index, (history, t), (verdicts, hints));
            let entry = flush_attributed(book, at.now_ms, job, (host, times), index, &ctx);
            book.last_gather_ms = Some(at.now_ms);
            add_totals(&mut self.totals, at.place, &entry, verdict);
            book.entries.push_back(entry);
            return;
        }
        let waiting_for_gather = book.last_gather_ms.is_some_and(|g| at.now_ms.saturating_sub(g) < THREADS_FRESH_MS)
            && book.pending.since_ms.is_some_and(|s| at.now_ms.saturating_sub(s) < PENDING_MAX_MS);
        if !waiting_for_gather {
            let entry = flush_unattributed(book, at.now_ms, job, verdict);
            add_totals(&mut self.totals, at.place, &entry, verdict);
            merge_or_push(&mut book.entries, entry);
        }
    }

    fn intern(&mut self, key: &str) -> u32 {
        if let Some(id) = self.ids.get(key) {
            return *id;
        }
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(key.to_owned());
        self.ids.insert(key.to_owned(), id);
        id
    }

    /// The restarts of the job now on `place` since `since_ms`.
    #[must_use]
    pub fn restarts(&self, place: PlaceKey, since_ms: UnixMs) -> Vec<Life> {
        let Some(job) = self.places.get(&place).and_then(|b| b.job.or(b.last_job)) else { return Vec::new() };
        self.name(job).map_or_else(Vec::new, |key| self.lineages.restarts_since(key, since_ms))
    }

    /// A lineage's name by index ("torch:10.0.0.1:29500@0").
    #[must_use]
    pub fn name(&self, job: u32) -> Option<&str> {
        self.names.get(usize::try_from(job).ok()?).map(String::as_str)
    }

    /// The totals since the start of the jobs on their places now: per place and job (as the jobs view names it),
    /// seconds and energy per cause.
    pub fn totals(&self) -> impl Iterator<Item = (PlaceKey, &str, &Totals)> {
        self.totals.iter().filter_map(|((place, job), totals)| {
            let book = self.places.get(place).filter(|b| b.job == Some(*job))?;
            Some((*place, book.job_label.as_str(), totals))
        })
    }

    /// Forgets the totals of jobs no longer on any place (their exported series end with them).
    pub fn forget_ended(&mut self) {
        let current: Vec<(PlaceKey, u32)> = self.places.iter().filter_map(|(p, b)| Some((*p, b.job?))).collect();
        self.totals.retain(|key, _| current.contains(key));
    }

    /// The accounts over the last `window_s` at `now_ms`: one per job and place, with the processes-only waiting
    /// given to the rules' verdict on the place (`verdicts`). `index` names each job's process and command.
    #[must_use]
    pub fn accounts(&self, now_ms: UnixMs, window_s: u64, verdicts: &[Finding], index: &TickIndex<'_>) -> Vec<Account> {
        let from_ms = now_ms.saturating_sub(window_s.saturating_mul(1000));
        let mut out = Vec::new();
        let mut places: Vec<&PlaceKey> = self.places.keys().collect();
        places.sort_unstable();
        for place in places {
            let book = &self.places[place];
            let mut jobs: Vec<u32> = book.entries.iter().filter(|e| e.end_ms > from_ms).map(|e| e.job).collect();
            jobs.sort_unstable();
            jobs.dedup();
            // The job on the place now first, then the one before it (a restart within the window): at most two.
            jobs.sort_by_key(|j| Some(*j) != book.job);
            for job in jobs.into_iter().take(2) {
                let entries = book.entries.iter().filter(|e| e.end_ms > from_ms && e.job == job);
                if let Some(account) = self.sum(*place, job, entries, window_s, verdict_cause(verdicts, *place), index)
                {
                    out.push(account);
                }
            }
        }
        out
    }

    /// Sums one job's entries on one place into an account.
    fn sum<'e>(
        &self,
        place: PlaceKey,
        job: u32,
        entries: impl Iterator<Item = &'e Entry>,
        window_s: u64,
        (verdict, verdict_since_ms): (Cause, UnixMs),
        index: &TickIndex<'_>,
    ) -> Option<Account> {
        let mut seconds: FastMap<Cause, f64> = FastMap::default();
        let (mut total, mut busy_j, mut wait_j, mut from_threads, mut waiting): (f64, f64, f64, f64, f64) =
            (0.0, 0.0, 0.0, 0.0, 0.0);
        let mut any_power = false;
        for e in entries {
            total += f64::from(e.seconds);
            *seconds.entry(Cause::Busy).or_insert(0.0) += f64::from(e.busy);
            for &(cause, s) in &e.causes {
                *seconds.entry(cause).or_insert(0.0) += f64::from(s);
                waiting += f64::from(s);
                if e.basis == Basis::Threads {
                    from_threads += f64::from(s);
                }
            }
            if e.unattributed > 0.0 {
                // The verdict of the time; where none had its window yet, the one now, from its start on.
                let cause = match e.verdict {
                    Cause::NotDetermined if e.end_ms >= verdict_since_ms => verdict,
                    then => then,
                };
                *seconds.entry(cause).or_insert(0.0) += f64::from(e.unattributed);
                waiting += f64::from(e.unattributed);
            }
            busy_j += f64::from(e.busy_j);
            wait_j += f64::from(e.wait_j);
            any_power |= e.busy_j > 0.0 || e.wait_j > 0.0;
        }
        if total <= 0.0 {
            return None;
        }
        // NVML's energy counter, where it moved across most of the window, gives the joules; the power readings
        // only how they divide between busy and waiting.
        if let Some(counted) = self.places.get(&place).and_then(|b| counter_joules(&b.energy, window_s, total))
            && busy_j + wait_j > 0.0
        {
            let scale = counted / (busy_j + wait_j);
            (busy_j, wait_j) = (busy_j * scale, wait_j * scale);
        }
        let basis = if waiting <= 0.0 || from_threads >= waiting / 2.0 { Basis::Threads } else { Basis::Processes };
        let mut causes: Vec<CauseShare> = seconds
            .into_iter()
            .filter(|(_, s)| *s > 0.0)
            .map(|(cause, s)| {
                let energy_j = any_power
                    .then(|| if cause == Cause::Busy { busy_j } else { wait_j * s / waiting.max(f64::EPSILON) });
                // Milliseconds and millijoules: entries keep f32, whose last digits are noise.
                CauseShare { cause, seconds: round3(s), share: s / total, energy_j: energy_j.map(round3) }
            })
            .collect();
        causes.sort_by(|a, b| {
            (b.cause == Cause::Busy).cmp(&(a.cause == Cause::Busy)).then(b.seconds.total_cmp(&a.seconds))
        });
        let name = self.name(job)?;
        let job_key = name.rsplit_once('@').map_or(name, |(n, _)| n).to_owned();
        let step = index.step_on(place);
        let current = self.places.get(&place).and_then(|b| b.job) == Some(job);
        let pid = step.filter(|_| current).map(|(pid, _)| pid);
        let host = pid.and_then(|p| index.process(p));
        Some(Account {
            gpu_index: place.0,
            gpu_instance_id: place.1,
            job: host.and_then(|h| h.job.as_ref()).map_or(job_key, |j| j.key.clone()),
            pid,
            command: host
                .map(|h| if h.cmdline.is_empty() { h.name.clone() } else { h.cmdline.clone() })
                .unwrap_or_default(),
            window_s: window_s as f64,
            seconds: round3(total),
            basis,
            causes,
            energy_j: any_power.then_some(round3(busy_j + wait_j)),
            alone: step.is_some_and(|(_, shared)| shared == 0),
            unseen: unseen(basis, host),
        })
    }
}

/// The joules NVML's energy counter gives for the last `seconds` of the readings: the counter's rise between its
/// first and last readings inside the window, scaled to `seconds`, where they span at least half the window (the
/// counter is read every ~30 s); `None` otherwise, or where it went backwards (a driver reload).
fn counter_joules(energy: &VecDeque<(UnixMs, u64)>, window_s: u64, seconds: f64) -> Option<f64> {
    let (now_ms, _) = *energy.back()?;
    let from_ms = now_ms.saturating_sub(window_s.saturating_mul(1000));
    let (first_ms, first_mj) = *energy.iter().find(|(at, _)| *at >= from_ms)?;
    let (span_ms, rise_mj) = (now_ms.checked_sub(first_ms)?, energy.back()?.1.checked_sub(first_mj)?);
    (span_ms > 0 && span_ms * 2 >= window_s * 1000)
        .then(|| rise_mj as f64 / 1000.0 * seconds / (span_ms as f64 / 1000.0))
}

/// How long the book keeps a place's entries, seconds: the longest window [`AccountBook::accounts`] can cover
/// (doctor and report read a longer watch from the totals).
#[must_use]
pub fn kept_s(t: &Thresholds) -> u64 {
    keep_ms(t) / 1000
}

/// How long the book keeps a place's entries: the longest window it is read over (doctor reads its whole watch from
/// the totals past that).
fn keep_ms(t: &Thresholds) -> u64 {
    t.account.window_s.max(t.account.phase_window_s).max(900).saturating_mul(1000)
}

/// The places of a GPU: its slices in MIG mode (those with an instance id), else the GPU.
fn places_of(gpu: &GpuTick) -> Vec<PlaceKey> {
    let slices: Vec<PlaceKey> =
        gpu.mig.iter().filter_map(|m| m.gpu_instance_id).map(|gi| (gpu.index, Some(gi))).collect();
    if slices.is_empty() { vec![(gpu.index, None)] } else { slices }
}

/// The cause the rules' verdict on a place names: its own rule's cause, or for gpu-underfed the cause it defers to;
/// not determined where no verdict names one.
fn verdict_cause(verdicts: &[Finding], place: PlaceKey) -> (Cause, UnixMs) {
    let here = |f: &&Finding| f.gpu_index == Some(place.0) && f.gpu_instance_id == place.1;
    let named = |f: &Finding| match f.rule {
        Rule::GpuUnderfed => f.cause.and_then(Cause::of_rule),
        rule => Cause::of_rule(rule).filter(|c| !c.is_healthy() || *c == Cause::Serving),
    };
    verdicts
        .iter()
        .filter(here)
        .filter(|f| f.severity >= crate::advice::Severity::Warning || f.cause.is_none())
        .find_map(|f| named(f).map(|c| (c, f.since_ms)))
        .unwrap_or((Cause::NotDetermined, UnixMs::MAX))
}

fn add_pending(book: &mut PlaceBook, at: &PlaceTick<'_>) {
    let p = &mut book.pending;
    p.since_ms.get_or_insert(at.now_ms.saturating_sub(millis(at.time.seconds)));
    p.gpu.add(at.time);
    if let Some(w) = at.power_w {
        let seconds = at.time.seconds.max(f64::EPSILON);
        p.busy_j += w * at.time.busy / seconds * at.time.seconds;
        p.wait_j += w * (at.time.seconds - at.time.busy) / seconds * at.time.seconds;
    }
}

/// An entry whose whole waiting time went to one cause (a phase of the job's life).
fn phase_entry(
    end_ms: UnixMs,
    job: u32,
    seconds: f64,
    (cause, basis): (Cause, Basis),
    pending: Option<Pending>,
) -> Entry {
    let p = pending
        .unwrap_or(Pending { gpu: GpuTime { seconds, idle: seconds, ..GpuTime::default() }, ..Pending::default() });
    let waiting = p.gpu.idle + p.gpu.looks_busy;
    Entry {
        end_ms,
        job,
        basis,
        seconds: narrow(p.gpu.seconds),
        busy: narrow(p.gpu.busy),
        causes: if waiting > 0.0 { smallvec::smallvec![(cause, narrow(waiting))] } else { SmallVec::new() },
        unattributed: 0.0,
        verdict: Cause::NotDetermined,
        busy_j: narrow(p.busy_j),
        wait_j: narrow(p.wait_j),
    }
}

fn flush_as(book: &mut PlaceBook, end_ms: UnixMs, job: u32, cause: Cause, basis: Basis) -> Entry {
    let pending = std::mem::take(&mut book.pending);
    phase_entry(end_ms, job, 0.0, (cause, basis), Some(pending))
}

fn flush_unattributed(book: &mut PlaceBook, end_ms: UnixMs, job: u32, verdict: Cause) -> Entry {
    let p = std::mem::take(&mut book.pending);
    Entry {
        end_ms,
        job,
        basis: Basis::Processes,
        seconds: narrow(p.gpu.seconds),
        busy: narrow(p.gpu.busy),
        causes: SmallVec::new(),
        unattributed: narrow(p.gpu.idle + p.gpu.looks_busy),
        verdict,
        busy_j: narrow(p.busy_j),
        wait_j: narrow(p.wait_j),
    }
}

/// Adds a processes-only entry to the last one when both are within one bucket and of the same job.
fn merge_or_push(entries: &mut VecDeque<Entry>, entry: Entry) {
    if let Some(last) = entries.back_mut()
        && last.basis == Basis::Processes
        && last.job == entry.job
        && last.verdict == entry.verdict
        && entry.end_ms.saturating_sub(last.end_ms) < BUCKET_MS
        && last.seconds < 1.0
    {
        last.end_ms = entry.end_ms;
        last.seconds += entry.seconds;
        last.busy += entry.busy;
        last.unattributed += entry.unattributed;
        last.busy_j += entry.busy_j;
        last.wait_j += entry.wait_j;
        return;
    }
    entries.push_back(entry);
}

/// The time since the last gather, split from the step process's threads and its workers'.
fn flush_attributed(
    book: &mut PlaceBook,
    end_ms: UnixMs,
    job: u32,
    (host, times): (&HostProcess, &ThreadTimes),
    index: &TickIndex<'_>,
    ctx: &Context,
) -> Entry {
    let pending = std::mem::take(&mut book.pending);
    let span_ms = f64::from(times.span_ms.max(1));
    let main_sleep = match times.main.wait.filter(|_| matches!(times.main.state, Some('S' | 'D'))) {
        Some(kind) => {
            decay(&mut book.sleep_mix, kind);
            vec![(kind, 1.0)]
        }
        None => mix_of(&book.sleep_mix),
    };
    let workers = worker_times(index.below(host.pid), span_ms).map(|w| {
        if w.producing_ms() + w.idle_ms > 0.0 {
            book.workers_per_s = Some(scaled(w, 1000.0 / span_ms));
            w
        } else {
            book.workers_per_s.map_or(w, |per_s| WorkerTimes { count: w.count, ..scaled(per_s, span_ms / 1000.0) })
        }
    });
    let step = StepTimes {
        span_ms,
        main_on_cpu_ms: f64::from(times.main.on_cpu_ms),
        main_wait_cpu_ms: f64::from(times.main.wait_cpu_ms.unwrap_or(0)),
        main_sleep,
        workers,
    };
    let causes = attribute(pending.gpu, &step, ctx);
    Entry {
        end_ms,
        job,
        basis: Basis::Threads,
        seconds: narrow(pending.gpu.seconds),
        busy: narrow(pending.gpu.busy),
        causes: causes.into_iter().map(|(c, s)| (c, narrow(s))).collect(),
        unattributed: 0.0,
        verdict: Cause::NotDetermined,
        busy_j: narrow(pending.busy_j),
        wait_j: narrow(pending.wait_j),
    }
}

fn scaled(w: WorkerTimes, by: f64) -> WorkerTimes {
    WorkerTimes {
        count: w.count,
        on_cpu_ms: w.on_cpu_ms * by,
        wait_cpu_ms: w.wait_cpu_ms * by,
        read_ms: w.read_ms * by,
        remote_ms: w.remote_ms * by,
        reclaim_ms: w.reclaim_ms * by,
        idle_ms: w.idle_ms * by,
        busiest_share: w.busiest_share,
    }
}

/// Counts one sampled wait into a mix that forgets old samples (a tenth a gather: about the last ten count).
fn decay(mix: &mut [f64; WaitKind::ALL.len()], kind: WaitKind) {
    for (i, share) in mix.iter_mut().enumerate() {
        *share = *share * 0.9 + if WaitKind::ALL[i] == kind { 0.1 } else { 0.0 };
    }
}

/// The decayed mix as shares adding up to 1 (empty before any sample).
fn mix_of(mix: &[f64; WaitKind::ALL.len()]) -> Vec<(WaitKind, f64)> {
    let total: f64 = mix.iter().sum();
    if total <= 0.0 {
        return Vec::new();
    }
    WaitKind::ALL.iter().zip(mix).filter(|(_, s)| **s > 0.0).map(|(k, s)| (*k, s / total)).collect()
}

/// Whether the step process is still starting, and as what. Compiling first: busy compile workers of a process
/// younger than `compile_warmup_max_age_s` mean its model still compiles (torch.compile compiles at the first
/// steps, after the `DataLoader` has started). Otherwise a start-up (a restart when a process of the same job ended
/// before it started) while all of these hold: the process is younger than `startup_max_s`, its GPU has not yet run
/// kernels a tenth of a sample, it has no `DataLoader` workers yet (they start with the first epoch), and it is
/// still loading: its GPU memory changed while watched, within the last [`STARTUP_QUIET_MS`]. A process starting up
/// creates its context and loads its model onto the GPU; a trainer whose memory has been flat that long with no
/// kernels (or since it was first seen) waits for something else, however young.
fn starting(
    life: Life,
    (host, mem_changed_ms): (&HostProcess, Option<UnixMs>),
    index: &TickIndex<'_>,
    now_ms: UnixMs,
    t: &Thresholds,
) -> Option<Cause> {
    let age_ms = now_ms.saturating_sub(life.started_ms);
    let below = index.below(host.pid);
    let compiling = below.iter().any(|p| p.is_compile_worker() && p.cpu_pct.is_some_and(|c| c >= 1.0));
    if compiling && age_ms < t.compile_warmup_max_age_s.saturating_mul(1000) {
        return Some(Cause::CompileWarmup);
    }
    let loading = mem_changed_ms.is_some_and(|changed| now_ms.saturating_sub(changed) < STARTUP_QUIET_MS);
    let young = life.first_busy_ms.is_none() && age_ms < t.account.startup_max_s.saturating_mul(1000);
    let workers = below.iter().any(|p| !p.is_compile_worker());
    (young && loading && !workers).then_some(if life.restart { Cause::RestartLoop } else { Cause::StartUp })
}

/// How long a young process's GPU memory may stay flat, with no kernels run, and still be loading its model: a
/// checkpoint streams onto the GPU in steps of seconds; twenty seconds without a change is no load.
const STARTUP_QUIET_MS: u64 = 20_000;

/// What the split needs to know about the job on a place at this tick.
fn context(
    at: &PlaceTick<'_>,
    host: &HostProcess,
    index: &TickIndex<'_>,
    (history, t): (&History, &Thresholds),
    (verdicts, hints): (&[Finding], &[(PlaceKey, Rule)]),
) -> Context {
    let rank = index.is_rank(host);
    let key = host.job.as_ref().map(|j| j.key.as_str());
    let job_of =
        |pid: Option<u32>| pid.and_then(|p| index.process(p)).and_then(|p| p.job.as_ref()).map(|j| j.key.as_str());
    let straggler_elsewhere = rank
        && verdicts
            .iter()
            .any(|f| f.rule == Rule::RankStraggler && f.gpu_index != Some(at.place.0) && job_of(f.pid) == key);
    // A rule's GPU-side evidence, whether its finding is a verdict or an account replaced it last time.
    let here = |rule: Rule| {
        verdicts.iter().any(|f| f.rule == rule && f.gpu_index == Some(at.place.0)) || hints.contains(&(at.place, rule))
    };
    let workers = index.below(host.pid).iter().any(|p| p.role == ProcessRole::Child && !p.is_compile_worker());
    let reads = host.read_bytes_per_s.is_some_and(|r| r >= 1 << 20)
        || host.remote_files.as_ref().is_some_and(|f| f.read_only > 0);
    let sends_back = at.gpu.pcie_tx_kbps.is_some_and(|tx| f64::from(tx) / 1024.0 >= t.main_thread_d2h_mib_s);
    let writes_heavily = host.write_bytes_per_s.is_some_and(|w| w >= CHECKPOINT_WRITE_BYTES_S);
    let step_cpu = if writes_heavily {
        StepCpu::Checkpoint
    } else if here(Rule::LaunchBound) {
        StepCpu::Launch
    } else if here(Rule::H2dCopyBound) {
        StepCpu::Copy
    } else if !workers && reads && !sends_back {
        StepCpu::DataPrep
    } else {
        StepCpu::MainThread
    };
    let info = crate::sample::by_index(&history.machine().gpus, at.place.0, |g| g.index);
    let (all_ranks_spin, data_moving) = if rank { ranks_now(index, host, t) } else { (false, false) };
    let notebook = host.cmdline.contains("ipykernel");
    Context {
        rank,
        all_ranks_spin,
        data_moving,
        straggler_elsewhere,
        serving: !rank && !notebook && host.serving.is_some(),
        idle: does_nothing(host, index.below(host.pid)),
        pcie_busy: pcie_busy(at.gpu, info.and_then(|i| i.max_pcie_gen), info.and_then(|i| i.max_pcie_width)),
        step_cpu,
        cpu_wait: cpu_wait_split(history.machine(), index.tick, host, index.below(host.pid), t.quota_throttled_pct),
    }
}

/// The ranks of `host`'s job on this host at this tick: whether every one spins in a collective (utilization at
/// least `straggler_waiting_min_util_pct` with SM activity at most `straggler_waiting_max_sm_active_pct`, as
/// rank-straggler reads a waiting rank), and whether data moves over any of their links (PCIe or NVLink above
/// `hang_max_link_mib_s`, as collective-hang reads a quiet one).
fn ranks_now(index: &TickIndex<'_>, host: &HostProcess, t: &Thresholds) -> (bool, bool) {
    let Some(key) = host.job.as_ref().map(|j| j.key.as_str()) else { return (false, false) };
    let tick = index.tick;
    let mut gpus: Vec<u32> = tick
        .gpu_processes
        .iter()
        .filter(|g| g.pid.and_then(|p| index.process(p)).and_then(|p| p.job.as_ref()).is_some_and(|j| j.key == key))
        .map(|g| g.gpu_index)
        .collect();
    gpus.sort_unstable();
    gpus.dedup();
    let (mut all_spin, mut moving) = (!gpus.is_empty(), false);
    for gpu in gpus.iter().filter_map(|i| tick.gpu(*i)) {
        let util = gpu.util_pct.map(f64::from);
        let sm = gpu.gpm.and_then(|g| g.sm_active_pct).map(f64::from);
        let spins = util.is_some_and(|u| u >= t.straggler_waiting_min_util_pct)
            && sm.is_some_and(|s| s <= t.straggler_waiting_max_sm_active_pct);
        all_spin &= spins;
        let pcie_mib_s =
            f64::from(gpu.pcie_rx_kbps.unwrap_or(0) + gpu.pcie_tx_kbps.unwrap_or(0)) * 1000.0 / f64::from(1 << 20);
        let nvlink_mib_s = f64::from(gpu.nvlink_rx_mib_s.unwrap_or(0) + gpu.nvlink_tx_mib_s.unwrap_or(0));
        moving |= pcie_mib_s > t.hang_max_link_mib_s || nvlink_mib_s > t.hang_max_link_mib_s;
    }
    (all_spin, moving)
}

/// Whether a job does nothing at this tick: its process and the processes below it used under a twentieth of one
/// core together and moved under a MiB a second. A job producing anything (steps, batches, requests) uses more.
fn does_nothing(host: &HostProcess, below: &[&HostProcess]) -> bool {
    let job = || std::iter::once(host).chain(below.iter().copied());
    let cpu: f32 = job().filter_map(|p| p.cpu_pct).sum();
    let io: u64 = job().map(|p| p.read_bytes_per_s.unwrap_or(0) + p.write_bytes_per_s.unwrap_or(0)).sum();
    cpu < IDLE_CPU_PCT && io < 1 << 20
}

/// CPU (% of one core, the job's processes together) under which a job does nothing.
const IDLE_CPU_PCT: f32 = 5.0;

/// Adds an entry to its job's totals, the processes-only waiting to the verdict's cause.
fn add_totals(totals: &mut FastMap<(PlaceKey, u32), Totals>, place: PlaceKey, entry: &Entry, verdict: Cause) {
    let t = totals.entry((place, entry.job)).or_default();
    *t.seconds.entry(Cause::Busy).or_insert(0.0) += f64::from(entry.busy);
    for &(cause, s) in &entry.causes {
        *t.seconds.entry(cause).or_insert(0.0) += f64::from(s);
    }
    if entry.unattributed > 0.0 {
        *t.seconds.entry(verdict).or_insert(0.0) += f64::from(entry.unattributed);
    }
    t.energy_j += f64::from(entry.busy_j + entry.wait_j);
    if entry.busy_j <= 0.0 && entry.wait_j <= 0.0 {
        return;
    }
    let waiting: f64 = entry.causes.iter().map(|(_, s)| f64::from(*s)).sum::<f64>() + f64::from(entry.unattributed);
    let wait_j = f64::from(entry.wait_j);
    // Waiting energy without waiting seconds is a rounding's crumb: it stays with busy, so the parts add up.
    let busy_j = f64::from(entry.busy_j) + if waiting > 0.0 { 0.0 } else { wait_j };
    *t.cause_energy_j.entry(Cause::Busy).or_insert(0.0) += busy_j;
    if waiting > 0.0 {
        let parts = entry.causes.iter().map(|(c, s)| (*c, f64::from(*s)));
        for (cause, s) in parts.chain((entry.unattributed > 0.0).then(|| (verdict, f64::from(entry.unattributed)))) {
            *t.cause_energy_j.entry(cause).or_insert(0.0) += wait_j * s / waiting;
        }
    }
}

/// What an account could not see.
fn unseen(basis: Basis, host: Option<&HostProcess>) -> Vec<String> {
    if basis == Basis::Threads {
        return Vec::new();
    }
    let why = match host.and_then(|h| h.unreadable.as_deref()) {
        Some(reason) => format!("the job's threads could not be read ({reason})"),
        None => "thread times were not read (a recording made before gpusight read them, or threads hidden from it)"
            .to_owned(),
    };
    vec![format!("{why}: the waiting time goes to the cause the rules name from the per-process readings")]
}

/// Seconds and joules are kept as `f32` in entries: a second's resolution of a tick is far finer than the figures
/// need, and the book keeps a thousand entries a place.
#[expect(clippy::cast_possible_truncation, reason = "an entry's seconds and joules, far inside f32's range")]
fn narrow(value: f64) -> f32 {
    value as f32
}

/// A figure to three decimals (milliseconds, millijoules).
fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Seconds as whole milliseconds (negative and non-finite as 0).
#[expect(clippy::cast_possible_truncation, clippy::cast_sign_loss, reason = "a tick's length, rounded and clamped")]
pub(crate) fn millis(seconds: f64) -> u64 {
    if seconds.is_finite() && seconds > 0.0 { (seconds * 1000.0).round() as u64 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_energy_counter_gives_the_joules_where_it_spans_the_window() {
        // Readings every 30 s at 500 W: 15 kJ between two.
        let readings: VecDeque<(UnixMs, u64)> = (0..5).map(|i| (i * 30_000, i * 15_000_000)).collect();
        // Over two minutes: four readings apart, 60 kJ over 120 s; scaled to an account of 90 s, 45 kJ.
        let joules = counter_joules(&readings, 120, 90.0).expect("spans the window");
        assert!((joules - 45_000.0).abs() < 1e-6, "{joules}");
        // A 30 s window holds one reading at most: not enough.
        assert_eq!(counter_joules(&readings, 20, 20.0), None);
        // A counter that went back (a driver reload) gives nothing.
        let reset: VecDeque<(UnixMs, u64)> = [(0, 9_000_000), (60_000, 1_000)].into_iter().collect();
        assert_eq!(counter_joules(&reset, 60, 60.0), None);
    }

    #[test]
    fn totals_split_the_waiting_energy_over_the_causes_by_seconds() {
        let mut totals = FastMap::default();
        let place = (0, None);
        let entry = Entry {
            end_ms: 1_000,
            job: 0,
            basis: Basis::Threads,
            seconds: 10.0,
            busy: 4.0,
            causes: smallvec::smallvec![(Cause::InputBound, 3.0)],
            unattributed: 3.0,
            verdict: Cause::NotDetermined,
            busy_j: 2_000.0,
            wait_j: 900.0,
        };
        add_totals(&mut totals, place, &entry, Cause::NotDetermined);
        add_totals(&mut totals, place, &Entry { causes: SmallVec::new(), unattributed: 0.0, ..entry }, Cause::Busy);
        let t = &totals[&(place, 0)];
        let near = |a: f64, b: f64| (a - b).abs() < 1e-6;
        assert!(near(t.seconds[&Cause::Busy], 8.0) && near(t.seconds[&Cause::InputBound], 3.0), "{t:?}");
        assert!(near(t.seconds[&Cause::NotDetermined], 3.0), "{t:?}");
        // Busy at its own power; the waiting half and half; the second entry's waiting energy, with no waiting
        // seconds to split it over, stays with busy.
        assert!(near(t.cause_energy_j[&Cause::Busy], 4_900.0), "{t:?}");
        assert!(near(t.cause_energy_j[&Cause::InputBound], 450.0), "{t:?}");
        assert!(near(t.cause_energy_j[&Cause::NotDetermined], 450.0), "{t:?}");
        assert!(near(t.energy_j, t.cause_energy_j.values().sum::<f64>()), "{t:?}");
    }
}

//! The `--once` table and the JSON document on fixed data (synthetic machines and the embedded demo), as insta
//! snapshots: a change to either output shows up in review.
#![allow(clippy::expect_used, reason = "fixtures that fail to build should stop the test loudly")]

use gpusight::advice::Thresholds;
use gpusight::output::table::TableOptions;
use gpusight::pipeline::Pipeline;
use gpusight::sample::Snapshot;
use gpusight::source::replay::Recording;

use crate::common::synthetic_pipeline;

/// A pipeline over the demo recording up to `seconds` from its start.
fn demo(seconds: f64) -> Pipeline {
    let recording = Recording::demo().expect("demo");
    let last = recording.index_at(seconds).expect("index");
    let snapshot = |i: usize| Snapshot { machine: recording.machine.clone(), tick: recording.ticks[i].clone() };
    let mut pipeline = Pipeline::new(&snapshot(0), 900, Thresholds::default());
    for i in 1..=last {
        pipeline.ingest(&snapshot(i));
    }
    pipeline
}

#[test]
fn once_table_on_a_mixed_8_gpu_box_with_findings() {
    insta::assert_snapshot!(
        "once_mixed8",
        gpusight::output::table::render(&synthetic_pipeline("mixed:8", 40, 900), &TableOptions::default())
    );
}

#[test]
fn once_table_on_a_lost_gpu() {
    insta::assert_snapshot!(
        "once_gpu_lost",
        gpusight::output::table::render(
            &synthetic_pipeline("gpu-lost:2", 25, 900),
            &TableOptions { ascii: true, ..TableOptions::default() }
        )
    );
}

#[test]
fn once_table_on_the_demo_in_its_input_bound_phase() {
    let text = gpusight::output::table::render(&demo(150.0), &TableOptions::default());
    assert!(text.contains("train.py --data /mnt/nfs/imagenet"), "{text}");
    insta::assert_snapshot!("once_demo_150s", text);
}

#[test]
fn once_json_on_a_two_gpu_box() {
    let mut json: serde_json::Value =
        serde_json::from_str(&gpusight::output::json::render(&synthetic_pipeline("loader:2", 3, 900)))
            .expect("valid JSON");
    assert_eq!(json["schema"], "gpusight.snapshot/2");
    // The version changes with every release; the document's shape is what the snapshot is about.
    json["gpusight_version"] = serde_json::Value::String("[version]".to_owned());
    insta::assert_json_snapshot!("once_json_loader2", json);
}

#[test]
fn once_table_filters_by_gpu_user_and_pid() {
    let pipeline = synthetic_pipeline("mixed:8", 3, 900);
    let only = |options: TableOptions| gpusight::output::table::render(&pipeline, &options);
    let text = only(TableOptions { only_gpus: vec![1, 2], ..TableOptions::default() });
    let gpu_rows: Vec<&str> = text.lines().filter(|l| l.contains(" H200 ")).collect();
    assert_eq!(gpu_rows.len(), 2, "{text}");
    assert!(text.contains("3001") && text.contains("4001") && !text.contains("2001"), "{text}");
    let text = only(TableOptions { user: Some("carol".to_owned()), ..TableOptions::default() });
    assert!(text.contains("4001") && !text.contains("3001"), "{text}");
    let text = only(TableOptions { pids: vec![5001], ..TableOptions::default() });
    assert!(text.contains("5001") && !text.contains("4001"), "{text}");
    let text = only(TableOptions { user: Some("nobody".to_owned()), ..TableOptions::default() });
    assert!(text.contains("No GPU processes match."), "{text}");
}

/// The text with its SGR colour sequences taken out.
fn plain(text: &str) -> String {
    let mut out = String::new();
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|c| *c == 'm');
        } else {
            out.push(c);
        }
    }
    out
}

fn widest(text: &str) -> usize {
    plain(text).lines().map(gpusight::output::fit::display_width).max().unwrap_or(0)
}

#[test]
fn fitted_once_tables_keep_every_line_within_the_width_and_drop_columns_whole() {
    use gpusight::output::fit::Fit;
    let pipeline = synthetic_pipeline("mixed:8", 40, 900);
    let full = gpusight::output::table::render(&pipeline, &TableOptions::default());
    for width in [40, 60, 80, 100, 120, 200] {
        let fit = Fit { width: Some(width), color: false };
        let text = gpusight::output::table::render(&pipeline, &TableOptions { fit, ..TableOptions::default() });
        assert!(widest(&text) <= width, "{width}:\n{text}");
        // Findings are wrapped, never cut: every word of the full text's findings is there.
        let findings = |t: &str| t[t.find("Findings:").expect("findings")..].split_whitespace().collect::<String>();
        assert_eq!(findings(&text), findings(&full), "{width}");
    }
    let fit = Fit { width: Some(80), color: false };
    let text = gpusight::output::table::render(&pipeline, &TableOptions { fit, ..TableOptions::default() });
    let gpu_header = text.lines().find(|l| l.starts_with("GPU ") && l.contains("UTIL")).expect("GPU header");
    assert!(gpu_header.contains("MEMORY USED/TOTAL") && !gpu_header.contains("NUMA"), "{gpu_header}");
    let table_header = text.lines().find(|l| l.contains("COMMAND")).expect("process header");
    assert!(!table_header.contains("CPID") && table_header.contains("%SM"), "{table_header}");
    // Fields are dropped whole: each GPU line's tokens are a subset of the full line's, in order.
    for (fitted, full_line) in
        text.lines().filter(|l| l.contains(" GiB ")).zip(full.lines().filter(|l| l.contains(" GiB ")))
    {
        let tokens: Vec<&str> = full_line.split_whitespace().collect();
        let mut rest = tokens.iter();
        for token in fitted.split_whitespace() {
            assert!(rest.any(|t| t == &token), "{token} of {fitted:?} not in {full_line:?}");
        }
    }
    let colored = gpusight::output::table::render(
        &pipeline,
        &TableOptions { fit: Fit { width: Some(80), color: true }, ..TableOptions::default() },
    );
    assert!(colored.contains("  \x1b[1;33mWARNING\x1b[0m  GPU 1"), "{colored}");
    assert!(colored.contains("  \x1b[1;36minfo\x1b[0m     GPU 0"), "{colored}");
    assert_eq!(plain(&colored), text);
}

#[test]
fn once_on_an_80_column_terminal_fits_and_colours() {
    for args in [&["--synthetic", "mixed:8", "--once"][..], &["--synthetic", "mixed:8", "--once", "--at", "60"]] {
        let mut session = crate::common::pty::Session::gpusight(args, &[("COLUMNS", ""), ("NO_COLOR", "")], 80, 60);
        assert_eq!(session.exit_code(), 0);
        let text = String::from_utf8_lossy(&session.raw).replace('\r', "");
        assert!(text.contains("GPU-MEM") && text.contains("Host: "), "{text}");
        assert!(widest(&text) <= 80, "{args:?}:\n{text}");
        if args.contains(&"--at") {
            assert!(text.contains("\x1b[1;33mWARNING\x1b[0m"), "{text}");
        }
    }
}

#[test]
fn once_to_a_pipe_keeps_full_lines_and_columns_fits_it() {
    use gpusight::output::fit::Fit;
    let pipeline = synthetic_pipeline("mixed:8", 40, 900);
    let full = gpusight::output::table::render(&pipeline, &TableOptions::default());
    let fitted = |width| {
        gpusight::output::table::render(
            &pipeline,
            &TableOptions { fit: Fit { width: Some(width), color: false }, ..TableOptions::default() },
        )
    };
    assert!(widest(&full) > 200, "the full table is one line per row");
    assert!(!full.contains('\x1b'));
    // The binary: a pipe gets the full lines; COLUMNS fits them on a pipe too.
    let args = ["--synthetic", "mixed:8", "--once", "--at", "60"];
    let piped = crate::common::gpusight(&args);
    assert!(widest(&crate::common::stdout(&piped)) > 200);
    let narrow = crate::common::command(&args).env("COLUMNS", "72").output().expect("run");
    let narrow = crate::common::stdout(&narrow);
    assert!(widest(&narrow) <= 72 && !narrow.contains('\x1b'), "{narrow}");
    assert!(widest(&fitted(72)) <= 72);
}

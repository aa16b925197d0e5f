//! The fake NVML (`fake-nvml/`, docs/fake-nvml.md), built once per test binary into the tests' own target
//! directory, and gpusight run against it: `GPUSIGHT_NVML_LIB` names the fake, `GPUSIGHT_FAKE_NVML` its scenario
//! (a built-in name or a TOML file).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

use super::{BIN, command};

static LIB: OnceLock<PathBuf> = OnceLock::new();

/// The fake `libnvidia-ml.so.1`, built on first use (`cargo build -p gpusight-fake-nvml`, same profile and target
/// directory as the gpusight binary under test).
pub fn lib() -> &'static Path {
    LIB.get_or_init(|| {
        let profile_dir = Path::new(BIN).parent().expect("the binary's directory");
        let target_dir = profile_dir.parent().expect("the target directory");
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "--locked", "--quiet", "-p", "gpusight-fake-nvml"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build -p gpusight-fake-nvml");
        assert!(status.success(), "cargo build -p gpusight-fake-nvml failed");
        let lib = profile_dir.join("libgpusight_fake_nvml.so");
        assert!(lib.is_file(), "{} was not built", lib.display());
        lib
    })
}

static CAPTURE: OnceLock<PathBuf> = OnceLock::new();

/// The capture tool (`tools/nvml_capture.rs`), built on first use like [`lib`].
pub fn capture_tool() -> &'static Path {
    CAPTURE.get_or_init(|| {
        let profile_dir = Path::new(BIN).parent().expect("the binary's directory");
        let target_dir = profile_dir.parent().expect("the target directory");
        let mut build = Command::new(env!("CARGO"));
        build
            .args(["build", "--locked", "--quiet", "--example", "nvml_capture"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .env("CARGO_TARGET_DIR", target_dir);
        if profile_dir.file_name().is_some_and(|n| n == "release") {
            build.arg("--release");
        }
        let status = build.status().expect("run cargo build --example nvml_capture");
        assert!(status.success(), "cargo build --example nvml_capture failed");
        let tool = profile_dir.join("examples").join("nvml_capture");
        assert!(tool.is_file(), "{} was not built", tool.display());
        tool
    })
}

/// A capture (`nvml_capture SAMPLES INTERVAL`) of the fake NVML playing `scenario`, as TOML.
pub fn capture_of(scenario: &str, samples: u32, interval: &str) -> String {
    let out = Command::new(capture_tool())
        .args([&samples.to_string(), interval])
        .env("GPUSIGHT_NVML_LIB", lib())
        .env("GPUSIGHT_FAKE_NVML", scenario)
        .output()
        .expect("run nvml_capture");
    assert!(out.status.success(), "nvml_capture failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("a UTF-8 capture")
}

/// `gpusight ARGS` as [`command`] sets it up, on the fake NVML playing `scenario`.
pub fn command_on(scenario: &str, args: &[&str]) -> Command {
    let mut c = command(args);
    c.env("GPUSIGHT_NVML_LIB", lib()).env("GPUSIGHT_FAKE_NVML", scenario);
    c
}

/// Runs `gpusight ARGS` on the fake NVML playing `scenario`, to the end.
pub fn run_on(scenario: &str, args: &[&str]) -> Output {
    command_on(scenario, args).output().expect("run gpusight")
}

/// The environment a pseudo-terminal run needs for the fake NVML playing `scenario`.
pub fn env_for(scenario: &str) -> Vec<(&'static str, String)> {
    vec![("GPUSIGHT_NVML_LIB", lib().display().to_string()), ("GPUSIGHT_FAKE_NVML", scenario.to_string())]
}

/// Writes a scenario into `dir` and returns its path, to pass as the scenario.
pub fn scenario_file(dir: &Path, name: &str, toml: &str) -> String {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, toml).expect("write scenario");
    path.display().to_string()
}

/// `count` H200s (the built-in defaults) under load, with `extra` appended to the one `[[gpu]]` table.
pub fn h200s(count: u32, extra: &str) -> String {
    format!(
        "name = \"h200s\"\n[[gpu]]\ncount = {count}\n{extra}\n[[gpu.phase]]\nutil = 100\nmem_used_mib = 9634\n\
         power_w = 692.0\ntemp_c = 63\nsm_clock_mhz = 1470\nthrottle = 4\ngpm_sm = 96.1\n"
    )
}

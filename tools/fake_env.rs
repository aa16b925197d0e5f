//! Setting up the fake NVML for the scale measurements (`benches/nvml_fake.rs`, `tools/fake_pipeline.rs`, which
//! include this file with `#[path]`): where the built library is, and a scenario whose calls take no time.

use std::path::{Path, PathBuf};

/// The library's file name in a target directory.
pub const LIBRARY: &str = "libgpusight_fake_nvml.so";

/// The scenarios the scale requirement names: a GB200 NVL72 rack, an HGX box with MIG, 8 GPUs × 1,000 processes.
pub const SCENARIOS: [&str; 3] = ["nvl72", "hgx8-mig", "scale:8x1000"];

/// How to build the library, for the message when it is missing.
pub const BUILD_IT: &str = "cargo build --release --locked -p gpusight-fake-nvml";

/// The fake NVML to load: `GPUSIGHT_NVML_LIB` when it names a file, else the library beside this executable's
/// target directory (`target/release/` for `target/release/deps/BENCH` and `target/release/examples/EXAMPLE`,
/// `CARGO_TARGET_DIR` included). `None` when there is none.
pub fn fake_library() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("GPUSIGHT_NVML_LIB") {
        let path = PathBuf::from(path);
        return path.is_file().then_some(path);
    }
    let exe = std::env::current_exe().ok()?;
    exe.parent()?.ancestors().take(2).map(|dir| dir.join(LIBRARY)).find(|p| p.is_file())
}

/// What `GPUSIGHT_FAKE_NVML` should say for `name` with every call timed at zero: the generated `scale:` scenarios
/// already are; a built-in (`nvl72`, `hgx8-mig`) is written to a file in `dir` with `gpm_call_ms = 0` (its GPM
/// calls otherwise hold their GPU for 1 ms, as the H200's do). A built-in is read from `fake-nvml/scenarios/` under
/// the working directory when there is one (a checkout the binary was carried to), else under the source tree it was
/// built from.
pub fn zero_time_scenario(name: &str, dir: &Path) -> std::io::Result<String> {
    if name.starts_with("scale:") {
        return Ok(name.to_owned());
    }
    let file = format!("fake-nvml/scenarios/{name}.toml");
    let here = PathBuf::from(&file);
    let builtin = if here.is_file() { here } else { Path::new(env!("CARGO_MANIFEST_DIR")).join(&file) };
    let text = std::fs::read_to_string(&builtin)?;
    // A top-level key must come before the first table; the built-ins set no call time of their own.
    let path = dir.join(format!("{name}-zero-time.toml"));
    std::fs::write(&path, format!("gpm_call_ms = 0\n{text}"))?;
    Ok(path.to_string_lossy().into_owned())
}

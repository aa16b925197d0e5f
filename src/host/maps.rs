//! On-demand reads for the process detail and environment screens: the CUDA libraries a process has mapped
//! (`/proc/PID/maps`) and its environment (`/proc/PID/environ`). These are not read every tick.

use std::io;

use super::HostRoot;

/// A CUDA-related shared library mapped into a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaLibrary {
    /// The library's base name without version or wheel hash, e.g. `libcublasLt`.
    pub name: String,
    /// The version from the file name suffix (`libcudnn.so.9.1.0` → `9.1.0`); `None` for a bare `.so`.
    pub version: Option<String>,
    /// The mapped file's path as the kernel shows it.
    pub path: String,
}

/// The libraries gpusight reports, in display order.
const CUDA_LIBRARIES: [&str; 8] =
    ["libcuda", "libnvidia-ml", "libcudart", "libcublas", "libcublasLt", "libcudnn", "libnccl", "libnvrtc"];

/// Parses the text of `/proc/PID/maps` into the CUDA libraries it maps, each (name, path) once, in the order of
/// `CUDA_LIBRARIES` and then by path. Two copies of one library at different paths are both kept: that is
/// worth seeing (a wheel's libcudart next to the system one).
#[must_use]
pub fn parse_maps(text: &str) -> Vec<CudaLibrary> {
    let mut out: Vec<CudaLibrary> = Vec::new();
    for line in text.lines() {
        // address perms offset dev inode path; the path may hold spaces, so take the rest after 5 fields.
        let Some(path) = nth_rest(line, 5) else { continue };
        let path = path.strip_suffix(" (deleted)").unwrap_or(path);
        let Some(file) = path.rsplit('/').next() else { continue };
        let Some((name, version)) = split_library_name(file) else { continue };
        if !CUDA_LIBRARIES.contains(&name) || out.iter().any(|l| l.name == name && l.path == path) {
            continue;
        }
        out.push(CudaLibrary { name: name.to_string(), version: version.map(str::to_string), path: path.to_string() });
    }
    let rank = |name: &str| CUDA_LIBRARIES.iter().position(|n| *n == name).unwrap_or(usize::MAX);
    out.sort_by(|a, b| rank(&a.name).cmp(&rank(&b.name)).then_with(|| a.path.cmp(&b.path)));
    out
}

/// The text after the first `n` whitespace-separated fields of `line`, trimmed; `None` when there is none.
fn nth_rest(line: &str, n: usize) -> Option<&str> {
    let mut rest = line.trim_start();
    for _ in 0..n {
        let end = rest.find(char::is_whitespace)?;
        rest = rest[end..].trim_start();
    }
    (!rest.is_empty()).then_some(rest)
}

/// Splits `libcudnn.so.9.1.0` into (`libcudnn`, `Some("9.1.0")`). A wheel's hash suffix
/// (`libcudart-d0da41ae.so.11.0`) is dropped from the name. `None` for files that are not shared libraries.
fn split_library_name(file: &str) -> Option<(&str, Option<&str>)> {
    let (stem, version) = match file.split_once(".so.") {
        Some((stem, version)) => (stem, Some(version).filter(|v| !v.is_empty())),
        None => (file.strip_suffix(".so")?, None),
    };
    let stem = match stem.rsplit_once('-') {
        Some((base, hash)) if hash.len() >= 6 && hash.bytes().all(|b| b.is_ascii_hexdigit()) => base,
        _ => stem,
    };
    Some((stem, version))
}

/// Parses the NUL-separated `/proc/PID/environ` into (name, value) pairs sorted by name. An entry without `=`
/// gets an empty value.
#[must_use]
pub fn parse_environ(bytes: &[u8]) -> Vec<(String, String)> {
    let text = String::from_utf8_lossy(bytes);
    let mut vars: Vec<(String, String)> = text
        .split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e.to_string(), String::new()),
        })
        .collect();
    vars.sort();
    vars
}

/// The CUDA libraries mapped by `pid`.
///
/// # Errors
/// A sentence for a person when the maps cannot be read (the process exited, or belongs to another user).
pub fn cuda_libraries(root: &HostRoot, pid: u32) -> Result<Vec<CudaLibrary>, String> {
    let path = root.proc_dir.join(pid.to_string()).join("maps");
    let bytes = std::fs::read(&path).map_err(|e| read_error(&e, pid, "memory maps", &path))?;
    Ok(parse_maps(&String::from_utf8_lossy(&bytes)))
}

/// The environment of `pid`, sorted by name.
///
/// # Errors
/// A sentence for a person when the environment cannot be read (the process exited, or belongs to another
/// user: reading it needs the same user or root).
pub fn environment(root: &HostRoot, pid: u32) -> Result<Vec<(String, String)>, String> {
    let path = root.proc_dir.join(pid.to_string()).join("environ");
    let bytes = std::fs::read(&path).map_err(|e| read_error(&e, pid, "environment", &path))?;
    Ok(parse_environ(&bytes))
}

/// Phrases a read failure of a per-process file for a person.
fn read_error(err: &io::Error, pid: u32, what: &str, path: &std::path::Path) -> String {
    match err.kind() {
        io::ErrorKind::PermissionDenied => format!(
            "cannot read the {what} of PID {pid}: permission denied ({}); it belongs to another user, so run \
             gpusight as that user or as root",
            path.display()
        ),
        io::ErrorKind::NotFound => format!("cannot read the {what} of PID {pid}: the process has exited"),
        _ => format!("cannot read the {what} of PID {pid} from {}: {err}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(gpusight_fixtures)]
    fn fixture(name: &str) -> Vec<u8> {
        let path = format!("{}/tests/fixtures/proc/text/{name}", env!("CARGO_MANIFEST_DIR"));
        std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn maps_finds_cuda_libraries_once_with_versions() {
        let libs = parse_maps(&String::from_utf8_lossy(&fixture("maps")));
        let got: Vec<(&str, Option<&str>)> = libs.iter().map(|l| (l.name.as_str(), l.version.as_deref())).collect();
        assert_eq!(
            got,
            vec![
                ("libcuda", Some("580.159.04")),
                ("libnvidia-ml", Some("580.159.04")),
                ("libcudart", Some("12")),
                ("libcudart", Some("12.4.127")),
                ("libcublas", Some("12")),
                ("libcublasLt", Some("12")),
                ("libcudnn", Some("9.1.0")),
                ("libnccl", Some("2")),
                ("libnvrtc", None),
            ]
        );
        assert_eq!(libs[2].path, "/opt/my env/lib/python3.11/site-packages/torch/lib/libcudart-d0da41ae.so.12");
        assert_eq!(libs[8].path, "/tmp/libnvrtc.so");
    }

    #[test]
    fn library_names() {
        assert_eq!(split_library_name("libcudnn.so.9.1.0"), Some(("libcudnn", Some("9.1.0"))));
        assert_eq!(split_library_name("libcudart-d0da41ae.so.12"), Some(("libcudart", Some("12"))));
        assert_eq!(split_library_name("libnvidia-ml.so.1"), Some(("libnvidia-ml", Some("1"))));
        assert_eq!(split_library_name("libcublasLt.so"), Some(("libcublasLt", None)));
        assert_eq!(split_library_name("python3.11"), None);
    }

    #[cfg(gpusight_fixtures)]
    #[test]
    fn environ_sorted() {
        let env = parse_environ(&fixture("environ"));
        assert_eq!(
            env,
            vec![
                ("CUDA_VISIBLE_DEVICES".to_string(), "0,1".to_string()),
                ("EMPTY".to_string(), String::new()),
                ("NCCL_DEBUG".to_string(), "INFO".to_string()),
                ("ODD".to_string(), String::new()),
                ("PATH".to_string(), "/usr/bin:/bin".to_string()),
                ("X".to_string(), "a=b".to_string()),
            ]
        );
    }

    #[test]
    fn errors_say_what_happened() {
        let dir = tempfile::tempdir().unwrap();
        let root = HostRoot::under(dir.path());
        let err = environment(&root, 77).unwrap_err();
        assert!(err.contains("PID 77") && err.contains("exited"), "{err}");
        let denied = read_error(&io::Error::from(io::ErrorKind::PermissionDenied), 5, "environment", &root.proc_dir);
        assert!(denied.contains("permission denied") && denied.contains("root"), "{denied}");
    }
}

//! `--only-visible`: the GPUs a CUDA program started from this shell would see, read from `CUDA_VISIBLE_DEVICES`
//! as CUDA reads it (indices or UUIDs, comma-separated; the list stops at the first entry that names no GPU).

use crate::sample::GpuInfo;

/// The NVML indices of the GPUs that `value` (the variable's text) makes visible. An empty value hides every
/// GPU, as it does for CUDA.
///
/// # Errors
/// The first entry names no GPU (nothing would be visible), or names a MIG instance (not shown separately yet).
pub fn visible_gpus(value: &str, gpus: &[GpuInfo]) -> Result<Vec<u32>, String> {
    let mut visible: Vec<u32> = Vec::new();
    for entry in value.split(',').map(str::trim) {
        if entry.starts_with("MIG-") {
            return Err(format!(
                "CUDA_VISIBLE_DEVICES names a MIG instance ({entry}); gpusight does not show MIG instances on their \
                 own yet: use --only with the parent GPU's index"
            ));
        }
        let found = if let Ok(index) = entry.parse::<u32>() {
            gpus.iter().find(|g| g.index == index)
        } else {
            // A UUID, or a unique prefix of one ("GPU-3f2a"), as CUDA accepts.
            let matching: Vec<&GpuInfo> =
                gpus.iter().filter(|g| !entry.is_empty() && g.uuid.starts_with(entry)).collect();
            if matching.len() == 1 { matching.first().copied() } else { None }
        };
        // CUDA ignores everything from the first entry it cannot use.
        let Some(gpu) = found else { break };
        if !visible.contains(&gpu.index) {
            visible.push(gpu.index);
        }
    }
    if visible.is_empty() && !value.trim().is_empty() {
        return Err(format!(
            "CUDA_VISIBLE_DEVICES='{value}' names no GPU of this machine (its GPUs: {})",
            gpus.iter().map(|g| g.index.to_string()).collect::<Vec<_>>().join(", ")
        ));
    }
    Ok(visible)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gpus() -> Vec<GpuInfo> {
        (0..4).map(|i| GpuInfo { index: i, uuid: format!("GPU-{i}a{i}b-0000"), ..GpuInfo::default() }).collect()
    }

    #[test]
    fn reads_indices_and_uuids_as_cuda_does() {
        assert_eq!(visible_gpus("2,0", &gpus()), Ok(vec![2, 0]));
        assert_eq!(visible_gpus("GPU-1a1b-0000, 3", &gpus()), Ok(vec![1, 3]));
        assert_eq!(visible_gpus("GPU-2a", &gpus()), Ok(vec![2]), "a unique prefix");
        assert_eq!(visible_gpus("1,7,2", &gpus()), Ok(vec![1]), "the list stops at the first unknown entry");
        assert_eq!(visible_gpus("", &gpus()), Ok(vec![]), "empty hides every GPU");
        assert!(visible_gpus("9", &gpus()).is_err_and(|e| e.contains("names no GPU")));
        assert!(visible_gpus("MIG-abc", &gpus()).is_err_and(|e| e.contains("MIG")));
    }
}

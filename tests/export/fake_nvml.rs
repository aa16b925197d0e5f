//! The exporter on the live NVML path, on the fake NVML (`fake-nvml/`): `/metrics` scraped on 1, 2, 8 and 72 GPUs
//! carries one series per GPU.
#![allow(clippy::expect_used, reason = "test helpers panic on a broken fixture or a gpusight that will not start")]

use std::process::Stdio;
use std::time::Duration;

use crate::common::fake_nvml::{command_on, h200s, scenario_file};
use crate::common::{KillOnDrop, free_port, http_agent, poll, temp_dir};

/// The values of `metric` in an exposition, by their `gpu` label.
fn by_gpu(text: &str, metric: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .filter_map(|l| {
            let gpu = l.split("gpu=\"").nth(1)?.split('"').next()?.to_owned();
            let value = l.rsplit(' ').next()?.to_owned();
            Some((gpu, value))
        })
        .collect()
}

/// Starts `export` on the fake playing `scenario` and returns the first exposition that has `n` GPUs' power.
fn scrape(scenario: &str, n: usize) -> String {
    scrape_until(scenario, n, |_| true)
}

/// [`scrape`], waiting also for `ready` to accept the exposition.
fn scrape_until(scenario: &str, n: usize, ready: impl Fn(&str) -> bool) -> String {
    let addr = format!("127.0.0.1:{}", free_port());
    let child = command_on(scenario, &["export", "--listen", &addr, "--interval", "0.5"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start export");
    let _child = KillOnDrop(child);
    let agent = http_agent(Duration::from_secs(5));
    poll("a scrape with every GPU", Duration::from_secs(30), || {
        let mut response = agent.get(&format!("http://{addr}/metrics")).call().map_err(|e| e.to_string())?;
        let body = response.body_mut().read_to_string().map_err(|e| e.to_string())?;
        let power = by_gpu(&body, "DCGM_FI_DEV_POWER_USAGE");
        if power.len() == n && ready(&body) { Ok(body) } else { Err(format!("{} GPUs with power", power.len())) }
    })
}

#[test]
fn metrics_on_one_two_eight_and_seventy_two_gpus() {
    let dir = temp_dir();
    for (scenario, n) in [
        ("h200".to_string(), 1),
        (scenario_file(dir.path(), "two", &h200s(2, "")), 2),
        (scenario_file(dir.path(), "eight", &h200s(8, "")), 8),
        ("nvl72".to_string(), 72),
    ] {
        let body = scrape(&scenario, n);
        let util = by_gpu(&body, "DCGM_FI_DEV_GPU_UTIL");
        assert_eq!(util.len(), n, "{n} GPUs");
        let gpus: std::collections::BTreeSet<_> = util.iter().map(|(g, _)| g.clone()).collect();
        assert_eq!(gpus.len(), n, "one series per GPU: {gpus:?}");
        if n == 1 {
            assert_eq!(by_gpu(&body, "DCGM_FI_DEV_POWER_USAGE"), [("0".to_owned(), "692.0".to_owned())]);
            assert_eq!(util, [("0".to_owned(), "100".to_owned())]);
        }
    }
}

#[test]
fn mig_devices_carry_gpu_i_id_and_gpu_i_profile() {
    // The slices' SM activity comes from GPM, two rounds (of 2 s) after the start.
    let body = scrape_until("hgx8-mig", 8, |b| {
        b.lines().any(|l| l.starts_with("DCGM_FI_PROF_SM_ACTIVE{") && l.contains("GPU_I_ID=\"7\""))
    });
    let used: Vec<&str> =
        body.lines().filter(|l| l.starts_with("DCGM_FI_DEV_FB_USED{") && l.contains("GPU_I_ID")).collect();
    assert_eq!(used.len(), 9, "seven slices on GPU 6 and two on GPU 7: {used:#?}");
    let slice = used
        .iter()
        .find(|l| l.contains("gpu=\"6\"") && l.contains("GPU_I_ID=\"7\""))
        .unwrap_or_else(|| panic!("GPU 6's GI 7: {used:#?}"));
    assert!(slice.contains("GPU_I_PROFILE=\"1g.10gb\""), "{slice}");
    assert!(slice.ends_with(" 9000"), "9,000 MiB used on the slice: {slice}");
    // dcgm-exporter's order: the MIG labels just before hostname.
    let profile_at = slice.find("GPU_I_PROFILE").unwrap_or(0);
    assert!(profile_at < slice.find("hostname").unwrap_or(0), "{slice}");
    let sm = body
        .lines()
        .find(|l| l.starts_with("DCGM_FI_PROF_SM_ACTIVE{") && l.contains("gpu=\"6\"") && l.contains("GPU_I_ID=\"7\""))
        .unwrap_or_default();
    assert!(sm.ends_with(" 0.95"), "the saturated slice's SM activity, from GPM per GPU instance: {sm}");
    // The whole GPU's own series stay without MIG labels.
    assert!(
        body.lines()
            .any(|l| l.starts_with("DCGM_FI_DEV_FB_USED{") && l.contains("gpu=\"6\"") && !l.contains("GPU_I_ID"))
    );
}

#[test]
fn nvlink_links_carry_their_state_and_error_counters() {
    let body = scrape_until("nvl72", 72, |b| b.contains("gpusight_nvlink_link_up{"));
    let series = |name: &str, gpu: u32, link: u32| {
        body.lines()
            .find(|l| {
                l.starts_with(&format!("{name}{{"))
                    && l.contains(&format!("gpu=\"{gpu}\""))
                    && l.contains(&format!("nvlink=\"{link}\""))
            })
            .map(|l| l.rsplit(' ').next().unwrap_or_default().to_owned())
    };
    assert_eq!(series("gpusight_nvlink_link_up", 17, 3).as_deref(), Some("0"), "GPU 17's link 3 is down");
    assert_eq!(series("gpusight_nvlink_link_up", 17, 4).as_deref(), Some("1"));
    assert_eq!(series("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", 0, 7).as_deref(), Some("0"));
    let links = body.lines().filter(|l| l.starts_with("gpusight_nvlink_link_up{")).count();
    assert_eq!(links, 72 * 18, "every link of every GPU");
}

#[test]
fn nvlink_links_carry_their_speed_rates_and_bandwidth_counters() {
    // The rates need two reads of the counters: the second comes with the second sample.
    let body = scrape_until("hgx8-mig", 8, |b| b.contains("gpusight_nvlink_link_rx_bytes_per_second{"));
    let value = |line: &str| line.rsplit(' ').next().unwrap_or_default().parse::<f64>().unwrap_or(-1.0);
    let link_series = |name: &str, gpu: u32, link: u32| {
        body.lines()
            .find(|l| {
                l.starts_with(&format!("{name}{{"))
                    && l.contains(&format!("gpu=\"{gpu}\""))
                    && l.contains(&format!("nvlink=\"{link}\""))
            })
            .map(value)
    };
    // NVLink 4: 26,562 MB/s a direction per link.
    assert_eq!(link_series("gpusight_nvlink_link_speed_bytes_per_second", 0, 17), Some(26_562_000_000.0));
    // 120,000 MiB/s over 18 links: about 6.99 GB/s a link.
    let rx = link_series("gpusight_nvlink_link_rx_bytes_per_second", 0, 3).expect("link 3's RX rate");
    assert!((6.0e9..8.0e9).contains(&rx), "{rx}");
    let tx = link_series("gpusight_nvlink_link_tx_bytes_per_second", 0, 3).expect("link 3's TX rate");
    assert!((6.0e9..8.0e9).contains(&tx), "{tx}");
    // dcgm-exporter's per-link counter: the link in the name, the GPU's labels, no nvlink label.
    let l17: Vec<&str> = body.lines().filter(|l| l.starts_with("DCGM_FI_DEV_NVLINK_BANDWIDTH_L17{")).collect();
    assert_eq!(l17.len(), 8, "one per GPU: {l17:#?}");
    assert!(l17.iter().all(|l| !l.contains("nvlink=") && value(l) >= 0.0), "{l17:#?}");
    let total = body.lines().find(|l| l.starts_with("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{gpu=\"0\"")).map(value);
    let l0 = body.lines().find(|l| l.starts_with("DCGM_FI_DEV_NVLINK_BANDWIDTH_L0{gpu=\"0\"")).map(value);
    assert!(total.zip(l0).is_some_and(|(t, l)| t > l && l > 0.0), "{total:?} {l0:?}");
    // Links belong to the whole GPU: on the GPUs in MIG mode (6 and 7) their series carry no MIG labels, beside the
    // slices' series that do.
    assert_eq!(link_series("gpusight_nvlink_link_speed_bytes_per_second", 6, 0), Some(26_562_000_000.0));
    let nvlink_series = body.lines().filter(|l| l.contains("nvlink=\"") || l.starts_with("DCGM_FI_DEV_NVLINK_"));
    assert!(nvlink_series.clone().all(|l| !l.contains("GPU_I_ID")), "no MIG labels on a link");
    assert!(nvlink_series.count() > 8 * 18, "every link's series");
    assert!(body.lines().any(|l| l.contains("gpu=\"7\"") && l.contains("GPU_I_PROFILE=\"3g.40gb\"")), "the slices too");
}

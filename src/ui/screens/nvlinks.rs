//! The NVLink screen: each link of one GPU on a line (state, version and speed, RX/TX rates, CRC/replay/recovery
//! counts), in two columns where the screen is wide; where the links do not fit, the runs of healthy links that
//! are alike (up, no errors, same version and speed) share one line with their mean rates.

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::app::App;
use crate::sample::NvLinkTick;
use crate::ui::paint::{Paint, fill};
use crate::units;

/// Width of one link's line, and of a column with its gap.
const CELL_W: usize = 72;
const COLUMN_W: usize = CELL_W + 3;

/// One line of the grid: the text, and whether it shows a problem (a link down, errors counted).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LinkRow {
    pub text: String,
    pub bad: bool,
}

fn rate(bytes_s: Option<u64>) -> String {
    #[expect(clippy::cast_precision_loss, reason = "a rate shown to one decimal")]
    bytes_s.map_or_else(|| units::NA.to_owned(), |b| units::rate_kbps_f64(b as f64 / 1000.0))
}

fn speed(mb_s: Option<u32>) -> String {
    mb_s.map_or_else(|| units::NA.to_owned(), |s| units::rate_kbps_f64(f64::from(s) * 1000.0))
}

fn errors(l: &NvLinkTick) -> u64 {
    [l.crc_flit_errors, l.replay_errors, l.recovery_errors].into_iter().flatten().fold(0, u64::saturating_add)
}

fn row(label: &str, l: &NvLinkTick, rx: Option<u64>, tx: Option<u64>) -> LinkRow {
    let count = |v: Option<u64>| units::num(v, "");
    let text = format!(
        "{label:<7}{:<5}{:<4}{:>9}  RX {:>8}  TX {:>8}  CRC {} RPL {} REC {}",
        if l.up { "up" } else { "DOWN" },
        l.version.map_or_else(|| "v?".to_owned(), |v| format!("v{v}")),
        speed(l.speed_mb_s),
        rate(rx),
        rate(tx),
        count(l.crc_flit_errors),
        count(l.replay_errors),
        count(l.recovery_errors),
    );
    LinkRow { text, bad: !l.up || errors(l) > 0 }
}

/// Whether two links may share a line: both up without errors, at the same version and speed.
fn alike(a: &NvLinkTick, b: &NvLinkTick) -> bool {
    a.up && b.up && errors(a) == 0 && errors(b) == 0 && a.version == b.version && a.speed_mb_s == b.speed_mb_s
}

fn mean(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    let (mut sum, mut n) = (0u64, 0u64);
    for v in values {
        sum = sum.saturating_add(v?);
        n += 1;
    }
    (n > 0).then(|| sum / n)
}

/// The grid's lines for at most `room` lines: a line per link when they fit, else runs of alike links grouped
/// (`L0-16`, their mean rates), and a last line saying how many more links there are when even that does not fit.
pub(crate) fn link_rows(links: &[NvLinkTick], room: usize) -> Vec<LinkRow> {
    let mut rows: Vec<LinkRow> = if links.len() <= room {
        links.iter().map(|l| row(&format!("L{}", l.link), l, l.rx_bytes_s, l.tx_bytes_s)).collect()
    } else {
        let mut rows = Vec::new();
        let mut at = 0;
        while at < links.len() {
            let first = &links[at];
            let run = links[at..].iter().take_while(|l| alike(first, l)).count().max(1);
            let group = &links[at..at + run];
            let label =
                if run == 1 { format!("L{}", first.link) } else { format!("L{}-{}", first.link, group[run - 1].link) };
            let (rx, tx) = (mean(group.iter().map(|l| l.rx_bytes_s)), mean(group.iter().map(|l| l.tx_bytes_s)));
            rows.push(row(&label, first, rx, tx));
            at += run;
        }
        rows
    };
    if rows.len() > room && room > 0 {
        let hidden = rows.len() - (room - 1);
        rows.truncate(room - 1);
        rows.push(LinkRow { text: format!("... {hidden} more lines (a taller terminal shows them)"), bad: false });
    }
    rows
}

/// The links summed: how many are up, RX and TX over all links, and the error counters.
fn summary(links: &[NvLinkTick]) -> String {
    let sum = |f: fn(&NvLinkTick) -> Option<u64>| links.iter().filter_map(f).reduce(u64::saturating_add);
    format!(
        " {}/{} up  RX {}  TX {}  CRC {}  replay {}  recovery {}",
        links.iter().filter(|l| l.up).count(),
        links.len(),
        rate(sum(|l| l.rx_bytes_s)),
        rate(sum(|l| l.tx_bytes_s)),
        units::num(sum(|l| l.crc_flit_errors), ""),
        units::num(sum(|l| l.replay_errors), ""),
        units::num(sum(|l| l.recovery_errors), ""),
    )
}

pub(super) fn render_nvlinks(area: Rect, buf: &mut Buffer, gpu: u32, app: &App, paint: &Paint) {
    let theme = &paint.theme;
    let links: &[NvLinkTick] = app.tick().gpus.iter().find(|g| g.index == gpu).map_or(&[], |g| &g.nvlinks);
    let mut lines = vec![paint.title_line(
        &format!("NVLink GPU {gpu}"),
        vec![Span::styled("(g next GPU, Esc back) ", theme.dim)],
        area.width,
    )];
    if links.is_empty() {
        lines.push(Line::from(Span::styled(" no NVLink links read on this GPU", theme.dim)));
        fill(area, buf, lines, theme.base);
        return;
    }
    lines.push(Line::from(Span::raw(summary(links))));
    let columns = (usize::from(area.width) / COLUMN_W).clamp(1, 2);
    let room = usize::from(area.height).saturating_sub(lines.len()) * columns;
    let rows = link_rows(links, room);
    let per_column = rows.len().div_ceil(columns);
    for r in 0..per_column {
        let mut spans = Vec::new();
        for c in 0..columns {
            let Some(cell) = rows.get(c * per_column + r) else { continue };
            let style = if cell.bad { theme.high } else { theme.base };
            spans.push(Span::styled(format!(" {:<w$}  ", cell.text, w = CELL_W), style));
        }
        lines.push(Line::from(spans));
    }
    fill(area, buf, lines, theme.base);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(n: u32) -> NvLinkTick {
        NvLinkTick {
            link: n,
            up: true,
            version: Some(4),
            crc_flit_errors: Some(0),
            replay_errors: Some(0),
            recovery_errors: Some(0),
            speed_mb_s: Some(26_562),
            rx_kib: Some(1),
            tx_kib: Some(1),
            rx_bytes_s: Some(7_000_000_000),
            tx_bytes_s: Some(6_900_000_000),
        }
    }

    fn hgx() -> Vec<NvLinkTick> {
        let mut links: Vec<NvLinkTick> = (0..18).map(link).collect();
        links[17].up = false;
        links[17].speed_mb_s = None;
        (links[17].rx_bytes_s, links[17].tx_bytes_s) = (None, None);
        links[5].crc_flit_errors = Some(950);
        links
    }

    #[test]
    fn a_line_per_link_when_they_fit() {
        let rows = link_rows(&hgx(), 20);
        assert_eq!(rows.len(), 18);
        assert_eq!(rows[0].text, "L0     up   v4   26.6GB/s  RX  7.0GB/s  TX  6.9GB/s  CRC 0 RPL 0 REC 0");
        assert!(rows[0].text.chars().count() <= CELL_W);
        assert!(rows[5].bad && rows[5].text.contains("CRC 950"));
        assert!(rows[17].bad && rows[17].text.starts_with("L17    DOWN v4        N/A  RX      N/A"));
    }

    #[test]
    fn alike_links_share_a_line_when_they_do_not_fit() {
        let rows = link_rows(&hgx(), 6);
        let texts: Vec<&str> = rows.iter().map(|r| r.text.as_str()).collect();
        assert_eq!(texts.len(), 4, "{texts:#?}");
        assert!(texts[0].starts_with("L0-4   up"), "{texts:#?}");
        assert!(texts[1].starts_with("L5 ") && texts[1].contains("CRC 950"));
        assert!(texts[2].starts_with("L6-16  up") && texts[2].contains("RX  7.0GB/s"));
        assert!(texts[3].starts_with("L17    DOWN"));
    }

    #[test]
    fn what_does_not_fit_is_counted() {
        let rows = link_rows(&hgx(), 3);
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[2].text, "... 2 more lines (a taller terminal shows them)");
    }

    #[test]
    fn the_summary_sums_the_links() {
        assert_eq!(summary(&hgx()), " 17/18 up  RX 119.0GB/s  TX 117.3GB/s  CRC 950  replay 0  recovery 0");
    }
}

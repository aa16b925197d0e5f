//! Fuzzes the Prometheus query-result reader and the fleet model built on it: one answer is read, given to every
//! query the fleet asks, and the fleet is built, ordered, printed as text and JSON, and drawn.
#![no_main]

use gpusight::fleet::query::{Answers, Fleet, FleetOptions, QUERIES, parse_vector};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let Ok(samples) = parse_vector(text) else { return };
    let answers: Answers = QUERIES.iter().map(|q| ((*q).to_owned(), samples.clone())).collect();
    let now = samples.first().map_or(0.0, |s| s.at_s);
    let fleet = Fleet::from_answers("http://user:pw@fuzz:9090", &answers, now, &FleetOptions::default());
    let text = fleet.to_text();
    assert!(!text.contains('\x1b'), "an escape reached the fleet text");
    assert!(!text.contains("pw@"));
    let _ = fleet.to_json();
    let _ = fleet.n_gpus();
    let mut view = gpusight::fleet::view::FleetView::new(fleet);
    for drilled in [false, true] {
        view.set_drilled(drilled);
        let mut buffer = ratatui::buffer::Buffer::empty(ratatui::layout::Rect::new(0, 0, 100, 30));
        ratatui::widgets::Widget::render(&view, buffer.area, &mut buffer);
        view.move_selection(1);
    }
});

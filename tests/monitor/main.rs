//! The terminal monitor: the app driven by keys and actions (`app`), whole screens as insta snapshots (`screens`),
//! the real binary in a pseudo-terminal (`in_pty`), and the terminal given back on every exit path (`terminal`).

#[path = "../common/mod.rs"]
mod common;

mod app;
mod fake_nvml;
mod in_pty;
mod screens;
mod terminal;

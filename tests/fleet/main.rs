//! The fleet view over Prometheus: the reader on fixture answers (`reader`), the widget (`view`), and end to end with
//! a real Prometheus, exporters in-process (`end_to_end`) and through the binary (`end_to_end_binary`).

#[path = "../common/mod.rs"]
mod common;

mod end_to_end;
mod end_to_end_binary;
mod reader;
mod view;

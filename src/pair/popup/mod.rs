//! The pairing popup (`heeler pair`).

pub mod checklist;
pub mod clipboard;
pub mod event_loop;
pub mod keys;
pub mod machine;
pub mod qr;
pub mod screen;
pub mod terminal;

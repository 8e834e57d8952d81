//! Transcript parsing.

pub mod claude;
pub mod codex;
pub mod jsonpick;
pub mod scan;

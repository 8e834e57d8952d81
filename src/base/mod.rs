//! Foundations every area shares: files rewritten atomically, JSON, base64,
//! and the one module that talks to the OS below `std`.

pub mod atomic_file;
pub mod base64;
pub mod bytes;
pub mod clock;
pub mod dirs;
pub mod json;
pub(crate) mod sys;

//! Claude Code transcript lines: any bytes, line by line, never panic,
//! a line `JSON.parse` refuses counts nothing, and the events they give
//! survive the cache's event encoding.
#![no_main]
use heeler::usage::parse::claude;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| heeler_fuzz::check_line_parser(data, claude::parse_line));

//! The `pair.json` reader: any bytes give a config and warnings, never a
//! panic; the port is never 0.
#![no_main]
use heeler::pair::config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parsed = config::from_contents(data);
    assert_ne!(parsed.ssh_port, 0);
    let _ = parsed.warning_lines();
});

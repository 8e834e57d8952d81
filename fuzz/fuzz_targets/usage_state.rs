//! The aggregate state's base and journal records (their bytes past the
//! checksums): never panic, and a damaged record ends the replay.
#![no_main]
use heeler::usage::store::state;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let parts = heeler_fuzz::parts(data);
    if let Some((_, detailed, applied)) = state::decode(parts[0], &parts[1..]) {
        assert!(applied < parts.len());
        let _ = heeler::usage::aggregate::flatten(&detailed);
    }
});

//! The index base and journal records (their bytes past the checksums):
//! never panic; what decodes encodes to a self-contained index that
//! decodes back to itself. The events file is a stand-in (`/dev/null`), so
//! entries' segments fail to load as a damaged events file would.
#![no_main]
use std::fs::File;
use std::sync::{Arc, OnceLock};

use heeler::usage::store::entry::{EventsFile, Index};
use heeler::usage::store::index;
use libfuzzer_sys::fuzz_target;

fn events_file() -> EventsFile {
    static FILE: OnceLock<EventsFile> = OnceLock::new();
    FILE.get_or_init(|| EventsFile(Arc::new(File::open("/dev/null").expect("/dev/null"))))
        .clone()
}

fuzz_target!(|data: &[u8]| {
    let parts = heeler_fuzz::parts(data);
    let file = events_file();
    // The self-contained form tests compare indexes by.
    let whole = Index::from_bytes(parts[0]);
    assert_eq!(Index::from_bytes(&whole.to_bytes()), whole);
    let Some(mut loaded) = index::decode_base(parts[0], |_| Some(file.clone())) else {
        return;
    };
    for record in &parts[1..] {
        if !index::apply_record(&mut loaded, record, &file) {
            break;
        }
    }
    let bytes = loaded.to_bytes();
    assert_eq!(Index::from_bytes(&bytes).to_bytes(), bytes);
});

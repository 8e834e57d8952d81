//! The owners table file. Two modes (the first byte's low bit): raw bytes
//! opened as a table of the size they claim, or a table built from the
//! input's rows, saved, one byte of it changed, and opened again. Never
//! panics; an intact table reads back exactly the rows it was built from,
//! and lookups agree with the rows.
#![no_main]
use std::path::{Path, PathBuf};

use heeler::usage::store::owners::{self, Owners, OwnersRef};
use libfuzzer_sys::fuzz_target;

/// A directory for one run, removed when dropped.
struct Dir(PathBuf);

impl Dir {
    fn new() -> Option<Dir> {
        // tmpfs when there is one: a run writes and reads a file.
        let shm = Path::new("/dev/shm");
        let base = match shm.is_dir() {
            true => shm.to_path_buf(),
            false => std::env::temp_dir(),
        };
        let path = base.join(format!("heeler-fuzz-owners-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir(&path).ok()?;
        Some(Dir(path))
    }
}

impl Drop for Dir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn word(bytes: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = bytes.len().min(8);
    b[..n].copy_from_slice(&bytes[..n]);
    u64::from_le_bytes(b)
}

fn check(table: &Owners) {
    let Ok(rows) = table.rows() else {
        return;
    };
    let ids: Vec<u64> = rows.iter().map(|r| r.0).chain([0, 1, u64::MAX]).collect();
    if let Ok(found) = table.resolve(&ids) {
        for (id, owner) in &rows {
            assert_eq!(found.get(id), Some(owner));
        }
    }
}

fn raw(dir: &Path, data: &[u8]) {
    let generation = word(data.get(8..16).unwrap_or_default());
    let count = word(data.get(16..24).unwrap_or_default());
    if std::fs::write(dir.join(format!("owners-v1.{generation:016x}.bin")), data).is_err() {
        return;
    }
    let reference = OwnersRef {
        generation,
        count,
        delta: Default::default(),
    };
    if let Ok(table) = Owners::open(reference, dir) {
        check(&table);
    }
}

fn built(dir: &Path, flip: u64, data: &[u8]) {
    let ids: Vec<(u64, u64)> = data
        .chunks_exact(16)
        .map(|c| (word(&c[..8]), word(&c[8..]) | 1))
        .collect();
    let expected = owners::build(ids.clone());
    let mut table = Owners::new(ids);
    if table.save(dir).is_err() {
        return;
    }
    let Some(reference) = table.reference() else {
        return;
    };
    let path = dir.join(format!("owners-v1.{:016x}.bin", reference.generation));
    let Ok(mut bytes) = std::fs::read(&path) else {
        return;
    };
    let changed = !bytes.is_empty() && flip & 0x100 != 0;
    if changed {
        let at = (flip >> 9) as usize % bytes.len();
        bytes[at] ^= (flip as u8) | 1;
        if std::fs::write(&path, &bytes).is_err() {
            return;
        }
    }
    match Owners::open(reference, dir) {
        Ok(reopened) => {
            if !changed {
                assert_eq!(reopened.rows().ok(), Some(expected));
            }
            check(&reopened);
        }
        Err(_) => assert!(changed, "an intact table did not open"),
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(dir) = Dir::new() else {
        return;
    };
    let (selector, rest) = heeler_fuzz::selector(data);
    if selector & 1 == 0 {
        raw(&dir.0, rest);
    } else {
        built(&dir.0, word(rest), rest.get(8..).unwrap_or_default());
    }
});

//! The file reader behind `segcut maxflow` (gzip, bzip2, tar, .sgb, plain, by content) on
//! arbitrary bytes: a value or an error, never a panic, and no raw escape in a message.
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::io::dimacs::{read_instances, ReadOptions};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fuzz.tar");
    std::fs::write(&path, data).unwrap();
    if let Err(e) = read_instances(&path, &ReadOptions::default(), |_| Ok(())) {
        assert!(!e.to_string().contains('\x1b'));
    }
});

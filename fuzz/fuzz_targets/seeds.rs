//! The seed reader (PNG label, palette and colour images) on arbitrary bytes against a 16×16
//! image: seeds or an error, never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::io::{load_seeds, SeedOptions};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seeds.png");
    std::fs::write(&path, data).unwrap();
    let _ = load_seeds(&path, [16, 16, 1], &SeedOptions::default());
});

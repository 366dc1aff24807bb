//! The nifti volume reader on arbitrary bytes: an image or an error, never a panic or an abort
//! (run with `-rss_limit_mb`: a header declaring a huge volume must be refused, not allocated).
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::io::{load_image_with, LoadOptions};

fuzz_target!(|data: &[u8]| {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("volume.nii");
    std::fs::write(&path, data).unwrap();
    let _ = load_image_with(&path, &LoadOptions::default());
});

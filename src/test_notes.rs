//! Figures that the test-only measurement tools (the emulations' round and pass counts) leave for
//! a person to read. They go to `test-notes/NAME.txt` beside the test executable's profile folder
//! (`target/release/test-notes/` for `cargo test --release`), never to the terminal: the library
//! writes nothing there, in its tests either.

use std::fmt::{Display, Write as _};
use std::path::PathBuf;

/// The lines of one measurement, written by [`Notes::save`].
pub(crate) struct Notes {
    name: &'static str,
    text: String,
}

impl Notes {
    /// Notes for `target/<profile>/test-notes/<name>.txt`.
    pub(crate) fn new(name: &'static str) -> Self {
        Notes {
            name,
            text: String::new(),
        }
    }

    /// Adds one line.
    pub(crate) fn line(&mut self, line: impl Display) {
        let _ = writeln!(self.text, "{line}");
    }

    /// Writes the notes (replacing an earlier run's) and returns where; a failed write fails the
    /// test that measured.
    pub(crate) fn save(self) -> PathBuf {
        // The test executable is `target/<profile>/deps/<name>-<hash>`.
        let exe = std::env::current_exe().expect("the test executable's path");
        let dir = exe
            .parent()
            .and_then(|deps| deps.parent())
            .expect("a profile folder above deps/")
            .join("test-notes");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let path = dir.join(format!("{}.txt", self.name));
        std::fs::write(&path, self.text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }
}

//! Where a load's time goes: named spans that the DIMACS reader and the CSR build mark as they
//! run, collected only while [`record`] runs (for `segcut bench --suite load`, which reports
//! them beside each row so that a many-core run shows which stage stops scaling). Off, a mark
//! is one atomic load.

use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::Mutex;
use std::time::Instant;

static ON: AtomicBool = AtomicBool::new(false);
static LOG: Mutex<Vec<(&'static str, f64)>> = Mutex::new(Vec::new());

/// Notes that the span `name` ran from `since` until now (added to its earlier spans).
pub(crate) fn mark(name: &'static str, since: Instant) {
    if ON.load(Relaxed) {
        let ms = since.elapsed().as_secs_f64() * 1e3;
        if let Ok(mut log) = LOG.lock() {
            log.push((name, ms));
        }
    }
}

/// Runs `f` and returns what it gives with the milliseconds of each span marked meanwhile,
/// summed per name, in the order of their first mark. Spans on different threads overlap
/// (the reading thread runs beside the parser), so they do not add up to the wall time. One
/// recording at a time: marks of other loads running meanwhile are counted in.
pub(crate) fn record<T>(f: impl FnOnce() -> T) -> (T, Vec<(String, f64)>) {
    if let Ok(mut log) = LOG.lock() {
        log.clear();
    }
    ON.store(true, Relaxed);
    let out = f();
    ON.store(false, Relaxed);
    let log = LOG
        .lock()
        .map(|mut l| std::mem::take(&mut *l))
        .unwrap_or_default();
    let mut sums: Vec<(String, f64)> = Vec::new();
    for (name, ms) in log {
        match sums.iter_mut().find(|(n, _)| n == name) {
            Some((_, t)) => *t += ms,
            None => sums.push((name.to_string(), ms)),
        }
    }
    (out, sums)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_summed_per_name_only_while_recording() {
        // Other tests may load files meanwhile: only this test's names are looked at.
        let ours = |spans: Vec<(String, f64)>| -> Vec<(String, f64)> {
            spans
                .into_iter()
                .filter(|(n, _)| n.starts_with("phases test"))
                .collect()
        };
        mark("phases test: not recorded", Instant::now());
        let ((), spans) = record(|| {
            let t = Instant::now();
            std::thread::sleep(std::time::Duration::from_millis(2));
            mark("phases test a", t);
            mark("phases test b", t);
            mark("phases test a", t);
        });
        let spans = ours(spans);
        let names: Vec<&str> = spans.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["phases test a", "phases test b"]);
        // `a` is two spans, each at least the 2 ms slept, the later one at least `b`.
        assert!(
            spans[1].1 >= 2.0 && spans[0].1 >= spans[1].1 + 2.0,
            "{spans:?}"
        );
        mark("phases test: after", Instant::now());
        let ((), again) = record(|| {});
        assert!(ours(again).is_empty());
    }
}

//! The load suite's stage lines, alone in their own test binary: the stage recorder is
//! process-wide (`src/phases.rs`), so another test loading a graph at the same time would add
//! its stages to these rows (it did, in tests/dimacs.rs under CI's parallel tests).

#[test]
fn the_load_suite_says_where_a_text_loads_time_went() {
    // `segcut bench --suite load` reports the stages of each text row's median run (what a
    // many-core run needs to see which stage stops scaling).
    let inst: segcut::bench::BenchInstance = "sparse:3000:d4:m100:s1".parse().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let recs = segcut::bench::load::run(&[inst], dir.path(), 1, |_| {}).unwrap();
    assert!(recs.iter().all(|r| r.same_graph));
    for what in [".max", ".max.gz"] {
        let r = recs.iter().find(|r| r.what == what).unwrap();
        let names: Vec<&str> = r.phases.iter().map(|(n, _)| n.as_str()).collect();
        for stage in [
            "pre-parse",
            "apply",
            "build: scatter",
            "build: reverse links",
        ] {
            assert!(names.contains(&stage), "{what}: {names:?}");
        }
        assert!(r.phases.iter().all(|(_, ms)| ms.is_finite() && *ms >= 0.0));
    }
    let baseline = recs
        .iter()
        .find(|r| r.what.starts_with("read .max"))
        .unwrap();
    assert!(!baseline.phases.iter().any(|(n, _)| n.starts_with("build")));
}

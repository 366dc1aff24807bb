//! The `.max` text parser on arbitrary bytes: a value or an error, never a panic; an accepted
//! graph must solve to the same flow with BK and the reference Dinic, and both cuts verify.
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::graph::FlowNetwork;
use segcut::maxflow::{bk::Bk, reference::Dinic, verify, Solver};

fuzz_target!(|data: &[u8]| {
    let Ok(inst) = segcut::io::dimacs::read_max(data, "fuzz.max") else {
        return;
    };
    if inst.network.num_nodes() > 100_000 {
        return;
    }
    let bk = Bk::default().solve(&inst.network).expect("BK solves an accepted graph");
    let dinic = Dinic.solve(&inst.network).expect("Dinic solves an accepted graph");
    assert_eq!(bk.flow, dinic.flow);
    verify(&inst.network, &bk).expect("BK's cut verifies");
    verify(&inst.network, &dinic).expect("Dinic's cut verifies");
});

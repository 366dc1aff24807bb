//! The binary graph reader on arbitrary bytes: a value or an error, never a panic; what it
//! accepts is a valid graph that BK solves and certifies.
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::graph::FlowNetwork;
use segcut::maxflow::{bk::Bk, verify, Solver};

fuzz_target!(|data: &[u8]| {
    let Ok(inst) = segcut::io::dimacs::read_sgb(data, "fuzz.sgb") else {
        return;
    };
    if inst.network.num_nodes() <= 100_000 {
        let cut = Bk::default().solve(&inst.network).expect("BK solves an accepted graph");
        verify(&inst.network, &cut).expect("the cut verifies");
    }
});

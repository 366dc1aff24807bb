//! The binary graph reader on arbitrary bytes: a value or an error, never a panic; what it
//! accepts is a valid graph that BK solves and certifies. When the first input byte is odd, the
//! rest is re-sealed (its last four bytes replaced by the CRC-32C of the others) so that the
//! fuzzer reaches the header and graph checks behind the checksum; tests/fuzz_sgb.rs is the
//! stable harness that CI runs.
#![no_main]

use libfuzzer_sys::fuzz_target;
use segcut::graph::FlowNetwork;
use segcut::maxflow::{bk::Bk, verify, Solver};

fn crc32c(data: &[u8]) -> u32 {
    let mut c = !0u32;
    for &b in data {
        c ^= u32::from(b);
        for _ in 0..8 {
            c = if c & 1 != 0 {
                (c >> 1) ^ 0x82f6_3b78
            } else {
                c >> 1
            };
        }
    }
    !c
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut bytes = rest.to_vec();
    if mode & 1 == 1 && bytes.len() >= 4 {
        let end = bytes.len() - 4;
        let crc = crc32c(&bytes[..end]);
        bytes[end..].copy_from_slice(&crc.to_le_bytes());
    }
    let Ok(inst) = segcut::io::dimacs::read_sgb(&bytes[..], "fuzz.sgb") else {
        return;
    };
    if inst.network.num_nodes() <= 100_000 {
        let cut = Bk::default().solve(&inst.network).expect("BK solves an accepted graph");
        verify(&inst.network, &cut).expect("the cut verifies");
    }
});

//! The graph types: grid geometry, validation, the grid → CSR conversion and the builder's checks.

use segcut::graph::{Connectivity, CsrBuilder, FlowNetwork, GridGraph, Vertex};
use segcut::rng::Rng;
use segcut::Error;

const ALL: [Connectivity; 4] = [
    Connectivity::N4,
    Connectivity::N8,
    Connectivity::N6,
    Connectivity::N26,
];

fn grid(conn: Connectivity, w: usize, h: usize, d: usize) -> GridGraph {
    let d = if conn.is_3d() { d } else { 1 };
    GridGraph::new(w, h, d, conn).unwrap()
}

#[test]
fn offsets_come_in_opposite_pairs_and_are_distinct() {
    for conn in ALL {
        let off = conn.offsets();
        assert_eq!(off.len(), conn.number() as usize);
        for (d, o) in off.iter().enumerate() {
            let r = off[Connectivity::opposite(d)];
            assert_eq!([-o[0], -o[1], -o[2]], r, "{conn} direction {d}");
            assert!(o.iter().all(|c| c.abs() <= 1) && o != &[0, 0, 0]);
            assert_eq!(off.iter().filter(|p| *p == o).count(), 1);
            if !conn.is_3d() {
                assert_eq!(o[2], 0);
            }
        }
    }
}

#[test]
fn neighbours_match_coordinates_and_edge_counts() {
    for conn in ALL {
        for (w, h, d) in [(1, 1, 1), (3, 1, 2), (4, 5, 3), (2, 7, 1)] {
            let g = grid(conn, w, h, d);
            let mut pairs = 0;
            for v in 0..g.num_nodes() {
                let [x, y, z] = g.coords(v);
                assert_eq!(g.index(x, y, z), v);
                for (dir, o) in conn.offsets().iter().enumerate() {
                    let (nx, ny, nz) = (
                        x as i64 + o[0] as i64,
                        y as i64 + o[1] as i64,
                        z as i64 + o[2] as i64,
                    );
                    let [gw, gh, gd] = g.dims();
                    let inside = (0..gw as i64).contains(&nx)
                        && (0..gh as i64).contains(&ny)
                        && (0..gd as i64).contains(&nz);
                    match g.neighbor(v, dir) {
                        Some(u) => {
                            assert!(inside);
                            assert_eq!(g.coords(u), [nx as usize, ny as usize, nz as usize]);
                            assert_eq!(u as isize - v as isize, g.stride(dir));
                            assert_eq!(g.neighbor(u, dir ^ 1), Some(v));
                            pairs += 1;
                        }
                        None => assert!(!inside),
                    }
                }
            }
            assert_eq!(pairs, 2 * g.num_edges(), "{conn} {w}x{h}x{d}");
        }
    }
}

#[test]
fn validate_rejects_bad_capacities_naming_the_node() {
    let mut g = grid(Connectivity::N4, 3, 3, 1);
    g.caps_mut(0)[4] = -1;
    let e = g.validate().unwrap_err().to_string();
    assert!(e.contains("x=1, y=1") && e.contains("negative"), "{e}");

    let mut g = grid(Connectivity::N4, 3, 3, 1);
    g.caps_mut(0)[2] = 5; // x = 2 has no +x neighbour
    let e = g.validate().unwrap_err().to_string();
    assert!(
        e.contains("leaves the grid") && e.contains("x=2, y=0"),
        "{e}"
    );

    let mut g = grid(Connectivity::N6, 2, 2, 2);
    g.set_arc(0, 1, i32::MAX).unwrap();
    g.set_arc(1, 0, 1).unwrap();
    assert!(matches!(g.validate(), Err(Error::Overflow(_))));

    let mut g = grid(Connectivity::N4, 2, 1, 1);
    g.set_terminals(1, 0, -3);
    assert!(g.validate().unwrap_err().to_string().contains("terminal"));

    assert!(GridGraph::new(0, 3, 1, Connectivity::N4).is_err());
    assert!(GridGraph::new(3, 3, 2, Connectivity::N8).is_err());
    assert!(GridGraph::new(1 << 20, 1 << 20, 1 << 10, Connectivity::N6).is_err());
    assert!(grid(Connectivity::N4, 3, 3, 1).set_arc(0, 4, 1).is_err());
    assert!(grid(Connectivity::N8, 3, 3, 1).set_arc(0, 4, 1).is_ok());
}

fn random_grid(rng: &mut Rng, conn: Connectivity) -> GridGraph {
    let w = 1 + rng.below(5) as usize;
    let h = 1 + rng.below(5) as usize;
    let d = 1 + rng.below(4) as usize;
    let mut g = grid(conn, w, h, d);
    for v in 0..g.num_nodes() {
        for dir in 0..conn.degree() {
            if g.neighbor(v, dir).is_some() && rng.below(3) > 0 {
                g.caps_mut(dir)[v] = rng.below(20) as i32;
            }
        }
        g.set_terminals(v, rng.below(30) as i32, rng.below(30) as i32);
    }
    g
}

#[test]
fn csr_conversion_preserves_every_cut_capacity() {
    let mut rng = Rng::new(11);
    for i in 0..400 {
        let g = random_grid(&mut rng, ALL[i % 4]);
        let c = g.to_csr().unwrap();
        assert_eq!(c.num_nodes(), g.num_nodes());
        for _ in 0..5 {
            let side: Vec<bool> = (0..g.num_nodes()).map(|_| rng.below(2) == 1).collect();
            assert_eq!(g.cut_capacity(&side), c.cut_capacity(&side));
        }
        // Sisters are an involution and point back to the tail.
        let tails = c.tails();
        for (a, &tail) in tails.iter().enumerate() {
            let s = c.sisters()[a] as usize;
            assert_eq!(c.sisters()[s] as usize, a);
            assert_eq!(c.heads()[s], tail);
        }
    }
}

#[test]
fn builder_checks_and_terminal_rules() {
    let mut b = CsrBuilder::new(3).unwrap();
    assert!(b
        .add_edge(0, 3, 1, 0)
        .unwrap_err()
        .to_string()
        .contains("out of range"));
    assert!(b
        .add_edge(0, 1, -1, 0)
        .unwrap_err()
        .to_string()
        .contains("negative"));
    assert!(matches!(
        b.add_edge(0, 1, i32::MAX, 1),
        Err(Error::Overflow(_))
    ));
    b.add_arc(Vertex::Source, Vertex::Node(0), i32::MAX - 1)
        .unwrap();
    assert!(matches!(
        b.add_arc(Vertex::Source, Vertex::Node(0), 2),
        Err(Error::Overflow(_))
    ));
    b.add_arc(Vertex::Node(1), Vertex::Source, 7).unwrap(); // into s: dropped
    b.add_arc(Vertex::Sink, Vertex::Node(1), 7).unwrap(); // out of t: dropped
    b.add_edge(2, 2, 5, 5).unwrap(); // self loop: dropped
    b.add_arc(Vertex::Source, Vertex::Sink, 4).unwrap();
    b.add_arc(Vertex::Node(2), Vertex::Sink, 6).unwrap();
    b.add_arc(Vertex::Node(2), Vertex::Sink, 1).unwrap();
    assert_eq!(b.dropped(), 3);
    let g = b.build().unwrap();
    assert_eq!(g.num_arcs(), 0);
    assert_eq!(g.constant_flow(), 4);
    assert_eq!(g.sink_caps()[2], 7);
    // All nodes on the source side: the cut is the sink arcs plus s → t.
    assert_eq!(g.cut_capacity(&[false; 3]), 11);
    assert!(CsrBuilder::new(usize::MAX).is_err());
}

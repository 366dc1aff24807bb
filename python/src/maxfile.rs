//! Graphs with a constant flow (what BK-style terminal capacities leave over) as `.max` files: the
//! constant becomes direct source → sink arcs. Shared by `segcut.Grid` and `segcut.Graph`.

use segcut::graph::{Cap, CsrBuilder, CsrGraph, Vertex};

/// `g` with `constant` more flow on a direct source → sink arc (what BK-style terminal
/// capacities leave over), for writing a `.max` file that keeps the flow value.
pub(crate) fn with_constant(g: CsrGraph, constant: i64) -> segcut::Result<CsrGraph> {
    if constant == 0 {
        return Ok(g);
    }
    if constant < 0 {
        return Err(segcut::Error::Graph(format!(
            "the terminal capacities leave a negative constant flow {constant}, which a .max file \
             cannot hold"
        )));
    }
    let mut b = builder_of(&g)?;
    add_constant(&mut b, constant)?;
    b.build()
}

pub(crate) fn add_constant(b: &mut CsrBuilder, mut constant: i64) -> segcut::Result<()> {
    while constant > 0 {
        let c = constant.min(Cap::MAX as i64);
        b.add_arc(Vertex::Source, Vertex::Sink, c as Cap)?;
        constant -= c;
    }
    Ok(())
}

/// A builder holding `g`'s arcs, terminals and constant.
fn builder_of(g: &CsrGraph) -> segcut::Result<CsrBuilder> {
    let n = g.num_nodes();
    let mut b = CsrBuilder::with_capacity(n, g.num_arcs());
    for u in 0..n {
        for a in g.arcs_of(u) {
            let s = g.sisters()[a] as usize;
            if a < s {
                b.add_edge(u as u32, g.heads()[a], g.caps()[a], g.caps()[s])?;
            }
        }
        b.add_terminals(u as u32, g.source_caps()[u], g.sink_caps()[u])?;
    }
    add_constant(&mut b, g.constant_flow())?;
    Ok(b)
}

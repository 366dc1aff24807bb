//! A grid graph whose capacities already live in GPU memory, e.g. built there from an image by
//! the segmentation pipeline, so that only the image goes up and only the cut comes down.

use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream};

use crate::graph::Connectivity;

/// A [`GridGraph`](crate::graph::GridGraph) in device memory, in the same layout: `caps` holds
/// `degree · n` values, direction-major (`caps[d·n + v]` is the capacity of `v → neighbour(v, d)`,
/// zero where the neighbour lies outside the grid), `source` and `sink` hold `n` terminal
/// capacities. Whoever builds one guarantees what [`GridGraph::validate`] checks on the host:
/// capacities non-negative, each arc pair's sum and each node's terminal sum within `i32`.
///
/// [`GridGraph::validate`]: crate::graph::GridGraph::validate
pub struct DeviceGrid {
    /// Width, height and depth (1 for 2D).
    pub dims: [usize; 3],
    /// The neighbourhood.
    pub conn: Connectivity,
    /// Arc capacities, `degree · n`, direction-major.
    pub caps: CudaSlice<i32>,
    /// Source capacities, `n`.
    pub source: CudaSlice<i32>,
    /// Sink capacities, `n`.
    pub sink: CudaSlice<i32>,
    /// The stream the buffers were written on; the solver continues on it.
    pub stream: Arc<CudaStream>,
}

impl DeviceGrid {
    /// The number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.dims.iter().product()
    }
}

//! Device data shaped like the library's graphs: the grid's shape as every grid kernel takes it
//! ([`GridShape`]), a grid graph whose capacities live in GPU memory ([`DeviceGrid`]), what the
//! grid solver needs per node, and the small copies every driver of kernels makes.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, ValidAsZeroBits};
use serde::Serialize;

use super::runtime::Call;
use crate::graph::Connectivity;
use crate::{Error, Result};

/// A grid's shape as every grid kernel takes it, by value: `struct Grid` in
/// `kernels/common.cuh`, field for field.
///
/// ```
/// use segcut::cuda::GridShape;
/// use segcut::graph::Connectivity;
/// let s = GridShape::new([4, 3, 2], Connectivity::N6).unwrap();
/// assert_eq!((s.n, s.deg, s.is3d), (24, 6, 1));
/// assert!(GridShape::new([1 << 16, 1 << 16, 1], Connectivity::N4).is_err());
/// ```
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GridShape {
    /// Width.
    pub w: u32,
    /// Height.
    pub h: u32,
    /// Depth (1 for 2D).
    pub d: u32,
    /// Nodes, `w · h · d`.
    pub n: u32,
    /// Neighbours per node: 4, 8, 6 or 26.
    pub deg: u32,
    /// 1 for the 3D offset table (N6, N26), 0 for the 2D one.
    pub is3d: u32,
}

// SAFETY: a `repr(C)` struct of six u32, the layout of the kernels' `struct Grid`.
unsafe impl DeviceRepr for GridShape {}

impl GridShape {
    /// The most nodes a grid kernel takes: labels go up to `n + 1` and `w · h` is computed in
    /// 32 bits on the device.
    pub const MAX_NODES: usize = (u32::MAX - 2) as usize;

    /// The field names in memory order, as `struct Grid` declares them (checked by a test).
    pub const FIELDS: [&'static str; 6] = ["w", "h", "d", "n", "deg", "is3d"];

    /// The shape of a `dims` grid of connectivity `conn`; an error when it has more than
    /// [`GridShape::MAX_NODES`] nodes.
    pub fn new(dims: [usize; 3], conn: Connectivity) -> Result<Self> {
        let n = dims
            .iter()
            .try_fold(1usize, |a, &b| a.checked_mul(b))
            .filter(|&n| n <= Self::MAX_NODES)
            .ok_or_else(|| {
                Error::Unsupported(format!(
                    "the GPU kernels take grids of up to {} nodes, not {dims:?}",
                    Self::MAX_NODES
                ))
            })?;
        Ok(GridShape {
            w: dims[0] as u32,
            h: dims[1] as u32,
            d: dims[2] as u32,
            n: n as u32,
            deg: conn.degree() as u32,
            is3d: conn.is_3d() as u32,
        })
    }

    /// The number of nodes.
    pub fn num_nodes(&self) -> usize {
        self.n as usize
    }
}

/// Device bytes per node of the `cuda-grid` solver for a connectivity, at its peak: one `i32`
/// residual capacity per direction, the source and sink capacities (`i32` each; the sink array
/// becomes the sink residual and the source array is freed after the start), the excess (`i64`)
/// and the label (`u32`). Tile worklists add 8 bytes per tile (a few per thousand nodes). Whoever
/// builds a [`DeviceGrid`] for the solver sizes its memory check by it.
///
/// | connectivity | N4 | N8 | N6 | N26 |
/// |---|---|---|---|---|
/// | bytes per node | 36 | 52 | 44 | 124 |
///
/// ```
/// use segcut::graph::Connectivity;
/// use segcut::cuda::grid_bytes_per_node;
/// assert_eq!(grid_bytes_per_node(Connectivity::N4), 36);
/// assert_eq!(grid_bytes_per_node(Connectivity::N26), 124);
/// ```
pub fn grid_bytes_per_node(conn: Connectivity) -> usize {
    4 * conn.degree() + 4 + 4 + 8 + 4
}

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

/// Host waits (stream synchronisations and blocking downloads) of the whole process.
static HOST_WAITS: AtomicU64 = AtomicU64::new(0);
/// Device allocations of the whole process.
static DEVICE_ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// The calling thread's share of the two counters: what a segmentation's phases report
    /// (other threads' GPU work, a batch's other workers or tests running beside, stays out).
    static ON_THIS_THREAD: Cell<DeviceCounts> = const { Cell::new(DeviceCounts::ZERO) };
}

/// How often the host waited for a stream, and how many device buffers were allocated: the
/// process's ([`host_waits`], [`device_allocations`]) or the calling thread's
/// ([`DeviceCounts::on_this_thread`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct DeviceCounts {
    /// Stream synchronisations and blocking device → host copies (each is one round trip: the
    /// host stops until the device has finished what was queued before it).
    pub host_waits: u64,
    /// Device buffers allocated (`cuMemAlloc`), kept buffers reused not counted.
    pub device_allocations: u64,
}

impl DeviceCounts {
    /// None of either.
    pub const ZERO: DeviceCounts = DeviceCounts {
        host_waits: 0,
        device_allocations: 0,
    };

    /// The counts of the calling thread so far (every GPU call of the library counts on the
    /// thread that makes it).
    pub fn on_this_thread() -> DeviceCounts {
        ON_THIS_THREAD.with(Cell::get)
    }

    /// What was counted since `before` (an earlier reading of the same thread).
    pub fn since(self, before: DeviceCounts) -> DeviceCounts {
        DeviceCounts {
            host_waits: self.host_waits.saturating_sub(before.host_waits),
            device_allocations: self
                .device_allocations
                .saturating_sub(before.device_allocations),
        }
    }

    /// Both counts added.
    pub fn plus(self, o: DeviceCounts) -> DeviceCounts {
        DeviceCounts {
            host_waits: self.host_waits + o.host_waits,
            device_allocations: self.device_allocations + o.device_allocations,
        }
    }
}

/// How many times the process's host has waited for a stream so far (every synchronisation and
/// blocking download of the library goes through one counting helper here).
pub fn host_waits() -> u64 {
    HOST_WAITS.load(Relaxed)
}

/// How many device buffers the process has allocated so far (every allocation of the library
/// goes through this module's zeroing or uploading helpers).
pub fn device_allocations() -> u64 {
    DEVICE_ALLOCATIONS.load(Relaxed)
}

/// Counts one host wait (process and thread).
fn count_wait() {
    count(&HOST_WAITS, |c| c.host_waits += 1);
}

/// Counts one device allocation (process and thread).
fn count_allocation() {
    count(&DEVICE_ALLOCATIONS, |c| c.device_allocations += 1);
}

/// Adds one to the process's `total` and, with `bump`, to the thread's counts.
fn count(total: &AtomicU64, bump: impl FnOnce(&mut DeviceCounts)) {
    total.fetch_add(1, Relaxed);
    ON_THIS_THREAD.with(|c| {
        let mut v = c.get();
        bump(&mut v);
        c.set(v);
    });
}

/// Waits for everything queued on `stream`: the one function every host wait of the library
/// goes through, counted ([`host_waits`]).
pub(crate) fn sync(stream: &Arc<CudaStream>) -> Result<()> {
    count_wait();
    stream.synchronize().call("cuStreamSynchronize")
}

/// Waits for `event` (recorded on a stream) unless it has completed already: a host wait
/// (counted) only when it had not.
pub(crate) fn wait_for(event: &cudarc::driver::CudaEvent) -> Result<()> {
    if event.try_is_complete().call("cuEventQuery")? {
        return Ok(());
    }
    count_wait();
    event.synchronize().call("cuEventSynchronize")
}

/// Copies `src` into the pageable host slice `dst` and waits for it: one host wait.
pub(crate) fn copy_to_host<T: DeviceRepr>(
    stream: &Arc<CudaStream>,
    src: &cudarc::driver::CudaView<'_, T>,
    dst: &mut [T],
    what: &str,
) -> Result<()> {
    stream
        .memcpy_dtoh(src, dst)
        .call(&format!("cuMemcpyDtoH ({what})"))?;
    sync(stream)
}

/// A device buffer brought to the host (waits for the copy).
pub(crate) fn download<T: DeviceRepr + Default + Clone>(
    stream: &Arc<CudaStream>,
    buf: &CudaSlice<T>,
    what: &str,
) -> Result<Vec<T>> {
    let v = stream
        .clone_dtoh(buf)
        .call(&format!("cuMemcpyDtoH ({what})"))?;
    sync(stream)?;
    Ok(v)
}

/// The first `N` entries of a small device buffer (counters, rings), waiting for the copy.
pub(crate) fn read_words<const N: usize>(
    stream: &Arc<CudaStream>,
    buf: &CudaSlice<u32>,
    what: &str,
) -> Result<[u32; N]> {
    let mut out = [0u32; N];
    stream
        .memcpy_dtoh(&buf.slice(..N), &mut out[..])
        .call(&format!("cuMemcpyDtoH ({what})"))?;
    sync(stream)?;
    Ok(out)
}

/// A new device buffer of `len` zeros (at least one entry: the driver refuses empty ones).
pub(crate) fn zeros<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    len: usize,
    what: &str,
) -> Result<CudaSlice<T>> {
    count_allocation();
    stream
        .alloc_zeros::<T>(len.max(1))
        .call(&format!("cuMemAlloc ({what})"))
}

/// A new device buffer holding `data` (one zero when it is empty: the driver refuses empty
/// buffers). The copy is queued: keep `data` alive until the stream is synchronised.
pub(crate) fn upload<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    data: &[T],
    what: &str,
) -> Result<CudaSlice<T>> {
    if data.is_empty() {
        return zeros(stream, 1, what);
    }
    count_allocation();
    stream
        .clone_htod(data)
        .call(&format!("cuMemcpyHtoD ({what})"))
}

/// Sets a buffer to zeros (queued).
pub(crate) fn clear<T: DeviceRepr + ValidAsZeroBits>(
    stream: &Arc<CudaStream>,
    buf: &mut CudaSlice<T>,
) -> Result<()> {
    stream.memset_zeros(buf).call("cuMemsetD8Async")
}

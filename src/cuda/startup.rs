//! What a process pays before its first kernel runs: the driver and context, the kernel module
//! (from the disk cache or NVRTC), the first launch. `segcut bench --startup` runs
//! [`first_kernel`] in fresh processes, with an empty and with a filled cache.

use std::time::{Duration, Instant};

use super::launch::grid_pr::GridPr;
use super::runtime::{gpu_at, gpu_initialised, Call, ModuleOrigin};
use super::{device, Device, Gpu};
use crate::graph::Connectivity;
use crate::Result;

/// The steps of a process's first kernel launch, each timed.
#[derive(Clone, Debug, PartialEq)]
pub struct FirstKernel {
    /// Loading the driver, finding the device, creating the primary context ([`Gpu::init_time`];
    /// zero when the GPU was set up before the call).
    pub context: Duration,
    /// Getting `grid_pr`'s module: a cubin from the disk cache, or an NVRTC compile.
    pub module: Duration,
    /// Where the module came from.
    pub origin: ModuleOrigin,
    /// Looking up the kernels, making a stream and three counters, launching one kernel
    /// (`build_list` over no tiles) and waiting for it.
    pub launch: Duration,
    /// The whole call.
    pub total: Duration,
}

/// Sets up `device` (if this process has not yet), loads the `grid_pr` kernels and launches one,
/// timing each step: the fixed cost every solve of a fresh process pays first.
///
/// ```no_run
/// use segcut::cuda::{first_kernel, Device};
/// let t = first_kernel(Device::new(0)).unwrap(); // an error without a GPU
/// let _steps = (t.context, t.module, t.origin); // what the CLI's `bench --startup` prints
/// ```
pub fn first_kernel(device: Device) -> Result<FirstKernel> {
    let t0 = Instant::now();
    let fresh = !gpu_initialised(device.ordinal());
    let g: &Gpu = gpu_at(device.ordinal())?;
    let context = if fresh { g.init_time } else { Duration::ZERO };
    g.bind()?;
    let t1 = Instant::now();
    let (_, origin) = g.module_with_origin("grid_pr")?;
    let module = t1.elapsed();
    let t2 = Instant::now();
    let k = GridPr::load(g, Connectivity::N4)?;
    let stream = g.ctx.new_stream().call("cuStreamCreate")?;
    let mut flags = device::zeros::<u32>(&stream, 1, "tile flags")?;
    let mut list = device::zeros::<u32>(&stream, 1, "tile list")?;
    let mut count = device::zeros::<u32>(&stream, 1, "counter")?;
    // SAFETY: no tiles: the kernel reads and writes nothing past the three one-entry buffers.
    unsafe { k.build_list(&stream, 0, &mut flags, &mut list, &mut count)? };
    device::sync(&stream)?;
    Ok(FirstKernel {
        context,
        module,
        origin,
        launch: t2.elapsed(),
        total: t0.elapsed(),
    })
}

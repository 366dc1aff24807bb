//! What a segmentation keeps between calls, and what a process can set up before its first
//! image arrives.
//!
//! [`warm_up`] creates a GPU's context and loads the segmentation's kernel modules; the command
//! line runs it on a thread of its own at process start so that it overlaps decoding the image,
//! and a one-shot run pays for it once instead of on top.

use std::time::{Duration, Instant};

use crate::cuda::Device;
use crate::Result;

/// The kernel files a GPU segmentation runs (the graph build and the grid solver).
const SEGMENT_KERNELS: [&str; 2] = ["seg_energy", "grid_pr"];

/// Creates `device`'s context and loads the segmentation's kernels (from the process, the disk
/// cache, else NVRTC), returning how long that took. Later users of the device find both ready;
/// a caller that needs them while this runs on another thread waits for it instead of doing
/// the work twice. An [`Error::Unsupported`](crate::Error::Unsupported) when the device is not
/// usable (the segmentation then decides on its own, as without a warm-up).
///
/// ```
/// use segcut::cuda::Device;
/// // Start the GPU's set-up while the image is read; without a GPU it says why.
/// let setup = std::thread::spawn(|| segcut::segment::session::warm_up(Device::new(0)));
/// let _ = setup.join().unwrap();
/// ```
pub fn warm_up(device: Device) -> Result<Duration> {
    let t = Instant::now();
    let gpu = device.gpu()?;
    for name in SEGMENT_KERNELS {
        gpu.module(name)?;
    }
    Ok(t.elapsed())
}

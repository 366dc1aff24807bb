//! Which GPU a piece of work runs on, said explicitly: [`Device`], a cheap copyable handle to one
//! GPU (its driver ordinal; the context and the loaded kernel modules are set up once per process
//! and device, on first use), and [`Session`], one stream on that device with the buffers a solver
//! keeps between solves of the same size and a pinned host staging area for read-backs.
//!
//! Every GPU builder and solver takes its device from its caller (the solve options, a batch
//! worker's device, a stereo pass); nothing in the library picks a device behind the caller's
//! back.
//!
//! ```
//! use segcut::cuda::Device;
//! let dev = Device::new(0);
//! match dev.unavailable_reason() {
//!     None => println!("solving on {}", dev.gpu().unwrap().name),
//!     Some(why) => println!("{dev}: {why}"),
//! }
//! ```

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use cudarc::driver::{CudaSlice, CudaStream, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};

use super::runtime::{gpu_at, Call, Gpu};
use crate::{Error, Result};

/// One GPU, by its driver ordinal (0 is the first device `CUDA_VISIBLE_DEVICES` leaves
/// visible). Copying it is free; [`Device::gpu`] sets the device up on first use (driver,
/// primary context, device facts) and every handle to the same ordinal shares that set-up and
/// its loaded kernel modules. The default is device 0.
///
/// ```
/// use segcut::cuda::Device;
/// let d = Device::new(1);
/// assert_eq!(d.ordinal(), 1);
/// assert_eq!(d.to_string(), "cuda:1");
/// assert_eq!(Device::default(), Device::new(0));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    ordinal: usize,
}

impl Device {
    /// The GPU with driver ordinal `ordinal`; nothing is set up until it is used.
    pub const fn new(ordinal: usize) -> Self {
        Device { ordinal }
    }

    /// The driver ordinal.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The device's set-up (context, name, architecture, modules), made on first use; an
    /// [`Error::Unsupported`] naming the reason when the device is not usable. The context is
    /// made current on the calling thread (servers and batch workers solve from many threads).
    pub fn gpu(&self) -> Result<&'static Gpu> {
        let g = gpu_at(self.ordinal)?;
        g.bind()?;
        Ok(g)
    }

    /// Whether the device is usable: driver, device and NVRTC all present.
    pub fn is_available(&self) -> bool {
        gpu_at(self.ordinal).is_ok()
    }

    /// Why the device is not usable (`None` when it is): one line for the user.
    pub fn unavailable_reason(&self) -> Option<String> {
        gpu_at(self.ordinal).err().map(|e| match e {
            Error::Unsupported(s) => s,
            other => other.to_string(),
        })
    }

    /// A new [`Session`] on this device.
    pub fn session(&self) -> Result<Session> {
        Session::new(*self)
    }
}

/// `cuda:i`, as the batch summary and the messages name devices.
impl fmt::Display for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cuda:{}", self.ordinal)
    }
}

/// A buffer kept by a [`Session`] for the next solve: its name, element type and length say
/// which request it answers.
struct Kept {
    what: &'static str,
    len: usize,
    bytes: usize,
    buf: Box<dyn Any + Send>,
}

/// One stream of work on a [`Device`], held across solves: every launch and copy of a solver
/// that owns the session goes to its stream (so they are ordered without events), device buffers
/// a solver hands back are reused by its next solve that asks for the same name, type and
/// length, and read-backs go through a pinned host buffer instead of a pageable one. Several sessions on one device run
/// concurrently.
///
/// ```no_run
/// use segcut::cuda::Device;
/// let mut s = Device::new(0).session().unwrap(); // an error without a GPU
/// println!("{} on {}", s.device(), s.gpu().name);
/// ```
pub struct Session {
    device: Device,
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    kept: Vec<Kept>,
    staging: Option<PinnedHostSlice<u8>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("device", &self.device)
            .field(
                "kept",
                &self.kept.iter().map(|k| k.what).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Session {
    /// A session on `device`: its set-up (first use only) and a new stream.
    pub fn new(device: Device) -> Result<Self> {
        let gpu = device.gpu()?;
        let stream = gpu.ctx.new_stream().call("cuStreamCreate")?;
        Ok(Session {
            device,
            gpu,
            stream,
            kept: Vec::new(),
            staging: None,
        })
    }

    /// The device.
    pub fn device(&self) -> Device {
        self.device
    }

    /// The device's set-up: context, name, modules.
    pub fn gpu(&self) -> &'static Gpu {
        self.gpu
    }

    /// The session's stream.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Makes the device's context current on the calling thread.
    pub fn bind(&self) -> Result<()> {
        self.gpu.bind()
    }

    /// A device buffer of `len` elements for `what`: the one kept under that name, type and
    /// length when there is one (its contents are what the last user left: callers initialise
    /// it), else a new zeroed one. At least one element (the driver refuses empty buffers).
    pub(crate) fn take<T: DeviceRepr + ValidAsZeroBits + 'static>(
        &mut self,
        what: &'static str,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        let len = len.max(1);
        let hit = self
            .kept
            .iter()
            .position(|k| k.what == what && k.len == len && k.buf.as_ref().is::<CudaSlice<T>>());
        if let Some(i) = hit {
            let k = self.kept.swap_remove(i);
            if let Ok(b) = k.buf.downcast::<CudaSlice<T>>() {
                return Ok(*b);
            }
        }
        super::zeros(&self.stream, len, what)
    }

    /// Hands a buffer back for the next solve of the same size (see [`Session::take`]). A
    /// buffer kept earlier under the same name is freed: a session keeps one per name.
    pub(crate) fn keep<T: DeviceRepr + 'static>(&mut self, what: &'static str, buf: CudaSlice<T>) {
        self.kept.retain(|k| k.what != what);
        self.kept.push(Kept {
            what,
            len: buf.len(),
            bytes: buf.num_bytes(),
            buf: Box::new(buf),
        });
    }

    /// The length of the buffer kept for `what`, if one is.
    pub(crate) fn kept_len(&self, what: &str) -> Option<usize> {
        self.kept.iter().find(|k| k.what == what).map(|k| k.len)
    }

    /// Frees every kept buffer (another size is coming, or memory is short).
    pub fn release(&mut self) {
        self.kept.clear();
    }

    /// Device bytes the kept buffers hold.
    pub fn kept_bytes(&self) -> usize {
        self.kept.iter().map(|k| k.bytes).sum()
    }

    /// A pinned host buffer of exactly `bytes` bytes (at least one) for read-backs on this
    /// session's stream, kept between calls and made again when another size is asked for.
    /// Exactly: a copy into it moves its whole length. Copies into pinned memory run at full
    /// bus speed and need no staging copy by the driver.
    pub(crate) fn staging(&mut self, bytes: usize) -> Result<&mut PinnedHostSlice<u8>> {
        let bytes = bytes.max(1);
        if self.staging.as_ref().is_none_or(|s| s.len() != bytes) {
            self.staging = None;
            // SAFETY: the buffer is only read after a copy into it has been waited for; flags 0
            // (not write-combined) because the host reads it.
            let s = unsafe { self.gpu.ctx.alloc_pinned_with_flags::<u8>(bytes, 0) }
                .call("cuMemHostAlloc (staging)")?;
            self.staging = Some(s);
        }
        Ok(self.staging.as_mut().expect("set above"))
    }
}

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
//! let line = match dev.unavailable_reason() {
//!     None => format!("solving on {}", dev.gpu().unwrap().name),
//!     Some(why) => format!("{dev}: {why}"),
//! };
//! assert!(!line.is_empty());
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
///
/// A handle also says how many solvers run on the GPU at once ([`Device::shared_by`]; 1 unless
/// said): a batch with several workers per GPU gives each worker its share, and a solver sizes
/// its cooperative launches to it, so that the workers' persistent solves run side by side
/// instead of one after another (a cooperative launch that asks for every resident block cannot
/// start until the one before it has ended). Ordinary launches keep every resident block: the
/// GPU interleaves several streams' blocks as they retire.
///
/// ```
/// use segcut::cuda::Device;
/// let d = Device::new(1);
/// assert_eq!(d.ordinal(), 1);
/// assert_eq!(d.to_string(), "cuda:1");
/// assert_eq!(Device::default(), Device::new(0));
/// assert_eq!((d.share(), d.shared_by(4).share(), d.shared_by(0).share()), (1, 4, 1));
/// assert_eq!(d.shared_by(4).ordinal(), 1);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Device {
    ordinal: usize,
    share: u32,
}

impl Default for Device {
    fn default() -> Self {
        Device::new(0)
    }
}

impl Device {
    /// The GPU with driver ordinal `ordinal`; nothing is set up until it is used.
    pub const fn new(ordinal: usize) -> Self {
        Device { ordinal, share: 1 }
    }

    /// The same GPU, used by `solvers` solvers at once (at least 1): each sizes its
    /// cooperative launches to `1 / solvers` of the GPU.
    pub const fn shared_by(self, solvers: u32) -> Self {
        Device {
            ordinal: self.ordinal,
            share: if solvers == 0 { 1 } else { solvers },
        }
    }

    /// How many solvers share the GPU at once (1 unless [`Device::shared_by`] said otherwise).
    pub fn share(&self) -> u32 {
        self.share
    }

    /// `blocks` (a launch that fills the GPU) cut to this handle's share, at least one.
    pub(crate) fn share_of(&self, blocks: u32) -> u32 {
        (blocks / self.share).max(1)
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

/// The buffers a [`Session`] keeps, one per name, and how many requests they could not answer
/// (each such miss is a device allocation). Knows nothing of CUDA: the buffers are any value.
#[derive(Default)]
struct KeptBuffers {
    kept: Vec<Kept>,
    misses: usize,
}

impl KeptBuffers {
    /// The buffer kept under `what` with `len` elements of type `B`, if one is; else counts a
    /// miss.
    fn find<B: Any>(&mut self, what: &str, len: usize) -> Option<B> {
        let hit = self
            .kept
            .iter()
            .position(|k| k.what == what && k.len == len && k.buf.as_ref().is::<B>());
        match hit.map(|i| self.kept.swap_remove(i).buf.downcast::<B>()) {
            Some(Ok(b)) => Some(*b),
            _ => {
                self.misses += 1;
                None
            }
        }
    }

    /// Keeps `buf` under `what`, freeing what was kept under that name before.
    fn put<B: Any + Send>(&mut self, what: &'static str, len: usize, bytes: usize, buf: B) {
        self.kept.retain(|k| k.what != what);
        self.kept.push(Kept {
            what,
            len,
            bytes,
            buf: Box::new(buf),
        });
    }
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
/// let _line = format!("{} on {}", s.device(), s.gpu().name);
/// ```
pub struct Session {
    device: Device,
    gpu: &'static Gpu,
    stream: Arc<CudaStream>,
    kept: KeptBuffers,
    staging: Option<PinnedHostSlice<u8>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("device", &self.device)
            .field(
                "kept",
                &self.kept.kept.iter().map(|k| k.what).collect::<Vec<_>>(),
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
            kept: KeptBuffers::default(),
            staging: None,
        })
    }

    /// Another session on this one's stream, with buffers of its own: work queued by either is
    /// ordered without events (the segmentation's graph build and its solver share a stream this
    /// way, so the solver's buffers can be kept from one image to the next).
    pub fn sibling(&self) -> Session {
        Session {
            device: self.device,
            gpu: self.gpu,
            stream: self.stream.clone(),
            kept: KeptBuffers::default(),
            staging: None,
        }
    }

    /// How many device buffers the session has had to allocate so far (requests for a buffer
    /// that none it kept answered): a caller that reuses its buffers sees this stay put.
    pub fn allocations(&self) -> usize {
        self.kept.misses
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
        match self.kept.find::<CudaSlice<T>>(what, len) {
            Some(b) => Ok(b),
            None => super::zeros(&self.stream, len, what),
        }
    }

    /// [`Session::take`], set to zeros (queued on the session's stream).
    pub(crate) fn take_zeroed<T: DeviceRepr + ValidAsZeroBits + 'static>(
        &mut self,
        what: &'static str,
        len: usize,
    ) -> Result<CudaSlice<T>> {
        let mut b = self.take::<T>(what, len)?;
        super::clear(&self.stream, &mut b)?;
        Ok(b)
    }

    /// [`Session::take`] holding a copy of `data` (queued: keep `data` alive until the stream is
    /// synchronised). Empty data gives a buffer of one zero.
    pub(crate) fn take_upload<T: DeviceRepr + ValidAsZeroBits + 'static>(
        &mut self,
        what: &'static str,
        data: &[T],
    ) -> Result<CudaSlice<T>> {
        if data.is_empty() {
            return self.take_zeroed(what, 1);
        }
        let mut b = self.take::<T>(what, data.len())?;
        self.stream
            .memcpy_htod(data, &mut b)
            .call(&format!("cuMemcpyHtoD ({what})"))?;
        Ok(b)
    }

    /// Hands a buffer back for the next solve of the same size (see [`Session::take`]). A
    /// buffer kept earlier under the same name is freed: a session keeps one per name.
    pub(crate) fn keep<T: DeviceRepr + 'static>(&mut self, what: &'static str, buf: CudaSlice<T>) {
        let (len, bytes) = (buf.len(), buf.num_bytes());
        self.kept.put(what, len, bytes, buf);
    }

    /// The length of the buffer kept for `what`, if one is.
    pub(crate) fn kept_len(&self, what: &str) -> Option<usize> {
        self.kept
            .kept
            .iter()
            .find(|k| k.what == what)
            .map(|k| k.len)
    }

    /// Frees every kept buffer (another size is coming, or memory is short).
    pub fn release(&mut self) {
        self.kept.kept.clear();
    }

    /// Device bytes the kept buffers hold.
    pub fn kept_bytes(&self) -> usize {
        self.kept.kept.iter().map(|k| k.bytes).sum()
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

#[cfg(test)]
mod tests {
    use super::KeptBuffers;

    /// The kept-buffer logic of a session, with host vectors standing in for device buffers:
    /// the same name, type and length is answered from what was kept (no allocation); another
    /// length, type or name is a miss.
    #[test]
    fn kept_buffers_answer_the_same_request_and_count_the_others() {
        let mut kept = KeptBuffers::default();
        assert!(kept.find::<Vec<u8>>("image", 100).is_none());
        assert_eq!(kept.misses, 1);
        kept.put("image", 100, 100, vec![7u8; 100]);
        kept.put("seeds", 100, 100, vec![1u8; 100]);
        // The second image of the same size: both answered, nothing allocated.
        let image = kept.find::<Vec<u8>>("image", 100).expect("kept");
        assert_eq!(image, vec![7u8; 100]);
        assert!(kept.find::<Vec<u8>>("seeds", 100).is_some());
        assert_eq!(kept.misses, 1);
        // Taken buffers are gone until handed back.
        assert!(kept.find::<Vec<u8>>("image", 100).is_none());
        assert_eq!(kept.misses, 2);
        kept.put("image", 100, 100, image);
        // Another size, another type: misses, and the kept buffer stays for its own size.
        assert!(kept.find::<Vec<u8>>("image", 50).is_none());
        assert!(kept.find::<Vec<i32>>("image", 100).is_none());
        assert_eq!(kept.misses, 4);
        assert!(kept.find::<Vec<u8>>("image", 100).is_some());
        // One per name: keeping a new one frees the old.
        kept.put("image", 100, 100, vec![0u8; 100]);
        kept.put("image", 200, 200, vec![0u8; 200]);
        assert_eq!(kept.kept.len(), 1);
        assert!(kept.find::<Vec<u8>>("image", 100).is_none());
    }
}

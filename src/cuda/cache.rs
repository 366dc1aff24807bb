//! The kernel cache on disk: cubins keyed by everything that decides their bytes, so that a new
//! process loads machine code instead of running NVRTC.
//!
//! An entry is `NAME-ARCH-KEY.cubin` in the cache folder ([`KernelCache`]): a header (magic, key,
//! payload length, payload checksum) and the cubin. The key ([`cache_key`]) is a 64-bit FNV-1a
//! hash of the kernel source, the shared header, the architecture, the NVRTC version, the driver
//! version and the compile options. The cache is best effort: a missing, unreadable, truncated,
//! corrupt or foreign entry is a miss (compiled again and rewritten), and a failed write is
//! ignored. Writes go to a temporary file in the same folder, then `rename`, so a reader never
//! sees half an entry and concurrent writers of one entry do no harm.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

#[cfg(test)]
mod tests;

/// Where compiled kernels are kept between processes.
///
/// | value | folder | from the environment |
/// |---|---|---|
/// | [`Default`](KernelCache::Default) | `$XDG_CACHE_HOME/segcut`, else `~/.cache/segcut` | neither variable set |
/// | [`Dir`](KernelCache::Dir) | the given folder | `SEGCUT_CACHE_DIR=<folder>` |
/// | [`Off`](KernelCache::Off) | none: NVRTC compiles in every process | `SEGCUT_KERNEL_CACHE=0` |
///
/// A process uses [`KernelCache::from_env`] unless [`set_kernel_cache`] chose otherwise before
/// its first kernel was loaded.
///
/// ```
/// use segcut::cuda::KernelCache;
/// let env = |k: &str| (k == "SEGCUT_CACHE_DIR").then(|| "project/kernel-cache".into());
/// assert_eq!(KernelCache::from_env_with(env), KernelCache::Dir("project/kernel-cache".into()));
/// assert_eq!(KernelCache::Off.dir(), None);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum KernelCache {
    /// The user's cache folder: `$XDG_CACHE_HOME/segcut`, else `$HOME/.cache/segcut`.
    #[default]
    Default,
    /// A folder of the caller's choosing (created on the first write).
    Dir(PathBuf),
    /// No disk cache.
    Off,
}

/// The variable that names the cache folder ([`KernelCache::Dir`]).
pub const CACHE_DIR_VAR: &str = "SEGCUT_CACHE_DIR";
/// The variable that turns the cache off when `0` ([`KernelCache::Off`]).
pub const CACHE_SWITCH_VAR: &str = "SEGCUT_KERNEL_CACHE";

impl KernelCache {
    /// The setting the environment asks for (see the type's table).
    pub fn from_env() -> Self {
        Self::from_env_with(|k| std::env::var_os(k))
    }

    /// [`KernelCache::from_env`] with the environment given as a function. Empty values count as
    /// unset; `SEGCUT_KERNEL_CACHE=0` wins over a folder.
    pub fn from_env_with(env: impl Fn(&str) -> Option<OsString>) -> Self {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        if set(CACHE_SWITCH_VAR).is_some_and(|v| v == "0") {
            return KernelCache::Off;
        }
        match set(CACHE_DIR_VAR) {
            Some(d) => KernelCache::Dir(d.into()),
            None => KernelCache::Default,
        }
    }

    /// The folder of the cache, `None` when it is off or no folder can be named.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir_with(|k| std::env::var_os(k))
    }

    /// [`KernelCache::dir`] with the environment (`XDG_CACHE_HOME`, `HOME`) given as a function.
    pub fn dir_with(&self, env: impl Fn(&str) -> Option<OsString>) -> Option<PathBuf> {
        let set = |k: &str| env(k).filter(|v| !v.is_empty());
        match self {
            KernelCache::Off => None,
            KernelCache::Dir(d) => Some(d.clone()),
            KernelCache::Default => set("XDG_CACHE_HOME")
                .map(|d| PathBuf::from(d).join("segcut"))
                .or_else(|| set("HOME").map(|h| PathBuf::from(h).join(".cache").join("segcut"))),
        }
    }
}

static SETTING: Mutex<Option<KernelCache>> = Mutex::new(None);

/// Chooses the kernel cache of this process, instead of [`KernelCache::from_env`]. Modules
/// already loaded stay loaded: call it before the first GPU solve.
///
/// ```
/// segcut::cuda::set_kernel_cache(segcut::cuda::KernelCache::Off);
/// assert_eq!(segcut::cuda::kernel_cache(), segcut::cuda::KernelCache::Off);
/// ```
pub fn set_kernel_cache(cache: KernelCache) {
    *SETTING.lock().unwrap_or_else(|p| p.into_inner()) = Some(cache);
}

/// The kernel cache this process uses: what [`set_kernel_cache`] chose, else the environment's.
pub fn kernel_cache() -> KernelCache {
    let chosen = SETTING.lock().unwrap_or_else(|p| p.into_inner()).clone();
    chosen.unwrap_or_else(KernelCache::from_env)
}

/// FNV-1a, 64 bits: stable across processes, builds and Rust versions (std's hasher is not
/// promised to be), which is all a cache key needs.
fn fnv1a(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// What a compiled kernel's bytes depend on: the inputs of [`cache_key`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheInputs<'a> {
    /// The kernel file's source.
    pub source: &'a str,
    /// The shared header's text ([`COMMON_HEADER`](super::COMMON_HEADER)).
    pub header: &'a str,
    /// The architecture, e.g. `sm_90`.
    pub arch: &'a str,
    /// NVRTC's `(major, minor)` version.
    pub nvrtc: (i32, i32),
    /// The driver's version as `cuDriverGetVersion` reports it (13000 for 13.0): a new driver
    /// may refuse or mis-run an older compiler's cubin, so it starts a new entry.
    pub driver: i32,
    /// The compile options ([`compile_options`](super::compile_options)).
    pub options: &'a [String],
}

/// The cache key of a compilation: every input, each field length-prefixed so that no two
/// inputs run together.
///
/// ```
/// use segcut::cuda::{cache_key, CacheInputs};
/// let opts = segcut::cuda::compile_options("grid_pr", "sm_90");
/// let a = CacheInputs { source: "k", header: "h", arch: "sm_90", nvrtc: (13, 0), driver: 13000, options: &opts };
/// assert_ne!(cache_key(&a), cache_key(&CacheInputs { driver: 13010, ..a }));
/// ```
pub fn cache_key(inputs: &CacheInputs<'_>) -> u64 {
    let mut h = FNV_OFFSET;
    let mut field = |bytes: &[u8]| {
        h = fnv1a(h, &(bytes.len() as u64).to_le_bytes());
        h = fnv1a(h, bytes);
    };
    field(inputs.source.as_bytes());
    field(inputs.header.as_bytes());
    field(inputs.arch.as_bytes());
    field(&inputs.nvrtc.0.to_le_bytes());
    field(&inputs.nvrtc.1.to_le_bytes());
    field(&inputs.driver.to_le_bytes());
    for o in inputs.options {
        field(o.as_bytes());
    }
    h
}

/// Where the cubin of kernel file `name` for `arch` under `key` lives in `dir`.
pub fn entry_path(dir: &Path, name: &str, arch: &str, key: u64) -> PathBuf {
    dir.join(format!("{name}-{arch}-{key:016x}.cubin"))
}

/// First bytes of a cache entry; then the key, the payload's length and its checksum (all `u64`
/// little-endian), then the payload.
const ENTRY_MAGIC: &[u8; 8] = b"SEGCUT1\0";
const ENTRY_HEADER: usize = 8 + 3 * 8;

/// The payload of the cache entry at `path` if it is whole and was written under `key`; `None`
/// for a missing, unreadable, truncated, corrupt or foreign file.
pub fn read_entry(path: &Path, key: u64) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    if bytes.len() < ENTRY_HEADER || &bytes[..8] != ENTRY_MAGIC {
        return None;
    }
    let word = |i: usize| u64::from_le_bytes(bytes[8 + 8 * i..16 + 8 * i].try_into().unwrap());
    let payload = &bytes[ENTRY_HEADER..];
    if word(0) != key || word(1) != payload.len() as u64 || word(2) != fnv1a(FNV_OFFSET, payload) {
        return None;
    }
    Some(payload.to_vec())
}

/// Writes a cache entry atomically: to a temporary file in the same folder (created if needed),
/// then renamed over `path`.
pub fn write_entry(path: &Path, key: u64, payload: &[u8]) -> std::io::Result<()> {
    let mut data = Vec::with_capacity(ENTRY_HEADER + payload.len());
    data.extend_from_slice(ENTRY_MAGIC);
    data.extend_from_slice(&key.to_le_bytes());
    data.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    data.extend_from_slice(&fnv1a(FNV_OFFSET, payload).to_le_bytes());
    data.extend_from_slice(payload);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    crate::io::write_atomic(path, |w| std::io::Write::write_all(w, &data)).map_err(|e| match e {
        crate::Error::Io { source, .. } => source,
        other => std::io::Error::other(other.to_string()),
    })
}

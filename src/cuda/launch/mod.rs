//! Typed launchers: one struct per kernel file, one method per kernel, each holding the kernel's
//! argument list and its launch shape. They are the only code that calls `launch_builder`; the
//! solvers and the segmentation builder call methods with named, typed arguments.
//!
//! Every launcher is declared once, through [`kernel_file!`], as the kernel's parameter list in
//! Rust types: the macro writes the method that pushes them in that order and a table of the
//! declared names and types, which a unit test (`abi_tests.rs`) compares with the parameter lists
//! of the `extern "C" __global__` functions in `kernels/*.cu`. A swapped, missing or mistyped
//! argument fails in CI, without a GPU.
//!
//! Launchers are `unsafe`: a kernel trusts the sizes and contents of its buffers (a worklist's
//! entries are node numbers below `n`, a table has the entries its index can reach). Each method
//! says what it needs under `# Safety`; the kernel's header in `kernels/*.cu` says which arrays it
//! updates with atomics (`sync:`) and which only it touches (`safe:`).

use cudarc::driver::{CudaSlice, CudaView, CudaViewMut, LaunchArgs, LaunchConfig, PushKernelArg};

use super::GridShape;

pub(crate) mod csr_pr;
pub(crate) mod grid_pr;
pub(crate) mod seg_energy;
pub(crate) mod seg_model;
pub(crate) mod seg_prior;
pub(crate) mod stereo;

#[cfg(test)]
mod abi_tests;

/// Threads per block of every kernel launched per node or per listed item (`BLOCK` in
/// `kernels/common.cuh`, which sizes the block reductions and the tiles' shared arrays by it).
pub const BLOCK: u32 = 256;

/// One thread per item: `n` items in blocks of [`BLOCK`] (at least one block, whose threads past
/// `n` return at once).
pub(crate) fn per_item(n: u32) -> LaunchConfig {
    blocks(n.div_ceil(BLOCK))
}

/// `count` blocks of [`BLOCK`] threads (at least one).
pub(crate) fn blocks(count: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (count.max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// One block of `threads` threads (the kernels that loop on the device with block barriers).
pub(crate) fn one_block(threads: u32) -> LaunchConfig {
    LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (threads, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// How a launcher launches: a plain launch, or a cooperative one (`cuLaunchCooperativeKernel`:
/// every block resident at once, or the launch fails), which kernels with grid-wide barriers
/// need.
pub(crate) struct Launch {
    cfg: LaunchConfig,
    cooperative: bool,
}

impl From<LaunchConfig> for Launch {
    fn from(cfg: LaunchConfig) -> Self {
        Launch {
            cfg,
            cooperative: false,
        }
    }
}

/// `count` blocks of [`BLOCK`] threads, launched cooperatively; `count` must not pass what the
/// device holds at once (occupancy × multiprocessors).
pub(crate) fn cooperative(count: u32) -> Launch {
    Launch {
        cfg: blocks(count),
        cooperative: true,
    }
}

impl Launch {
    /// Launches `b` this way.
    ///
    /// # Safety
    /// As `LaunchArgs::launch`: the arguments match the kernel's parameters.
    pub(crate) unsafe fn run(
        self,
        b: &mut LaunchArgs<'_>,
    ) -> std::result::Result<(), cudarc::driver::DriverError> {
        let r = if self.cooperative {
            b.launch_cooperative(self.cfg)
        } else {
            b.launch(self.cfg)
        };
        r.map(|_| ())
    }
}

/// A kernel argument: a value passed by value, or a device buffer passed as its pointer.
pub(crate) trait KernelArg {
    /// Adds the argument to a launch.
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>);
}

macro_rules! value_args {
    ($($t:ty),*) => {$(
        impl KernelArg for $t {
            fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
                b.arg(&*self);
            }
        }
    )*};
}
value_args!(u32, i32, u64, f32, f64, GridShape);

impl<T> KernelArg for &CudaSlice<T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(*self);
    }
}

impl<T> KernelArg for &mut CudaSlice<T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(&mut **self);
    }
}

/// An optional input buffer: its pointer, or a null pointer for `None` (kernels that take an
/// optional array test it against null).
impl<T> KernelArg for Option<&CudaSlice<T>> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        static NULL: u64 = 0;
        match self {
            Some(s) => b.arg(*s),
            None => b.arg(&NULL),
        };
    }
}

impl<T> KernelArg for &CudaView<'_, T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(*self);
    }
}

impl<T> KernelArg for &mut CudaViewMut<'_, T> {
    fn push<'a>(&'a mut self, b: &mut LaunchArgs<'a>) {
        b.arg(&mut **self);
    }
}

/// A kernel as a launcher declares it: its name in the `.cu` file (`{deg}` stands for the
/// connectivity's degree in per-connectivity kernels) and its parameters, names and Rust types
/// as written in the declaration.
#[cfg(test)]
#[derive(Debug)]
pub(crate) struct KernelSignature {
    /// The `extern "C"` name, e.g. `pr_round` or `discharge_n{deg}`.
    pub name: &'static str,
    /// `(name, Rust type)` of each parameter, in order.
    pub params: &'static [(&'static str, &'static str)],
}

/// Declares the launchers of one kernel file: a struct holding its functions, loaded by name
/// from the file's module, and per kernel an `unsafe` method taking the launch's own parameters
/// (in brackets, e.g. a block count), then the kernel's, and launching with the shape after `=>`.
macro_rules! kernel_file {
    (
        $(#[$meta:meta])*
        pub(crate) struct $Name:ident for $file:literal {
            $(
                $(#[$kmeta:meta])*
                fn $kernel:ident = $cname:literal
                    $([$($lp:ident : $lty:ty),* $(,)?])?
                    ($($arg:ident : $ty:ty),* $(,)?) => $cfg:expr;
            )*
        }
    ) => {
        $(#[$meta])*
        pub(crate) struct $Name {
            $($kernel: cudarc::driver::CudaFunction,)*
        }

        impl $Name {
            /// The kernel file in [`KERNELS`](crate::cuda::KERNELS).
            pub(crate) const FILE: &'static str = $file;

            /// Every kernel's declared signature, for the ABI test.
            #[cfg(test)]
            pub(crate) const SIGNATURES: &'static [$crate::cuda::launch::KernelSignature] = &[$(
                $crate::cuda::launch::KernelSignature {
                    name: $cname,
                    params: &[$((stringify!($arg), stringify!($ty))),*],
                },
            )*];

            /// Loads every kernel of the file for this device; `name` turns a declared name into
            /// the one to load (per-connectivity kernels fill in `{deg}`).
            fn load_with(
                gpu: &$crate::cuda::Gpu,
                name: impl Fn(&str) -> String,
            ) -> $crate::Result<Self> {
                use $crate::cuda::runtime::Call;
                let module = gpu.module(Self::FILE)?;
                Ok($Name {$(
                    $kernel: {
                        let n = name($cname);
                        module
                            .load_function(&n)
                            .call(&format!("cuModuleGetFunction ({n})"))?
                    },
                )*})
            }

            $(
                $(#[$kmeta])*
                #[allow(clippy::too_many_arguments)]
                pub(crate) unsafe fn $kernel(
                    &self,
                    stream: &std::sync::Arc<cudarc::driver::CudaStream>,
                    $($($lp: $lty,)*)?
                    $(mut $arg: $ty),*
                ) -> $crate::Result<()> {
                    use $crate::cuda::runtime::Call;
                    use $crate::cuda::launch::KernelArg;
                    let how: $crate::cuda::launch::Launch = ($cfg).into();
                    let mut b = stream.launch_builder(&self.$kernel);
                    $(KernelArg::push(&mut $arg, &mut b);)*
                    how.run(&mut b)
                        .call(concat!("cuLaunchKernel (", stringify!($kernel), ")"))
                }
            )*
        }
    };
}
pub(crate) use kernel_file;

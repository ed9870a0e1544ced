//! The only module of lens-dist with `unsafe` code: whether cudarc can load the CUDA driver and
//! NCCL libraries. cudarc's dynamic loader panics on the first call into a library it cannot
//! find, so every entry point of the NCCL backend asks here first.
#![allow(unsafe_code)]

use std::sync::OnceLock;

/// Whether `libcuda` and `libnccl` can be loaded, probed once per process.
pub(super) fn libraries_present() -> (bool, bool) {
    static PRESENT: OnceLock<(bool, bool)> = OnceLock::new();
    *PRESENT.get_or_init(|| {
        // SAFETY: `is_culib_present` only tries `dlopen` on cudarc's candidate names for the
        // library and drops the handle; loading the CUDA driver or NCCL runs no initialisation
        // code that depends on our state, and no symbol is resolved or called here.
        let cuda = unsafe { cudarc::driver::sys::is_culib_present() };
        // SAFETY: as above, for NCCL's candidate library names.
        let nccl = unsafe { cudarc::nccl::sys::is_culib_present() };
        (cuda, nccl)
    })
}

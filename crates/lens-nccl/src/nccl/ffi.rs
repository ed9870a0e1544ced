//! The only module of lens-nccl with `unsafe` code: the cudarc calls that are `unsafe fn`.
#![allow(unsafe_code)]

use std::sync::Arc;

use cudarc::driver::{
    CudaContext, DriverError, PinnedHostSlice, sys::CU_MEMHOSTALLOC_WRITECOMBINED,
};

/// Whether cudarc finds the CUDA driver library (`libcuda.so`, `libcuda.so.1`, ...).
pub(super) fn driver_library_present() -> bool {
    // SAFETY: `is_culib_present` dlopens each candidate name and closes it again. Loading runs the
    // library's ELF initialisers; libcuda is the library cudarc loads on its first call anyway,
    // and no Rust value depends on anything it initialises.
    unsafe { cudarc::driver::sys::is_culib_present() }
}

/// Whether cudarc finds the NCCL library under a name it tries (`libnccl.so`, ...; not `.so.2`).
pub(super) fn nccl_library_present() -> bool {
    // SAFETY: as for `driver_library_present`: a dlopen/dlclose of the library cudarc would load.
    unsafe { cudarc::nccl::sys::is_culib_present() }
}

/// Page-locked host memory of `len` bytes, zeroed. `for_upload`: write-combined (fast host
/// writes and device reads; slow host reads), for the frame sent; otherwise plain pinned memory
/// for the frame received, which the host reads.
pub(super) fn alloc_pinned_zeroed(
    ctx: &Arc<CudaContext>,
    len: usize,
    for_upload: bool,
) -> Result<PinnedHostSlice<u8>, DriverError> {
    let flags = if for_upload {
        CU_MEMHOSTALLOC_WRITECOMBINED
    } else {
        0
    };
    // SAFETY: `alloc_pinned_with_flags` returns uninitialised memory; it is zeroed below before
    // any reference to it is made, and `u8` has no invalid bit patterns.
    let mut slice = unsafe { ctx.alloc_pinned_with_flags::<u8>(len, flags) }?;
    let ptr = slice.as_mut_ptr()?;
    // SAFETY: `ptr` points to `len` bytes owned by `slice` (just allocated, not shared with any
    // stream yet), valid for writes.
    unsafe { std::ptr::write_bytes(ptr, 0, len) };
    Ok(slice)
}

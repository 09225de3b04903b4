//! How the process hands memory back.
//!
//! Each tick allocates a snapshot's socket list (about 20 MB at 100k sockets) and frees the last
//! one. glibc's malloc raises its mmap threshold after such a free, so the next list comes from
//! the heap and the freed one stays resident: the process would hold two. A fixed threshold keeps
//! big blocks mapped on their own, returned to the kernel the moment they are freed.

/// Blocks at least this big are mapped on their own.
const MMAP_THRESHOLD: i32 = 1 << 20;

/// Applies the policy above. Call once, early; a no-op where the allocator is not glibc's.
pub fn return_big_frees() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    set_threshold();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn set_threshold() {
    // SAFETY: mallopt only changes a malloc tuning parameter; it touches no memory of ours, and
    // a refusal (return 0) leaves the default in place.
    unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD) };
}

/// Hands the heap's free pages back to the kernel. Parquet's encoders free tens of MB at once
/// (a keyframe's, a chunk's compaction: a zstd context per column and row group), in blocks
/// below the mmap threshold, which glibc keeps resident for the next: an exporter beside 10k idle
/// sockets went from 91 to 64 MB when its heap was trimmed by hand. Called once a chunk or its
/// keyframe is written, not per poll. A no-op where the allocator is not glibc's.
pub fn trim() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    trim_heap();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim_heap() {
    // SAFETY: malloc_trim only returns free pages of malloc's own arenas to the kernel (madvise);
    // no allocation of ours moves or is touched.
    unsafe { libc::malloc_trim(0) };
}

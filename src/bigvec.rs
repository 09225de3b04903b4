//! Vectors big enough to be worth huge pages.
//!
//! At 100k sockets a dump's records fill about 48 MB, freshly mapped on every poll: with 4 KiB
//! pages that is 12,000 page faults, which cost as much as parsing the dump. Where transparent
//! huge pages are on "madvise", asking for them turns that into two dozen faults.

/// Below this a vector stays on ordinary pages: it is likely reused from the heap anyway.
const HUGE_MIN_BYTES: usize = 4 << 20;

/// An empty vector with room for `cap` items, on huge pages when that is big enough and the
/// kernel allows it (best effort: the vector works the same either way).
pub fn with_capacity<T>(cap: usize) -> Vec<T> {
    let v = Vec::<T>::with_capacity(cap);
    let bytes = v.capacity() * std::mem::size_of::<T>();
    if bytes >= HUGE_MIN_BYTES {
        advise_huge(v.as_ptr().cast(), bytes);
    }
    v
}

#[allow(unsafe_code)]
fn advise_huge(ptr: *const u8, len: usize) {
    const PAGE: usize = 4096;
    let start = (ptr as usize).next_multiple_of(PAGE);
    let end = (ptr as usize + len) & !(PAGE - 1);
    if end > start {
        // SAFETY: madvise only changes how the kernel backs [start, end), pages of an allocation
        // this process owns; it reads and writes no memory, and failure is harmless.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
}

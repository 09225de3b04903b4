//! The per-CPU counts the programs keep (`BPF_MAP_TYPE_PERCPU_ARRAY` of u64), summed.

use libbpf_rs::{MapCore, MapFlags, MapHandle};

/// Entry `key` of a per-CPU array of counts, summed over CPUs; 0 if it cannot be read.
pub fn percpu_sum(m: &MapHandle, key: u32) -> u64 {
    let Ok(Some(per_cpu)) = m.lookup_percpu(&key.to_ne_bytes(), MapFlags::ANY) else { return 0 };
    per_cpu.iter().filter_map(|v| Some(u64::from_ne_bytes(v.get(..8)?.try_into().ok()?))).sum()
}

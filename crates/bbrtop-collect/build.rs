//! Compiles the collectors' programs (bpf/bbrtop.bpf.c, in this crate beside src/bpf/, which loads
//! them) into a libbpf-rs skeleton in OUT_DIR, only with the `bpf` feature. Nothing is fetched: the
//! kernel types come from the vendored bpf/vmlinux_min.h.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    #[cfg(feature = "bpf")]
    bpf::build();
}

#[cfg(feature = "bpf")]
mod bpf {
    use std::path::PathBuf;

    pub fn build() {
        let dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it")).join("bpf");
        for f in ["bbrtop.bpf.c", "bbrtop.h", "sock_state.h", "sock_record.h", "vmlinux_min.h"] {
            println!("cargo:rerun-if-changed={}", dir.join(f).display());
        }
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
            Ok("x86_64") => "x86",
            Ok("aarch64") => "arm64",
            Ok(other) => panic!("bpf feature: no target arch mapping for {other}"),
            Err(_) => "x86",
        };
        libbpf_cargo::SkeletonBuilder::new()
            .source(dir.join("bbrtop.bpf.c"))
            .clang_args([
                "-I".into(),
                dir.display().to_string(),
                "-D".into(),
                format!("__TARGET_ARCH_{arch}"),
                // The response batches' compare-and-swap (BPF atomics, Linux 5.12; every kernel
                // that loads the socket programs has them).
                "-mcpu=v3".into(),
            ])
            .build_and_generate(out.join("bbrtop.skel.rs"))
            .expect("building the BPF skeleton (clang and libbpf headers are needed)");
    }
}

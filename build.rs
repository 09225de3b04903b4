//! Compiles bpf/bbrtop.bpf.c into a libbpf-rs skeleton in OUT_DIR, only with the `bpf` feature.
//! Nothing is fetched: the kernel types come from the vendored bpf/vmlinux_min.h.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    // The compiler that built us, for bbrtop_build_info (as Go exporters give goversion).
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let version = std::process::Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=BBRTOP_RUSTC_VERSION={version}");
    if std::env::var_os("CARGO_FEATURE_BPF").is_some() {
        bpf::build();
    }
}

#[cfg(feature = "bpf")]
mod bpf {
    use std::path::PathBuf;

    pub fn build() {
        const SRC: &str = "bpf/bbrtop.bpf.c";
        const LOSS: &str = "bpf/lab_loss.bpf.c";
        const REJECT: &str = "bpf/tests/reject.bpf.c";
        for f in
            [SRC, LOSS, REJECT, "bpf/bbrtop.h", "bpf/sock_state.h", "bpf/sock_record.h", "bpf/vmlinux_min.h"]
        {
            println!("cargo:rerun-if-changed={f}");
        }
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        let arch = match std::env::var("CARGO_CFG_TARGET_ARCH").as_deref() {
            Ok("x86_64") => "x86",
            Ok("aarch64") => "arm64",
            Ok(other) => panic!("bpf feature: no target arch mapping for {other}"),
            Err(_) => "x86",
        };
        libbpf_cargo::SkeletonBuilder::new()
            .source(SRC)
            .clang_args(["-I", "bpf", "-D", &format!("__TARGET_ARCH_{arch}")])
            .build_and_generate(out.join("bbrtop.skel.rs"))
            .expect("building the BPF skeleton (clang and libbpf headers are needed)");
        // The lab's loss program uses only UAPI headers; the multiarch include dir has asm/.
        let multiarch =
            format!("/usr/include/{}-linux-gnu", std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default());
        libbpf_cargo::SkeletonBuilder::new()
            .source(LOSS)
            .clang_args(["-I", &multiarch])
            .build_and_generate(out.join("lab_loss.skel.rs"))
            .expect("building the lab's loss program (clang and kernel UAPI headers are needed)");
        // For the tests only: an object the verifier rejects.
        libbpf_cargo::SkeletonBuilder::new()
            .source(REJECT)
            .clang_args(["-I", &multiarch])
            .build_and_generate(out.join("reject.skel.rs"))
            .expect("building the test program the verifier rejects");
    }
}

#[cfg(not(feature = "bpf"))]
mod bpf {
    pub fn build() {}
}

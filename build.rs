//! Compiles the lab's loss program (src/lab/lab_loss.bpf.c), `bbrtop experiment`'s sock_ops
//! program (src/experiment/experiment.bpf.c), each beside the Rust that loads it, and a program the
//! verifier rejects (tests/bpf/reject.bpf.c, for the tests) into libbpf-rs skeletons in OUT_DIR,
//! only with the `bpf` feature; bbrtop's own collectors' programs are built by
//! crates/bbrtop-collect/build.rs, in that crate's bpf/.

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
        const LOSS: &str = "src/lab/lab_loss.bpf.c";
        const EXPERIMENT: &str = "src/experiment/experiment.bpf.c";
        const REJECT: &str = "tests/bpf/reject.bpf.c";
        for f in [LOSS, EXPERIMENT, REJECT] {
            println!("cargo:rerun-if-changed={f}");
        }
        let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
        // The lab's loss program uses only UAPI headers; the multiarch include dir has asm/.
        let multiarch =
            format!("/usr/include/{}-linux-gnu", std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default());
        libbpf_cargo::SkeletonBuilder::new()
            .source(LOSS)
            .clang_args(["-I", &multiarch])
            .build_and_generate(out.join("lab_loss.skel.rs"))
            .expect("building the lab's loss program (clang and kernel UAPI headers are needed)");
        libbpf_cargo::SkeletonBuilder::new()
            .source(EXPERIMENT)
            .clang_args(["-I", &multiarch])
            .build_and_generate(out.join("experiment.skel.rs"))
            .expect("building the experiment's sock_ops program");
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

//! What the package tests share (tests/packaging.rs, tests/portable.rs): commands that must
//! succeed, the project's scripts, Debian root filesystems, and a .deb installed in one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Runs `cmd`, which must succeed; its output.
pub fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(out.status.success(), "{cmd:?}: {}\n{}", out.status, text(&out));
    out
}

/// A command's stdout and stderr, as text.
pub fn text(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// One of the project's scripts, run with `args` and `env`: the last line of its stdout, the
/// path it made.
pub fn script(name: &str, args: &[&str], env: &[(&str, &str)]) -> PathBuf {
    let out =
        run(Command::new(Path::new(ROOT).join("scripts").join(name)).args(args).envs(env.iter().copied()));
    String::from_utf8_lossy(&out.stdout).lines().last().expect("a path on stdout").trim().into()
}

/// A fresh root filesystem unpacked from `tar` (scripts/debian-base.sh's), removed on drop.
pub fn root_from(tar: &Path) -> tempfile::TempDir {
    let tree = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    run(Command::new("tar").arg("-C").arg(tree.path()).arg("-xf").arg(tar));
    tree
}

/// Installs `deb` in `root` with dpkg, and checks the binary it installed runs there.
pub fn install_deb(root: &Path, deb: &Path) {
    assert!(!root.join("usr/bin/bbrtop").exists(), "the root is fresh");
    std::fs::copy(deb, root.join("tmp/bbrtop.deb")).expect("copy the package in");
    run(Command::new("chroot").arg(root).args(["dpkg", "-i", "/tmp/bbrtop.deb"]));
    let version = run(Command::new("chroot").arg(root).args(["bbrtop", "--version"]));
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        concat!("bbrtop ", env!("CARGO_PKG_VERSION"))
    );
}

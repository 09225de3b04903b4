//! The Debian package and the container image, built by the project's scripts and run.
//!
//! No image registry is reachable here, so both start from a Debian root filesystem that
//! `scripts/debian-base.sh` makes with debootstrap from Debian's own packages (cached under
//! `target/tmp`). The package is installed into a fresh copy of it with `chroot` (no namespaces),
//! and its units are verified there. The image is built by buildah with chroot isolation, since
//! podman's runtime (crun) cannot start containers on this machine (cgroups in hybrid mode); its
//! root filesystem is then run the way a runtime would run it, with `unshare` (a mount namespace:
//! the root read-only, fresh /proc and /sys, a tmpfs /tmp) and the image's own `setpriv`, with
//! only CAP_BPF and CAP_PERFMON for `check` and no capability at all for `snapshot`.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use support::guard;
use support::packages::{install_deb, root_from, run, script, text};
use support::tools::tool;

const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");

/// The debootstrap base, built once and kept under target/tmp.
fn base_tar() -> PathBuf {
    static TAR: OnceLock<PathBuf> = OnceLock::new();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-base");
    TAR.get_or_init(|| script("debian-base.sh", &[dir.to_str().unwrap()], &[])).clone()
}

/// The package of the binary these tests were built with, made once per run.
fn deb() -> PathBuf {
    static DEB: OnceLock<PathBuf> = OnceLock::new();
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("deb");
    DEB.get_or_init(|| script("package-deb.sh", &["--binary", BIN, "--out", out.to_str().unwrap()], &[]))
        .clone()
}

#[test]
fn root_debian_package_installs_and_runs_in_a_fresh_chroot() {
    if !guard::root("installing the package in a chroot") {
        return;
    }
    let Some(analyze) = tool("systemd-analyze") else { return };
    let (tree, deb) = (root_from(&base_tar()), deb());
    let root = tree.path();
    install_deb(root, &deb);
    let status = run(Command::new("chroot").arg(root).args(["dpkg-query", "-W", "-f=${Status}", "bbrtop"]));
    assert_eq!(String::from_utf8_lossy(&status.stdout), "install ok installed");

    // Everything the package promises, in place.
    for file in [
        "usr/lib/systemd/system/bbrtop.service",
        "usr/lib/systemd/system/bbrtop.socket",
        "etc/default/bbrtop",
        "usr/share/man/man1/bbrtop.1.gz",
        "usr/share/man/man1/bbrtop-export.1.gz",
        "usr/share/bash-completion/completions/bbrtop",
        "usr/share/zsh/vendor-completions/_bbrtop",
        "usr/share/fish/vendor_completions.d/bbrtop.fish",
    ] {
        assert!(root.join(file).is_file(), "the package did not install /{file}");
    }
    let conffiles =
        run(Command::new("chroot").arg(root).args(["dpkg-query", "-W", "-f=${Conffiles}", "bbrtop"]));
    assert!(text(&conffiles).contains("/etc/default/bbrtop"), "the environment file is a conffile");

    // The installed units, against the installed binary: verify resolves ExecStart in the root.
    let unit = "/usr/lib/systemd/system/bbrtop.service";
    let unit_text = std::fs::read_to_string(root.join(&unit[1..])).unwrap();
    assert!(unit_text.contains("ExecStart=/usr/bin/bbrtop export $BBRTOP_ARGS"), "{unit_text}");
    for u in [unit, "/usr/lib/systemd/system/bbrtop.socket"] {
        let out = Command::new(&analyze)
            .arg("verify")
            .arg(format!("--root={}", root.display()))
            .arg(u)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.trim().is_empty(), "systemd-analyze verify {u}:\n{stderr}");
    }

    // A real Maintainer, not a placeholder (main's was bbrtop@localhost).
    let fields = run(Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Maintainer"));
    let maintainer = String::from_utf8_lossy(&fields.stdout).trim().to_string();
    let (name, email) = maintainer.split_once(" <").unwrap_or_default();
    assert!(!name.is_empty() && email.ends_with('>') && email.contains('@'), "Maintainer: {maintainer}");
    assert!(!maintainer.contains("localhost"), "Maintainer: {maintainer}");

    // The admin enables the exporter, as the package's description says to (systemctl makes
    // the links offline in the chroot, where systemd does not run).
    run(Command::new("chroot").arg(root).args(["systemctl", "enable", "bbrtop.service"]));
    let wants = root.join("etc/systemd/system/multi-user.target.wants/bbrtop.service");
    assert!(wants.symlink_metadata().is_ok(), "enabled");

    // Removed, it leaves its conffile; purged, nothing: neither the conffile nor what enabling
    // made (main's postrm left the link, pointing at a unit that is gone).
    run(Command::new("chroot").arg(root).args(["dpkg", "-r", "bbrtop"]));
    assert!(!root.join("usr/bin/bbrtop").exists() && root.join("etc/default/bbrtop").exists());
    run(Command::new("chroot").arg(root).args(["dpkg", "-P", "bbrtop"]));
    assert!(!root.join("etc/default/bbrtop").exists(), "purge removes the conffile");
    assert!(wants.symlink_metadata().is_err(), "purge removes the enabled link");
    let left: Vec<_> = walk(&root.join("etc/systemd/system"))
        .into_iter()
        .filter(|p| p.to_string_lossy().contains("bbrtop"))
        .collect();
    assert!(left.is_empty(), "left under /etc/systemd/system: {left:?}");
}

/// Every path below `dir` (links are not followed).
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if e.file_type().is_ok_and(|t| t.is_dir()) {
            out.extend(walk(&p));
        }
        out.push(p);
    }
    out
}

/// A built image's root filesystem, mounted by buildah; unmounted and removed on drop.
struct Image {
    buildah: PathBuf,
    tag: String,
    ctr: String,
    rootfs: PathBuf,
}

impl Image {
    fn build(buildah: PathBuf) -> Image {
        let tag = format!("localhost/bbrtop:test-{}", std::process::id());
        let (tar, deb) = (base_tar(), deb());
        script(
            "build-image.sh",
            &["--deb", deb.to_str().unwrap(), "--base-tar", tar.to_str().unwrap(), "--tag", &tag],
            &[],
        );
        let ctr =
            String::from_utf8_lossy(&run(Command::new(&buildah).args(["from", "--quiet", &tag])).stdout)
                .trim()
                .to_string();
        let mut image = Image { buildah, tag, ctr, rootfs: PathBuf::new() };
        let mount = run(Command::new(&image.buildah).args(["mount", &image.ctr]));
        image.rootfs = PathBuf::from(String::from_utf8_lossy(&mount.stdout).trim());
        image
    }

    /// Runs ARGS in the image as a runtime would: its own mount namespace, the root filesystem
    /// read-only, fresh /proc and read-only /sys, tmpfs /tmp and /dev (with /dev/null), then
    /// the image's setpriv with `privs`. Prints the capabilities it runs with first.
    fn run(&self, privs: &[&str], args: &[&str]) -> Output {
        let setup = r#"set -e
r="$1"; shift
mount --make-rprivate /
mount --bind "$r" "$r" && mount -o remount,bind,ro "$r"
mount -t proc proc "$r/proc"
mount -t sysfs -o ro sysfs "$r/sys"
mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
mount -t tmpfs -o mode=755 tmpfs "$r/dev" && touch "$r/dev/null" && mount --bind /dev/null "$r/dev/null"
exec chroot "$r" "$@""#;
        Command::new("unshare")
            .args(["--mount", "--", "sh", "-c", setup, "sh"])
            .arg(&self.rootfs)
            .arg("/usr/bin/setpriv")
            .args(privs)
            .args([
                "--",
                "/bin/sh",
                "-c",
                "grep CapEff /proc/self/status >&2; exec /usr/bin/bbrtop \"$@\"",
                "sh",
            ])
            .args(args)
            .output()
            .expect("unshare")
    }
}

impl Drop for Image {
    fn drop(&mut self) {
        let _ = Command::new(&self.buildah).args(["umount", &self.ctr]).output();
        let _ = Command::new(&self.buildah).args(["rm", &self.ctr]).output();
        let _ = Command::new(&self.buildah).args(["rmi", &self.tag]).output();
    }
}

#[test]
fn root_container_image_runs_check_with_bpf_and_perfmon_and_snapshot_with_nothing() {
    if !guard::root("building and running the image") || !guard::bpf("bbrtop check in the image") {
        return;
    }
    let Some(buildah) = tool("buildah") else { return };
    let image = Image::build(buildah);
    assert!(image.rootfs.join("usr/bin/bbrtop").is_file(), "the image holds the package's binary");
    let inspect = run(Command::new(&image.buildah).args(["inspect", "--type", "image", &image.tag]));
    let inspect: serde_json::Value =
        serde_json::from_slice(&inspect.stdout).expect("buildah inspect is JSON");
    let config = &inspect["OCIv1"]["config"];
    assert_eq!(config["Entrypoint"], serde_json::json!(["/usr/bin/bbrtop"]), "{config}");
    assert_eq!(config["Cmd"], serde_json::json!(["export"]), "{config}");

    // uid 0 with CAP_BPF and CAP_PERFMON only (bits 39 and 38), as the DaemonSet runs it. The
    // kernel's BTF comes from the fresh sysfs, as in a pod with no volume for it.
    assert!(!image.rootfs.join("sys/kernel/btf").exists(), "the image carries no BTF of its own");
    let bpf_only = ["--bounding-set=-all,+bpf,+perfmon", "--inh-caps=-all,+bpf,+perfmon"];
    let check = image.run(&bpf_only, &["check"]);
    let out = text(&check);
    assert!(out.contains("CapEff:\t000000c000000000"), "not CAP_BPF and CAP_PERFMON alone:\n{out}");
    assert_eq!(check.status.code(), Some(0), "bbrtop check in the image:\n{out}");
    assert!(out.contains("bpf: attached tcp_probe") && out.contains("netlink: ok"), "{out}");

    // Nothing at all, not even uid 0: snapshot reads its own namespace with netlink.
    let nothing =
        ["--reuid=65534", "--regid=65534", "--clear-groups", "--bounding-set=-all", "--inh-caps=-all"];
    let snap = image.run(&nothing, &["snapshot", "--json"]);
    let err = String::from_utf8_lossy(&snap.stderr);
    assert!(err.contains("CapEff:\t0000000000000000"), "capabilities left:\n{err}");
    assert_eq!(snap.status.code(), Some(0), "bbrtop snapshot in the image:\n{}", text(&snap));
    let doc: serde_json::Value = serde_json::from_slice(&snap.stdout).expect("snapshot --json is JSON");
    assert!(doc["sockets"].is_array(), "{doc}");

    // And the capabilities are what makes check pass: without them it says what is missing.
    let bare = image.run(&nothing, &["check"]);
    assert_eq!(bare.status.code(), Some(1), "{}", text(&bare));
    assert!(text(&bare).contains("missing CAP_BPF"), "{}", text(&bare));
}

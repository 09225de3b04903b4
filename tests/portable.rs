//! The portable build and the RPM made from it.
//!
//! `scripts/build-portable.sh` links the release binary against glibc 2.28's symbols
//! (cargo-zigbuild; libbpf, libelf and zlib vendored and static). These tests read what the binary
//! asks of the C library (`objdump -T`: no `GLIBC_x.y` above 2.28; a static binary, with no dynamic
//! section, would pass) and run it: `--version` and a netlink snapshot as any user, `check` as root,
//! and both in a Debian 11 root filesystem (glibc 2.31, older than the 2.34 of RHEL 9 and Amazon
//! Linux 2023), where the binary `cargo build` links does not start. No RHEL runs here (no image
//! registry or RHEL mirror is reachable), and Debian 10, whose glibc is RHEL 8's 2.28, has left
//! Debian's mirrors: for 2.28 itself the symbol versions are the proof. `scripts/package-rpm.sh`
//! packs the RPM with Debian's rpm; rpm's own queries read it back against the .deb of the same
//! binary: the same files byte for byte (zsh's directory and Debian's copyright file apart), the
//! same unit, no file capabilities, no glibc above 2.28 in its Requires.
//!
//! The binary these tests build is `--profile portable-check`'s: the release build's target and
//! link without its optimisation (Cargo.toml says why that bounds the same glibc), a few minutes
//! cold on two cores where the release build takes 8 to 11; cargo, in the build's own target
//! directory (target/portable/cargo), rebuilds what the sources changed and nothing else.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;
use support::packages::{install_deb, root_from, run, script, text};
use support::{guard, tools};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The test build, linked against this machine's glibc: what the portable one is measured against.
const BIN: &str = env!("CARGO_BIN_EXE_bbrtop");
/// RHEL 8's glibc, the oldest of the fleet.
const GLIBC_MAX: [u32; 2] = [2, 28];

fn stdout(cmd: &mut Command) -> String {
    String::from_utf8_lossy(&run(cmd).stdout).into_owned()
}

fn uid0() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .is_some_and(|v| v.split_whitespace().next() == Some("0"))
    })
}

/// The portable binary, built once per run (cargo finds it up to date in seconds when nothing
/// changed). As root the script installs the Debian packages it needs; as another user they must
/// be there already (`tools::tool`: a skip outside CI, a failure under it).
fn portable() -> Option<PathBuf> {
    static BUILT: OnceLock<Option<PathBuf>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let tools_ready = uid0()
                || ["autoreconf", "autopoint", "flex", "bison", "gawk", "objdump", "clang", "python3"]
                    .iter()
                    .all(|t| tools::have(t));
            tools_ready.then(|| script("build-portable.sh", &["--profile", "portable-check"], &[]))
        })
        .clone()
}

/// A version such as `2.2.5`, comparable part by part.
fn version(v: &str) -> Vec<u32> {
    v.split('.').map(|p| p.parse().unwrap_or_else(|_| panic!("a version: {v}"))).collect()
}

fn newer_than_max(v: &[u32]) -> bool {
    v > GLIBC_MAX.as_slice()
}

/// Each glibc symbol version the binary asks for, with the symbols that ask for it; None for a
/// static binary (no dynamic section), which asks for none.
fn glibc_versions(binary: &Path) -> Option<BTreeMap<Vec<u32>, Vec<String>>> {
    let headers = stdout(Command::new("objdump").arg("-p").arg(binary));
    if !headers.contains("Dynamic Section:") {
        return None;
    }
    let mut versions: BTreeMap<Vec<u32>, Vec<String>> = BTreeMap::new();
    for line in stdout(Command::new("objdump").arg("-T").arg(binary)).lines() {
        assert!(!line.contains("GLIBC_PRIVATE"), "a private glibc symbol, no stable ABI: {line}");
        let Some(at) = line.find("GLIBC_") else { continue };
        let v: String =
            line[at + "GLIBC_".len()..].chars().take_while(|c| c.is_ascii_digit() || *c == '.').collect();
        let symbol = line.split_whitespace().last().unwrap_or_default().to_string();
        versions.entry(version(&v)).or_default().push(symbol);
    }
    Some(versions)
}

/// The shared libraries the binary names (DT_NEEDED).
fn needed(binary: &Path) -> Vec<String> {
    stdout(Command::new("objdump").arg("-p").arg(binary))
        .lines()
        .filter_map(|l| l.trim().strip_prefix("NEEDED"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// glibc's own libraries, present wherever glibc is.
fn is_glibc(lib: &str) -> bool {
    ["libc.so.", "libm.so.", "libpthread.so.", "libdl.so.", "librt.so.", "libutil.so.", "ld-linux"]
        .iter()
        .any(|p| lib.starts_with(p))
}

fn show(versions: &BTreeMap<Vec<u32>, Vec<String>>, newer: bool) -> String {
    versions
        .iter()
        .filter(|(v, _)| !newer || newer_than_max(v))
        .map(|(v, syms)| {
            format!(
                "GLIBC_{}: {}",
                v.iter().map(u32::to_string).collect::<Vec<_>>().join("."),
                syms.join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn portable_binary_asks_for_glibc_2_28_at_most_and_starts() {
    let Some(bin) = portable() else { return };
    match glibc_versions(&bin) {
        None => eprintln!("{} is static: no glibc symbol versions to check", bin.display()),
        Some(versions) => {
            let newest = versions.keys().last().expect("a dynamic binary asks for some glibc version");
            assert!(
                !newer_than_max(newest),
                "{} asks for glibc above 2.28:\n{}",
                bin.display(),
                show(&versions, true)
            );
            // No library but glibc's: libbpf, libelf and zlib are inside it, and zig's unwinder
            // stands for libgcc_s.
            let libs = needed(&bin);
            assert!(libs.iter().any(|l| l.starts_with("libc.so.")), "{libs:?}");
            let foreign: Vec<_> = libs.iter().filter(|l| !is_glibc(l)).collect();
            assert!(foreign.is_empty(), "{} needs more than glibc: {foreign:?}", bin.display());
        }
    }
    // The reading is not vacuous: the build `cargo build` links here asks for newer versions,
    // wherever this machine's glibc is newer than 2.28 (Debian 12's is 2.36).
    let host = stdout(Command::new("getconf").arg("GNU_LIBC_VERSION"));
    let host = version(host.trim().trim_start_matches("glibc ").trim());
    if newer_than_max(&host) {
        let ours = glibc_versions(Path::new(BIN)).expect("the test build is dynamic");
        assert!(
            ours.keys().any(|v| newer_than_max(v)),
            "the host-linked build asks for nothing above 2.28 on glibc {host:?}:\n{}",
            show(&ours, false)
        );
    }

    let out = run(Command::new(&bin).arg("--version"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), concat!("bbrtop ", env!("CARGO_PKG_VERSION")));
    // A snapshot: netlink, the runtime and the JSON writer, with no privilege.
    let snap = run(Command::new(&bin).args(["snapshot", "--json"]));
    let doc: serde_json::Value = serde_json::from_slice(&snap.stdout).expect("snapshot --json is JSON");
    assert!(doc["sockets"].is_array(), "{doc}");
}

#[test]
fn root_portable_binary_attaches_its_bpf_programs() {
    if !guard::bpf("bbrtop check with the portable binary") {
        return;
    }
    let Some(bin) = portable() else { return };
    let out = Command::new(&bin).arg("check").output().expect("bbrtop check");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let out = text(&out);
    assert!(out.contains("bpf: attached tcp_probe") && out.contains("netlink: ok"), "{out}");
}

/// A fresh Debian 11 root filesystem (glibc 2.31), from a cached debootstrap tarball.
fn bullseye() -> tempfile::TempDir {
    static TAR: OnceLock<PathBuf> = OnceLock::new();
    let tar = TAR.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("debian-base");
        // libelf1 as the Debian package of the host-linked build needs it, so that build fails
        // below on glibc alone.
        script(
            "debian-base.sh",
            &[dir.to_str().unwrap()],
            &[("BBRTOP_DEBIAN_SUITE", "bullseye"), ("BBRTOP_DEBIAN_INCLUDE", "libelf1")],
        )
    });
    root_from(tar)
}

/// Runs ARGS chrooted in `root` with its own /proc and /sys (a private mount namespace).
fn in_root(root: &Path, args: &[&str]) -> Output {
    let setup = r#"set -e
r="$1"; shift
mount --make-rprivate /
mount -t proc proc "$r/proc"
mount -t sysfs -o ro sysfs "$r/sys"
mount -t tmpfs tmpfs "$r/tmp"
exec chroot "$r" "$@""#;
    Command::new("unshare")
        .args(["--mount", "--", "sh", "-c", setup, "sh"])
        .arg(root)
        .args(args)
        .output()
        .expect("unshare")
}

#[test]
fn root_portable_package_installs_and_runs_on_debian_11() {
    if !guard::root("a Debian 11 chroot") || !guard::bpf("bbrtop check in a Debian 11 chroot") {
        return;
    }
    let Some(bin) = portable() else { return };
    let tree = bullseye();
    let root = tree.path();
    let glibc = stdout(Command::new("chroot").arg(root).args(["getconf", "GNU_LIBC_VERSION"]));
    let glibc = version(glibc.trim().trim_start_matches("glibc "));
    assert!(glibc < vec![2, 34], "the root's glibc {glibc:?} is not older than RHEL 9's 2.34");

    // The build `cargo build` links does not start there...
    std::fs::copy(BIN, root.join("usr/local/bin/bbrtop-host")).expect("copy the host build in");
    let host = Command::new("chroot").arg(root).args(["bbrtop-host", "--version"]).output().unwrap();
    assert!(
        !host.status.success() && text(&host).contains("GLIBC_2.") && text(&host).contains("not found"),
        "the host-linked build on glibc {glibc:?}: {}",
        text(&host)
    );

    // ...and the portable build's package installs (Depends: libc6 (>= 2.28)) and runs.
    let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("portable-deb-11");
    let deb =
        script("package-deb.sh", &["--binary", bin.to_str().unwrap(), "--out", out.to_str().unwrap()], &[]);
    install_deb(root, &deb);
    let check = in_root(root, &["/usr/bin/bbrtop", "check"]);
    assert_eq!(check.status.code(), Some(0), "bbrtop check on Debian 11:\n{}", text(&check));
    assert!(text(&check).contains("bpf: attached tcp_probe"), "{}", text(&check));
}

/// The RPM and the .deb of the portable binary, made once per run.
fn packages() -> Option<(PathBuf, PathBuf)> {
    static PKGS: OnceLock<Option<(PathBuf, PathBuf)>> = OnceLock::new();
    PKGS.get_or_init(|| {
        let bin = portable()?;
        let (bin, out) =
            (bin.to_str().unwrap(), Path::new(env!("CARGO_TARGET_TMPDIR")).join("portable-pkgs"));
        let args = ["--binary", bin, "--out", out.to_str().unwrap()];
        Some((script("package-rpm.sh", &args, &[]), script("package-deb.sh", &args, &[])))
    })
    .clone()
}

/// A file in a package: mode bits and digest (directories apart).
#[derive(Debug, PartialEq)]
struct Entry {
    mode: u32,
    sha256: String,
}

fn sha256(path: &Path) -> String {
    let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref().iter().map(|b| format!("{b:02x}")).collect()
}

/// The RPM's files by `rpm -qp --dump`: path size mtime digest mode owner group config doc ...
fn rpm_files(rpm: &Path) -> BTreeMap<String, Entry> {
    let mut files = BTreeMap::new();
    for line in stdout(Command::new("rpm").args(["-qp", "--dump"]).arg(rpm)).lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let mode = u32::from_str_radix(f[4], 8).unwrap_or_else(|_| panic!("{line}"));
        assert_eq!((f[5], f[6]), ("root", "root"), "{line}");
        if mode & 0o170000 == 0o100000 {
            files.insert(f[0].to_string(), Entry { mode: mode & 0o7777, sha256: f[3].to_string() });
        }
    }
    files
}

/// The .deb's files by `dpkg-deb -c`, with digests of what `dpkg-deb -x` unpacks.
fn deb_files(deb: &Path, unpacked: &Path) -> BTreeMap<String, Entry> {
    run(Command::new("dpkg-deb").arg("-x").arg(deb).arg(unpacked));
    let mut files = BTreeMap::new();
    for line in stdout(Command::new("dpkg-deb").arg("-c").arg(deb)).lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(f[1], "root/root", "{line}");
        let (perms, path) = (f[0], f[5].trim_start_matches('.'));
        if !perms.starts_with('-') {
            continue;
        }
        let mode = perms[1..].chars().fold(0, |m, c| m << 1 | u32::from(c != '-'));
        files.insert(path.to_string(), Entry { mode, sha256: sha256(&unpacked.join(&path[1..])) });
    }
    files
}

#[test]
fn rpm_holds_the_debs_files_and_unit_and_asks_for_glibc_2_28_at_most() {
    // As root, scripts/package-rpm.sh installs Debian's rpm itself.
    if !uid0() && !["rpm", "rpmbuild", "dpkg-deb", "dpkg-shlibdeps"].iter().all(|t| tools::have(t)) {
        return;
    }
    let Some((rpm, deb)) = packages() else { return };
    let q = |args: &[&str]| stdout(Command::new("rpm").arg("-qp").args(args).arg(&rpm));

    let info = q(&["-i"]);
    for field in [
        "Name        : bbrtop".to_string(),
        format!("Version     : {}", env!("CARGO_PKG_VERSION")),
        "Release     : 1".to_string(),
        format!("Architecture: {}", std::env::consts::ARCH),
        "License     : Apache-2.0".to_string(),
    ] {
        assert!(info.lines().any(|l| l.trim_end() == field), "no {field:?} in rpm -qpi:\n{info}");
    }

    // The same files, byte for byte and mode for mode. Where the distributions differ: zsh reads
    // vendor-completions on Debian and site-functions on RHEL; Debian's copyright file is Debian's.
    let unpacked = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let mut debs = deb_files(&deb, unpacked.path());
    let mut rpms = rpm_files(&rpm);
    let listed: BTreeSet<String> = q(&["-l"]).lines().map(str::to_string).collect();
    assert!(rpms.keys().all(|f| listed.contains(f)), "rpm -qpl:\n{listed:?}\nagainst --dump: {rpms:?}");
    assert!(debs.remove("/usr/share/doc/bbrtop/copyright").is_some(), "the .deb has its copyright file");
    let zsh = (
        debs.remove("/usr/share/zsh/vendor-completions/_bbrtop").expect("the .deb's zsh completion"),
        rpms.remove("/usr/share/zsh/site-functions/_bbrtop").expect("the RPM's zsh completion"),
    );
    assert_eq!(zsh.0, zsh.1, "the zsh completions differ");
    let (deb_names, rpm_names): (BTreeSet<_>, BTreeSet<_>) = (debs.keys().collect(), rpms.keys().collect());
    assert_eq!(
        deb_names,
        rpm_names,
        "only in the .deb: {:?}; only in the RPM: {:?}",
        deb_names.difference(&rpm_names).collect::<Vec<_>>(),
        rpm_names.difference(&deb_names).collect::<Vec<_>>()
    );
    for (path, entry) in &debs {
        assert_eq!(Some(entry), rpms.get(path), "{path} differs between the .deb and the RPM");
    }
    for f in
        ["/usr/bin/bbrtop", "/usr/lib/systemd/system/bbrtop.socket", "/usr/share/man/man1/bbrtop-export.1.gz"]
    {
        assert!(rpms.contains_key(f), "the RPM lacks {f}");
    }

    // The unit: the repository's, pointed at /usr/bin, granting its capabilities itself; nothing
    // carries file capabilities, in either package.
    let unit = "/usr/lib/systemd/system/bbrtop.service";
    let shipped = std::fs::read_to_string(unpacked.path().join(&unit[1..])).unwrap();
    let source = std::fs::read_to_string(Path::new(ROOT).join("deploy/systemd/bbrtop.service")).unwrap();
    assert_eq!(shipped, source.replace("/usr/local/bin/bbrtop", "/usr/bin/bbrtop"));
    assert_eq!(
        rpms[unit].sha256,
        sha256(&unpacked.path().join(&unit[1..])),
        "the RPM's unit is not the .deb's"
    );
    assert!(shipped.contains("ExecStart=/usr/bin/bbrtop export $BBRTOP_ARGS"), "{shipped}");
    assert!(shipped.contains("AmbientCapabilities=CAP_BPF CAP_PERFMON"), "{shipped}");
    let caps = q(&["--filecaps"]);
    assert!(
        caps.lines().all(|l| l.split('\t').nth(1).unwrap_or("").trim().is_empty()),
        "file capabilities:\n{caps}"
    );
    let postinst = stdout(Command::new("dpkg-deb").arg("-I").arg(&deb).arg("postinst"));
    assert!(!postinst.contains("setcap"), "{postinst}");

    // The environment file is a conffile in both.
    assert_eq!(q(&["-c"]).trim(), "/etc/default/bbrtop");
    let conffiles = stdout(Command::new("dpkg-deb").arg("-I").arg(&deb).arg("conffiles"));
    assert_eq!(conffiles.trim(), "/etc/default/bbrtop");

    // Requires, as rpm's ELF generator wrote them from the binary: glibc's, none above 2.28, and
    // no libelf, zlib or libgcc_s. The .deb's Depends likewise.
    let requires = q(&["--requires"]);
    assert!(
        requires.lines().any(|l| l.trim() == "libc.so.6()(64bit)"),
        "rpm wrote no ELF requires:\n{requires}"
    );
    for line in requires.lines().map(str::trim) {
        if let Some(v) = line.split("(GLIBC_").nth(1) {
            let v = version(v.split(')').next().unwrap());
            assert!(!newer_than_max(&v), "the RPM requires {line}:\n{requires}");
        }
        let lib = line.split('(').next().unwrap_or(line);
        assert!(
            lib.starts_with('/')
                || lib.starts_with("rpmlib")
                || lib.starts_with("rtld")
                || lib.starts_with("config")
                || is_glibc(lib),
            "the RPM requires {line}:\n{requires}"
        );
    }
    assert_eq!(q(&["--recommends"]).trim(), "iproute");
    let depends = stdout(Command::new("dpkg-deb").arg("-f").arg(&deb).arg("Depends"));
    let libc6 = depends.trim().strip_prefix("libc6 (>= ").and_then(|v| v.strip_suffix(')'));
    assert!(libc6.is_some_and(|v| !newer_than_max(&version(v))), "the .deb depends on {depends}");

    // The units' life: the presets decide at install (off unless a preset names it, as the .deb
    // leaves it), erasing stops and disables, an upgrade restarts a running exporter.
    let scripts = q(&["--scripts"]);
    for want in [
        "postinstall scriptlet",
        "systemctl --no-reload preset bbrtop.service bbrtop.socket",
        "preuninstall scriptlet",
        "systemctl --no-reload disable --now bbrtop.socket bbrtop.service",
        "postuninstall scriptlet",
        "systemctl try-restart bbrtop.service",
    ] {
        assert!(scripts.contains(want), "no {want:?} in the RPM's scripts:\n{scripts}");
    }
    assert!(!scripts.contains(" enable ") && !scripts.contains(" start "), "{scripts}");
}

#[test]
fn root_rpm_installs_verifies_and_erases_in_a_scratch_root() {
    if !guard::root("rpm --root, which makes files owned by root") {
        return;
    }
    let Some((rpm, _)) = packages() else { return };
    // Debian's rpm, not RHEL's: the payload and headers unpack and verify. Scriptlets need a shell
    // in the root, which this one lacks (the .deb's chroot test runs Debian's).
    let tree = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("tempdir");
    let root = tree.path().to_str().unwrap();
    run(Command::new("rpm").args(["--root", root, "--initdb"]));
    run(Command::new("rpm").args(["--root", root, "-i", "--nodeps", "--noscripts"]).arg(&rpm));
    run(Command::new("rpm").args(["--root", root, "-V", "--nodeps", "--noscripts", "bbrtop"]));
    let out = run(Command::new(tree.path().join("usr/bin/bbrtop")).arg("--version"));
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), concat!("bbrtop ", env!("CARGO_PKG_VERSION")));

    // An edited environment file survives erasure as .rpmsave, as a conffile does on Debian.
    let env = tree.path().join("etc/default/bbrtop");
    std::fs::write(&env, "BBRTOP_ARGS=\"--web.listen-address=:9999\"\n").unwrap();
    run(Command::new("rpm").args(["--root", root, "-e", "--nodeps", "--noscripts", "bbrtop"]));
    assert!(!tree.path().join("usr/bin/bbrtop").exists(), "erased");
    let saved =
        std::fs::read_to_string(tree.path().join("etc/default/bbrtop.rpmsave")).expect("the .rpmsave");
    assert!(saved.contains(":9999"), "{saved}");
}

//! `bbrtop --connect URL`: the frame endpoint and its client through real TLS (a certificate the
//! test makes with openssl) and bcrypt basic auth, and the TUI in tmux on a remote lab's sockets,
//! checked against `ss` in the lab's namespace.

mod support;

use bbrtop::export::server::{Limits, Options};
use bbrtop::export::web_config::WebConfig;
use bbrtop::lab::{Lab, LabConfig};
use bbrtop::remote::client::{Client, FetchError, Fetched, Roots};
use bbrtop::remote::target::{self, Credentials};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;
use support::exporter::{Server, snapshot};
use support::guard;
use support::lab::ss_established;
use support::tmux::Tmux;
use support::tools::have;

const PASSWORD: &str = "s3cret";

/// A self-signed server certificate for 127.0.0.1 and localhost, and a web config with TLS and
/// the user `prom` (bcrypt); returns the certificate's path (what a client trusts) and the
/// config's. `leaf`: the certificate says it is no CA (openssl's default says it is one).
fn tls_and_auth(dir: &Path, leaf: bool) -> (PathBuf, PathBuf) {
    let leaf: &[&str] = if leaf { &["-addext", "basicConstraints=critical,CA:FALSE"] } else { &[] };
    let made = Command::new("openssl")
        .args(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"])
        .args(["-keyout", "key.pem", "-out", "cert.pem", "-days", "1", "-subj", "/CN=localhost"])
        .args(["-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"])
        .args(leaf)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let hash = bcrypt::hash(PASSWORD, 4).unwrap();
    let web = dir.join("web.yml");
    std::fs::write(
        &web,
        format!("tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\nbasic_auth_users:\n  prom: '{hash}'\n"),
    )
    .unwrap();
    (dir.join("cert.pem"), web)
}

fn client(url: &str, password: Option<&str>, roots: Roots) -> Client {
    let creds = password.map(|p| Credentials { user: "prom".into(), password: p.into() });
    Client::new(target::parse(url).unwrap(), creds, roots).unwrap()
}

/// The exporter in process (the API on, TLS and auth): the frame comes through with the right
/// password and the CA, and every other way fails with a line that says what to do.
#[test]
fn frames_come_through_tls_and_auth_and_failures_say_why() {
    if !have("openssl") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let (ca, web) = tls_and_auth(dir.path(), true);
    let security = WebConfig::load(&web).unwrap();
    let api = Options { api: true, ..Options::default() };
    let srv = Server::start_with(security.clone(), Limits::default(), api.clone(), snapshot);
    let url = format!("https://127.0.0.1:{}", srv.port);

    let c = client(&url, Some(PASSWORD), Roots::File(&ca));
    let Fetched::Frame(bytes) = c.fetch(None).unwrap() else { panic!("a frame") };
    let (got, _) = bbrtop::record::frame::decode(&bytes, None).unwrap();
    // The poll this reader holds is still the latest (the stand-in publishes the same poll
    // again): 304. One the exporter never framed: a keyframe, which stands alone.
    assert_eq!(c.fetch(Some(got.seq)).unwrap(), Fetched::Held);
    let Fetched::Frame(again) = c.fetch(Some(got.seq + 1_000)).unwrap() else { panic!("a keyframe") };
    assert!(bbrtop::record::frame::decode(&again, None).is_ok());
    let want = snapshot();
    let peers = |s: &bbrtop_core::snapshot::Snapshot| {
        let mut p: Vec<_> = s
            .sockets
            .iter()
            .map(|v| (v.record.cookie, v.record.peer, v.record.cc_name().to_string()))
            .collect();
        p.sort();
        p
    };
    assert_eq!(peers(&got), peers(&want), "the frame carries the exporter's sockets");

    let fetch = |url: &str, password, roots| client(url, password, roots).fetch(None).unwrap_err();
    assert_eq!(fetch(&url, Some("wrong"), Roots::File(&ca)), FetchError::Unauthorized { sent: true });
    assert_eq!(fetch(&url, None, Roots::File(&ca)), FetchError::Unauthorized { sent: false });
    // A self-signed certificate is no CA of the system's.
    let e = fetch(&url, Some(PASSWORD), Roots::System).to_string();
    assert!(e.starts_with("TLS: ") && e.contains("--connect.ca.file"), "{e}");
    // Plain HTTP to the TLS port: no HTTP comes back.
    let e = fetch(&format!("http://127.0.0.1:{}", srv.port), None, Roots::System).to_string();
    assert!(e.contains("try https://"), "{e}");

    // A certificate that says it is a CA is refused as a server's, with how to make one.
    let ca_dir = tempfile::tempdir().unwrap();
    let (ca_cert, ca_web) = tls_and_auth(ca_dir.path(), false);
    let as_ca =
        Server::start_with(WebConfig::load(&ca_web).unwrap(), Limits::default(), api.clone(), snapshot);
    let e = fetch(&format!("https://127.0.0.1:{}", as_ca.port), Some(PASSWORD), Roots::File(&ca_cert));
    assert!(e.to_string().contains("basicConstraints=critical,CA:FALSE"), "{e}");

    // Without --web.enable-api there is no frame, even with the right password.
    let off = Server::start_with(security, Limits::default(), Options::default(), snapshot);
    let e = fetch(&format!("https://127.0.0.1:{}", off.port), Some(PASSWORD), Roots::File(&ca));
    assert!(matches!(&e, FetchError::NoEndpoint(_)) && e.to_string().contains("--web.enable-api"), "{e}");
}

/// A loopback server that answers every request with `status`, `head` and `body`, for `n`
/// requests.
fn answering(status: &'static str, head: &'static str, body: &'static [u8], n: usize) -> u16 {
    use std::io::{BufRead, BufReader, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(n) {
            let Ok(mut s) = s else { continue };
            let mut r = BufReader::new(s.try_clone().unwrap());
            let mut line = String::new();
            while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(s, "HTTP/1.1 {status}\r\n{head}\r\nContent-Length: {}\r\n\r\n", body.len());
            let _ = s.write_all(body);
        }
    });
    port
}

/// Something else than an exporter on the port: a page (a proxy's login, say), or bytes that
/// claim to be a frame and are not. Each is an error that says so.
#[test]
fn garbage_is_not_a_frame() {
    let page = answering("200 OK", "Content-Type: text/html", b"<html>log in</html>", 1);
    let e = client(&format!("http://127.0.0.1:{page}"), None, Roots::System).fetch(None).unwrap_err();
    assert!(matches!(&e, FetchError::NotAFrame(_)) && e.to_string().contains("text/html"), "{e}");
    let junk =
        answering("200 OK", "Content-Type: application/vnd.bbrtop.frame", b"bbrtop-frame 1\n\xff\xff", 1);
    let got = client(&format!("http://127.0.0.1:{junk}"), None, Roots::System).fetch(None).unwrap();
    let Fetched::Frame(bytes) = got else { panic!("{got:?}") };
    let e = bbrtop::record::frame::decode(&bytes, None).unwrap_err();
    assert!(format!("{e:#}").contains("cut short"), "{e:#}");
    // https:// to a plain HTTP server: its answer is not TLS, and the error says what it is.
    let plain = answering("200 OK", "Content-Type: text/html", b"<html>log in</html>", 1);
    let e = client(&format!("https://127.0.0.1:{plain}"), None, Roots::System).fetch(None).unwrap_err();
    assert!(e.to_string().contains("this looks like plain HTTP"), "{e}");
    // A redirect is not followed (it would carry the password elsewhere): it is said.
    let moved = answering("301 Moved Permanently", "Location: https://edge-2:10027/", b"", 1);
    let e = client(&format!("http://127.0.0.1:{moved}"), None, Roots::System).fetch(None).unwrap_err();
    assert!(e.to_string().contains("redirected to https://edge-2:10027/"), "{e}");
    // A 304 to a request for a whole frame points nowhere: its status is said (main said
    // "redirected to ?").
    let unasked = answering("304 Not Modified", "X-Any: 1", b"", 1);
    let e = client(&format!("http://127.0.0.1:{unasked}"), None, Roots::System).fetch(None).unwrap_err();
    assert!(
        e.to_string().starts_with("HTTP 304: Not Modified") && !e.to_string().contains("redirected"),
        "{e}"
    );
}

/// `bbrtop export` on a lab's sender, with TLS and basic auth, and `bbrtop --connect` to it in
/// tmux: the screen shows the lab's flows as `ss` lists them in that namespace. Then a wrong
/// password (the header says unauthorized; no socket is shown) and http:// to the TLS port.
#[test]
fn root_connect_through_tls_and_auth_shows_a_remote_labs_sockets() {
    if !guard::lab("--connect to a lab's exporter") || !have("tmux") || !have("openssl") || !have("curl") {
        return;
    }
    let mut lab = Lab::new(LabConfig::default()).unwrap();
    for cc in ["bbr", "cubic"] {
        lab.start_flow(cc).unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let (ca, web) = tls_and_auth(dir.path(), true);
    let port = support::http::free_port();
    let (_hindsight, hindsight_flag) = support::hindsight_dir();
    let export = Command::new(env!("CARGO_BIN_EXE_bbrtop"))
        .arg("export")
        .arg(&hindsight_flag)
        .arg(format!("--netns={}", lab.sender_netns().display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .arg(format!("--web.config.file={}", web.display()))
        .arg("--web.enable-api")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let _export = support::Proc(export);
    let url = format!("https://127.0.0.1:{port}");
    let ready = support::poll_until(Duration::from_secs(20), || {
        let o = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", "--max-time", "5", "--cacert"])
            .arg(&ca)
            .arg(format!("{url}/-/ready"))
            .output()
            .ok()?;
        (o.stdout == b"200").then_some(())
    });
    assert!(ready.is_some(), "the exporter on {url} never became ready");
    let (right, wrong) = (dir.path().join("right"), dir.path().join("wrong"));
    std::fs::write(&right, format!("{PASSWORD}\n")).unwrap();
    std::fs::write(&wrong, "not-it\n").unwrap();
    let connect = |password: &Path| {
        format!(
            "--connect {url} --connect.username prom --connect.password.file {} --connect.ca.file {}",
            password.display(),
            ca.display()
        )
    };

    let t = Tmux::start("connect");
    let bbrtop = |args: &str| t.keys(&[&format!("{} {args}", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
    bbrtop(&connect(&right));
    let p = t.wait_for("2 sockets: bbr 1, cubic 1");
    assert!(p.contains("remote: ok"), "the header says the remote answers:\n{p}");
    assert!(p.starts_with(&format!("bbrtop remote {url}  ")), "and names it first:\n{p}");
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease").unwrap();
    let facts = format!("kernel {}", kernel.trim());
    assert!(p.contains(&facts), "the header has the remote's host facts:\n{p}");
    // The header wraps its long first line.
    let header = p.lines().take(3).collect::<Vec<_>>().join(" ");
    assert!(header.contains(&format!("netns {}", lab.sender_name())), "and the namespace it watches:\n{p}");
    let ss = ss_established(&lab);
    // The lab's sender has the two flows, and maybe their control connections: every socket of
    // the flows' cc is on screen with its addresses and cc.
    let flows: Vec<_> = ss.iter().filter(|s| matches!(s.cc.as_deref(), Some("bbr" | "cubic"))).collect();
    assert_eq!(flows.len(), 2, "ss in the lab's sender: {ss:?}");
    // Both flows go to the lab's one sink: a row is known by its local address and its peer.
    let p = t.wait_for(&flows[0].local.unwrap().to_string());
    for s in &flows {
        let (local, peer) = (s.local.unwrap().to_string(), s.peer.unwrap().to_string());
        let cc = s.cc.clone().unwrap();
        let row = p
            .lines()
            .find(|l| l.contains(&local) && l.contains(&peer))
            .unwrap_or_else(|| panic!("{local} -> {peer} not on screen:\n{p}"));
        assert!(row.contains(&format!(" {cc} ")), "{local} -> {peer} is {cc} in ss:\n{row}");
    }
    t.keys(&["q"]);
    t.back_at_shell("q");

    bbrtop(&connect(&wrong));
    let p = t.wait_for("unauthorized (401)");
    assert!(p.contains("0 sockets"), "nothing is shown without the right password:\n{p}");
    for s in &flows {
        assert!(!p.contains(&s.local.unwrap().to_string()), "a socket shown without auth:\n{p}");
    }
    t.keys(&["q"]);
    t.back_at_shell("q");

    bbrtop(&format!("--connect http://127.0.0.1:{port}"));
    t.wait_for("try https://");
    t.keys(&["q"]);
    t.back_at_shell("q");
}

#[test]
fn a_bad_url_or_a_missing_password_file_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    for (args, says) in [
        (vec!["--connect", "ftp://edge-1:9100"], "scheme ftp://"),
        (vec!["--connect", "https://h:1", "--lab"], "cannot be used with"),
        (
            vec![
                "--connect",
                "https://h:1",
                "--connect.username",
                "u",
                "--connect.password.file",
                missing.to_str().unwrap(),
            ],
            "--connect.password.file",
        ),
    ] {
        // The remote's flags are read before bbrtop looks for a terminal.
        let err = support::usage_error(&args);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

/// `q` ends `--connect` at once, even while the remote is in the middle of a slow answer (a byte
/// a second, for up to a minute): on main the TUI waited for the poller's request to time out,
/// 20 s, on a blank screen.
#[test]
fn connect_quits_at_once_while_a_remote_answers_slowly() {
    use std::io::{BufRead, BufReader, Write};
    if !have("tmux") {
        return;
    }
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in l.incoming().take(4).flatten() {
            std::thread::spawn(move || {
                let mut s = s;
                let mut r = BufReader::new(s.try_clone().unwrap());
                let mut line = String::new();
                while r.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let head = "HTTP/1.1 200 OK\r\nContent-Type: application/vnd.bbrtop.frame\r\nContent-Length: 100000\r\n\r\n";
                if s.write_all(head.as_bytes()).is_err() {
                    return;
                }
                for _ in 0..60 {
                    std::thread::sleep(Duration::from_secs(1));
                    if s.write_all(b"x").is_err() {
                        return;
                    }
                }
            });
        }
    });
    let t = Tmux::start("connect-slow");
    t.keys(&[&format!("exec {} --connect http://127.0.0.1:{port}", env!("CARGO_BIN_EXE_bbrtop")), "Enter"]);
    t.wait_for(&format!("remote http://127.0.0.1:{port}"));
    let pid = t.pane_pid();
    t.keys(&["q"]);
    let gone = support::poll_until(Duration::from_secs(5), || {
        Some(()).filter(|_| !Path::new(&format!("/proc/{pid}/stat")).exists() || zombie(pid))
    });
    assert!(gone.is_some(), "bbrtop {pid} still runs 5 s after q, waiting on the slow remote");
}

/// Whether `pid` has exited and waits to be reaped.
fn zombie(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| s.rsplit(')').next().is_some_and(|r| r.trim_start().starts_with('Z')))
}

/// A remote that is down when the TUI starts and comes up later: the header shows its host facts
/// once its first frame comes (on main it kept "? kernel ?" for as long as it ran).
#[test]
fn connect_header_takes_the_remotes_facts_when_it_comes_up_late() {
    if !have("tmux") {
        return;
    }
    let addr = format!("127.0.0.1:{}", support::http::free_port());
    let t = Tmux::start("connect-late");
    t.keys(&[
        &format!("exec {} --connect http://{addr} --interval 200ms", env!("CARGO_BIN_EXE_bbrtop")),
        "Enter",
    ]);
    t.wait_for("?  kernel ?");
    let api = Options { api: true, system: bbrtop_core::system::SystemInfo::example(), ..Options::default() };
    let _srv = Server::start_at(&addr, Default::default(), Limits::default(), api, snapshot);
    let p = t.wait_for("edge-1  kernel 6.18.44");
    assert!(!p.contains("kernel ?"), "{p}");
    t.keys(&["q"]);
}

//! `bbrtop compare A B` end to end on recordings written by the recorder: the table, the JSON,
//! the SVG, time ranges of one recording, bad input, and a fleet's recordings in the hive layout
//! (read by DuckDB as one table, and compared through globs). Unprivileged: the recordings are of
//! an engine fed synthetic sockets.

mod support;

use bbrtop::compare::contrast;
use bbrtop::record::{Layout, RecordOptions, Recorder};
use bbrtop_core::seam::Now;
use bbrtop_core::seam::feed_dump;
use bbrtop_core::system::SystemInfo;
use bbrtop_core::testing::record;
use bbrtop_core::wire::Dump;
use bbrtop_engine::{Engine, EngineConfig};
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant, SystemTime};
use support::duckdb::{duckdb, duckdb_or_said};

/// 2026-11-23T03:00:00Z.
fn t0() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_402_800)
}

/// `polls` polls a second apart from `start`: `n` sockets of `cc` (cookies from `first`), each
/// with srtt `srtt_ms` + its index ms and 1 MB acked a second, to `peer(cookie)`.
fn write_to(
    rec: &mut Recorder,
    (start, polls): (SystemTime, u64),
    group: (&str, u64, u64, u32),
    peer: fn(u64) -> String,
) {
    write_groups(rec, (start, polls), &[group], peer);
}

/// [`write_to`] with several groups of sockets (cc, first cookie, sockets, srtt) at each poll.
fn write_groups(
    rec: &mut Recorder,
    (start, polls): (SystemTime, u64),
    groups: &[(&str, u64, u64, u32)],
    peer: fn(u64) -> String,
) {
    let mut e = Engine::new(EngineConfig::default());
    let t = Now { mono: Instant::now(), wall: start };
    for p in 0..polls {
        let now = t.after(Duration::from_secs(p));
        let sockets = groups
            .iter()
            .flat_map(|&(cc, first, n, srtt_ms)| {
                (first..first + n).map(move |c| {
                    record(c, cc)
                        .local(format!("10.0.0.1:{}", 40000 + c))
                        .peer(peer(c).as_str())
                        .srtt_us((srtt_ms + (c - first) as u32) * 1000)
                        .min_rtt_us(40_000)
                        .last_ack_recv_ms(0)
                        .bytes_sent(p * 1_010_000)
                        .bytes_acked(p * 1_000_000)
                        .bytes_retrans(p * 10_000)
                        .build()
                })
            })
            .collect();
        feed_dump(&mut e, Dump { sockets, ..Dump::default() }, now);
        rec.write(&e.tick(now)).unwrap();
    }
}

/// [`write_to`] the same peer for every socket.
fn write(rec: &mut Recorder, start: SystemTime, polls: u64, cc: &str, first: u64, n: u64, srtt_ms: u32) {
    write_to(rec, (start, polls), (cc, first, n, srtt_ms), |_| "10.0.0.2:5201".into());
}

fn recorder(dir: &Path) -> Recorder {
    Recorder::create(dir, RecordOptions::default(), &SystemInfo::default()).unwrap()
}

fn compare(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_bbrtop")).arg("compare").args(args).output().unwrap()
}

fn json(args: &[&str]) -> Value {
    let o = compare(&[args, &["--json"]].concat());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_slice(&o.stdout).unwrap()
}

/// The metric row of a group in the JSON.
fn metric<'a>(v: &'a Value, group: &Value, metric: &str) -> &'a Value {
    let g = v["groups"].as_array().unwrap().iter().find(|g| g["group"] == *group).expect("group");
    g["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == metric).expect("metric")
}

/// Recordings: A, 6 CUBIC sockets near 500 ms; B, 6 BBR sockets near 40 ms; both, A's polls and
/// then B's in one recording; few, 3 BBR sockets.
fn recordings(dir: &Path) {
    let mut a = recorder(&dir.join("a"));
    write(&mut a, t0(), 20, "cubic", 1, 6, 500);
    a.finish().unwrap();
    let mut b = recorder(&dir.join("b"));
    write(&mut b, t0(), 20, "bbr", 101, 6, 40);
    b.finish().unwrap();
    let mut both = recorder(&dir.join("both"));
    write(&mut both, t0(), 20, "cubic", 1, 6, 500);
    write(&mut both, t0() + Duration::from_secs(30), 20, "bbr", 101, 6, 40);
    both.finish().unwrap();
    let mut few = recorder(&dir.join("few"));
    write(&mut few, t0(), 20, "bbr", 201, 3, 40);
    few.finish().unwrap();
}

#[test]
fn compares_recordings_and_ranges_of_one() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    recordings(d);
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let plots = d.join("plots");
    let v = json(&[&p("a"), &p("b"), "--plot", plots.to_str().unwrap()]);
    let svg = plots.join("compare-srtt-cdf.svg");
    assert_eq!((v["a"]["sockets"].as_u64(), v["a"]["polls"].as_u64()), (Some(6), Some(20)));
    assert_eq!(v["a"]["from"], "2026-11-23T03:00:00.000Z");
    // CUBIC on A, BBR on B: a change of cc, a cc verdict, but an observed one.
    assert_eq!(
        v["a"]["ccs"],
        serde_json::json!({"cubic": {"sockets": 6, "socket_share": 1.0, "byte_share": 1.0}})
    );
    assert_eq!(v["b"]["ccs"]["bbr"]["sockets"], 6);
    let c = &v["contrast"];
    assert_eq!(
        (c["kind"].as_str(), c["cc_verdict"].as_bool(), c["observational"].as_bool()),
        (Some("cc_change"), Some(true), Some(true))
    );
    let all = serde_json::json!({"by": "all"});
    let p50 = metric(&v, &all, "srtt_p50_ms");
    // Nearest-rank medians of 500..505 and 40..45 ms.
    assert_eq!((p50["a"]["median"].as_f64(), p50["b"]["median"].as_f64()), (Some(502.0), Some(42.0)));
    assert_eq!(p50["diff"].as_f64(), Some(-460.0));
    assert!(p50["diff_ci"]["hi"].as_f64().unwrap() < 0.0, "{p50}");
    // 1 MB acked a second, every socket, both sides: the same goodput, no clear difference.
    let g = metric(&v, &all, "goodput_bits_per_sec");
    assert_eq!((g["a"]["median"].as_f64(), g["diff"].as_f64()), (Some(8e6), Some(0.0)));
    let r = metric(&v, &all, "retrans_ratio");
    assert!((r["a"]["median"].as_f64().unwrap() - 0.01 / 1.01).abs() < 1e-9, "{r}");
    // The SVG: a line per side and cc, in the cc's colours.
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<svg") && s.contains("A: cubic (6 sockets, 120 samples)"), "{}", &s[..200]);
    assert!(s.contains("B: bbr (6 sockets, 120 samples)") && s.contains("#1F77B4") && s.contains("#D62728"));

    // Two ranges of one recording give the same comparison.
    let r = json(&[&format!("{}@..+25s", p("both")), &format!("{}@2026-11-23T03:00:25Z..", p("both"))]);
    assert_eq!(r["a"]["polls"], 20);
    assert_eq!(r["b"]["from"], "2026-11-23T03:00:30.000Z");
    assert_eq!(r["groups"], v["groups"]);

    // The table says it in words.
    let o = compare(&[&p("a"), &p("b")]);
    let text = String::from_utf8(o.stdout).unwrap();
    let line = text.lines().find(|l| l.trim_start().starts_with("srtt p50")).unwrap();
    assert!(line.contains("-460.0ms") && line.ends_with("B better (lower)"), "{text}");
    assert!(text.contains("all sockets (A 6 sockets, B 6)") && text.contains("2000 resamples"), "{text}");
    assert!(text.contains("\nA ran cubic, B ran bbr: a cc verdict, but an observed one"), "{text}");
    assert!(text.contains("\nObservational: two recordings"), "{text}");

    // Three sockets a side: no interval, and the reason.
    let f = json(&[&p("a"), &p("few")]);
    let few = metric(&f, &all, "srtt_p50_ms");
    assert!(few["diff_ci"].is_null() && few["diff"].as_f64().is_some());
    assert_eq!(few["note"], "too few sockets (A 6, B 3; 5 a side needed)");
}

/// Issue 38's A/A test: two recordings of BBR (the "CUBIC" side's sysctl had failed), B's RTTs
/// 15 ms lower from time and neighbours. The difference is reported, with its interval, and the
/// comparison says both sides ran bbr: no cc verdict.
#[test]
fn an_a_a_test_of_one_cc_gives_no_cc_verdict() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for (name, srtt) in [("rec_bbr", 61), ("rec_cubic", 46)] {
        let mut r = recorder(&d.join(name));
        write(&mut r, t0(), 20, "bbr", 1, 8, srtt);
        r.finish().unwrap();
    }
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let v = json(&[&p("rec_bbr"), &p("rec_cubic")]);
    for side in ["a", "b"] {
        assert_eq!(
            v[side]["ccs"],
            serde_json::json!({"bbr": {"sockets": 8, "socket_share": 1.0, "byte_share": 1.0}})
        );
    }
    let c = &v["contrast"];
    assert_eq!(
        (c["kind"].as_str(), c["cc_verdict"].as_bool(), c["observational"].as_bool()),
        (Some("same_cc"), Some(false), Some(true))
    );
    assert_eq!(c["controls"], serde_json::json!([]));
    let p50 = metric(&v, &serde_json::json!({"by": "all"}), "srtt_p50_ms");
    assert_eq!((p50["diff"].as_f64(), p50["verdict"].as_str()), (Some(-15.0), Some("better")));
    let text = String::from_utf8(compare(&[&p("rec_bbr"), &p("rec_cubic")]).stdout).unwrap();
    let head: Vec<&str> = text.lines().take(6).collect();
    assert_eq!(
        &head[4..],
        [
            "Both sides ran bbr: differences are time and neighbours, not the cc (no cc verdict).",
            contrast::OBSERVATIONAL
        ],
        "{text}"
    );
    assert!(text.contains("\nWorse on B (not a cc verdict): none."), "{text}");
}

/// Reno replaced by BBR while a quarter of the sockets stayed CUBIC, 10 ms faster on B (time):
/// CUBIC is the control, its own B-A beside all sockets'.
#[test]
fn a_cc_that_kept_its_share_is_the_control() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for (name, changed, cubic_ms) in [("before", ("reno", 1, 18, 80), 60), ("after", ("bbr", 1, 18, 40), 50)]
    {
        let mut r = recorder(&d.join(name));
        write_groups(&mut r, (t0(), 20), &[changed, ("cubic", 101, 6, cubic_ms)], |_| "10.0.0.2:5201".into());
        r.finish().unwrap();
    }
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let v = json(&[&p("before"), &p("after")]);
    assert_eq!(v["a"]["ccs"]["cubic"]["socket_share"], 0.25);
    assert_eq!(v["contrast"]["kind"], "cc_change");
    let controls = v["contrast"]["controls"].as_array().unwrap();
    assert_eq!(controls.len(), 1, "{controls:?}");
    assert_eq!((controls[0]["cc"].as_str(), controls[0]["share_b"].as_f64()), (Some("cubic"), Some(0.25)));
    let p50 =
        controls[0]["metrics"].as_array().unwrap().iter().find(|m| m["metric"] == "srtt_p50_ms").unwrap();
    assert_eq!(p50, metric(&v, &serde_json::json!({"by": "cc", "name": "cubic"}), "srtt_p50_ms"));
    assert_eq!((p50["diff"].as_f64(), p50["verdict"].as_str()), (Some(-10.0), Some("better")));
    let text = String::from_utf8(compare(&[&p("before"), &p("after")]).stdout).unwrap();
    assert!(text.contains("\nControl: cc cubic ran on both sides (A 25%, B 25% of sockets)"), "{text}");
}

#[test]
fn bad_sides_are_one_line_errors() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    recordings(d);
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    std::fs::write(d.join("notes.txt"), "not a recording").unwrap();
    std::fs::create_dir(d.join("empty")).unwrap();
    let a = p("a");
    for (side, says) in [
        (p("notes.txt"), "not a recording"),
        (p("missing"), "no such file"),
        (p("empty"), "no complete chunk"),
        (format!("{a}@+10s..+5s"), "the range is empty"),
        (format!("{a}@+5s..+5s"), "the range is empty"),
        (format!("{a}@+1h.."), "outside the recording"),
        (format!("{a}@2026-11-22T00:00:00Z..2026-11-22T01:00:00Z"), "outside the recording"),
        (format!("{a}@later.."), "expected an RFC 3339 time"),
        (format!("{a}@..+10000000000000000000s"), "longer than 100 years"),
        (format!("{a}@+10000000000000000000s.."), "longer than 100 years"),
    ] {
        let o = compare(&[&a, &side]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{side}: {err}");
        assert!(err.starts_with("bbrtop: error: ") && err.contains(says), "{side}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(o.stdout.is_empty());
    }
}

/// With MaxMind's test databases, a row per peer AS and per peer country: AS15169 (1.0.0.0/24)
/// and GB (81.2.69.160/27) here, `unknown` where a database holds nothing. A database of the
/// wrong kind, or no database, is a one-line error naming the flag.
#[test]
fn compares_by_peer_as_and_country() {
    use bbrtop_core::testing::{MAXMIND_ASN_TEST, MAXMIND_COUNTRY_TEST};
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let (asn_db, country_db) = (d.join("asn.mmdb"), d.join("country.mmdb"));
    std::fs::write(&asn_db, MAXMIND_ASN_TEST).unwrap();
    std::fs::write(&country_db, MAXMIND_COUNTRY_TEST).unwrap();
    // Even cookies to AS15169, odd ones to GB.
    let peer = |c: u64| {
        if c.is_multiple_of(2) { format!("1.0.0.{c}:443") } else { format!("81.2.69.{}:443", 160 + c % 30) }
    };
    for (name, cc, first, srtt) in [("a", "cubic", 1, 500), ("b", "bbr", 101, 40)] {
        let mut r = recorder(&d.join(name));
        write_to(&mut r, (t0(), 20), (cc, first, 12, srtt), peer);
        r.finish().unwrap();
    }
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let (asn_flag, country_flag) = ("--peer-groups.asn.file", "--peer-groups.country.file");
    let v = json(&[&p("a"), &p("b"), asn_flag, &p("asn.mmdb"), country_flag, &p("country.mmdb")]);
    let groups: Vec<&Value> = v["groups"].as_array().unwrap().iter().map(|g| &g["group"]).collect();
    let by = |by: &str, name: &str| serde_json::json!({"by": by, "name": name});
    for g in [by("asn", "AS15169"), by("asn", "unknown"), by("country", "GB"), by("country", "unknown")] {
        assert!(groups.contains(&&g), "{g} among {groups:?}");
    }
    let google = metric(&v, &by("asn", "AS15169"), "srtt_p50_ms");
    assert_eq!((google["a"]["sockets"].as_u64(), google["b"]["sockets"].as_u64()), (Some(6), Some(6)));
    assert!(google["diff"].as_f64().unwrap() < -400.0, "{google}");
    let text =
        String::from_utf8(compare(&[&p("a"), &p("b"), country_flag, &p("country.mmdb")]).stdout).unwrap();
    assert!(text.contains("country GB (A 6 sockets, B 6)"), "{text}");
    assert!(!text.contains("AS "), "no AS rows without the AS database: {text}");

    for (flag, file, says) in [
        (asn_flag, "country.mmdb", "a GeoLite2-Country database, not an ASN (or ISP) database"),
        (country_flag, "asn.mmdb", "not a Country (or City) database"),
        (asn_flag, "missing.mmdb", "missing.mmdb"),
    ] {
        let o = compare(&[&p("a"), &p("b"), flag, &p(file)]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{flag} {file}: {err}");
        assert!(err.starts_with(&format!("bbrtop: error: {flag} ")) && err.contains(says), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

/// A canary against the rest: several hosts' recordings on a side (comma-separated), a row per
/// host, each socket kept apart by its recording (the hosts' cookies collide here), and the
/// groups worse on B named first. The canary's RTTs are higher: it regressed.
#[test]
fn a_canary_against_several_hosts() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    for (name, srtt) in [("edge-2", 40), ("edge-3", 42), ("edge-4", 41), ("canary", 90)] {
        let mut r = recorder(&d.join(name));
        // The same cookies on every host.
        write(&mut r, t0(), 20, "bbr", 1, 6, srtt);
        r.finish().unwrap();
    }
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let rest = format!("{},{},{}", p("edge-2"), p("edge-3"), p("edge-4"));
    let v = json(&[&rest, &p("canary")]);
    assert_eq!(v["a"]["hosts"], serde_json::json!(["edge-2", "edge-3", "edge-4"]));
    assert_eq!((v["a"]["sockets"].as_u64(), v["a"]["polls"].as_u64()), (Some(18), Some(60)));
    let host = |h: &str| serde_json::json!({"by": "host", "name": h});
    let edge3 = metric(&v, &host("edge-3"), "srtt_p50_ms");
    assert_eq!((edge3["a"]["sockets"].as_u64(), edge3["b"]["sockets"].as_u64()), (Some(6), Some(0)));
    let all = metric(&v, &serde_json::json!({"by": "all"}), "srtt_p50_ms");
    assert_eq!(all["verdict"], "worse", "{all}");
    assert_eq!(v["regressed"][0]["group"], serde_json::json!({"by": "all"}));
    assert!(v["regressed"][0]["metrics"].as_array().unwrap().contains(&serde_json::json!("srtt_p95_ms")));
    // BBR on every host: the canary is worse, and that is no verdict on BBR.
    assert_eq!(
        (v["contrast"]["kind"].as_str(), v["contrast"]["cc_verdict"].as_bool()),
        (Some("same_cc"), Some(false))
    );
    let text = String::from_utf8(compare(&[&rest, &p("canary")]).stdout).unwrap();
    assert!(
        text.contains("Worse on B (not a cc verdict): all sockets (srtt p50, srtt p95, srtt p99, inflation)"),
        "{text}"
    );
    assert!(text.contains("\nBoth sides ran bbr: differences are time and neighbours, not the cc"), "{text}");
    assert!(text.contains("host canary (A 0 sockets, B 6)"), "{text}");
    let o = compare(&[&format!("{rest},"), &p("canary")]);
    assert_eq!(o.status.code(), Some(2), "{}", String::from_utf8_lossy(&o.stderr));
}

/// 2026-11-23T23:59:50Z: ten seconds before midnight.
fn before_midnight() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_478_390)
}

/// What each host of the fleet runs: (host, cc, first cookie, sockets, srtt ms).
const FLEET: [(&str, &str, u64, u64, u32); 4] = [
    ("canary", "bbr", 1, 5, 90),
    ("edge-1", "bbr", 1, 6, 40),
    ("edge-1", "cubic", 101, 2, 60),
    ("edge-2", "cubic", 1, 7, 42),
];
/// Polls per host, a second apart from [`before_midnight`], in chunks of 10 s: the first chunk
/// (begun on the 23rd) runs past midnight, the other two are on the 24th.
const FLEET_POLLS: u64 = 25;

/// Three hosts' recordings in the hive layout under `dir`, as each host's `bbrtop record DIR
/// --record.layout hive` writes them and `rclone copy` brings them together (their cookies
/// collide).
fn fleet(dir: &Path) {
    for host in ["canary", "edge-1", "edge-2"] {
        let opts = RecordOptions {
            chunk: Duration::from_secs(10),
            layout: Layout::Hive { host: host.into() },
            ..RecordOptions::default()
        };
        let mut rec = Recorder::create(dir, opts, &SystemInfo::default()).unwrap();
        let groups: Vec<_> = FLEET.iter().filter(|f| f.0 == host).map(|f| (f.1, f.2, f.3, f.4)).collect();
        write_groups(&mut rec, (before_midnight(), FLEET_POLLS), &groups, |_| "10.0.0.2:5201".into());
        rec.finish().unwrap();
    }
}

/// Issue 29's test: a directory of three hosts' recordings answers a DuckDB query grouped by
/// host and cc, `host` and `date` read from the partitions' paths; each host's sockets, rows
/// (every socket moves at every poll: a row each) and days as written.
#[test]
fn a_fleets_recordings_read_as_one_table_in_duckdb() {
    let Some(python) = duckdb_or_said() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    fleet(&tmp.path().join("fleet"));
    let got = duckdb(
        &python,
        tmp.path(),
        "SELECT host, cc, count(DISTINCT cookie) AS sockets, count(*) AS rows, min(date), max(date) \
         FROM read_parquet('fleet/**/*.sockets.parquet', hive_partitioning = true, union_by_name = true) \
         GROUP BY ALL ORDER BY ALL",
    );
    let want: Vec<String> = FLEET
        .iter()
        .map(|&(host, cc, _, n, _)| format!("{host}\t{cc}\t{n}\t{}\t2026-11-23\t2026-11-24", n * FLEET_POLLS))
        .collect();
    assert_eq!(got, want);
    let polls = duckdb(
        &python,
        tmp.path(),
        "SELECT host, date, count(*) FROM read_parquet('fleet/**/*.polls.parquet', hive_partitioning = true) \
         GROUP BY ALL ORDER BY ALL",
    );
    let want: Vec<String> = ["canary", "edge-1", "edge-2"]
        .iter()
        .flat_map(|h| [format!("{h}\t2026-11-23\t10"), format!("{h}\t2026-11-24\t15")])
        .collect();
    assert_eq!(polls, want, "a chunk's polls in the day of its first: 23:59:50 to 23:59:59, then the rest");
}

/// A side may be a glob over a fleet's trees, a comma-separated list of them, or the fleet's
/// directory: each host's recording apart, named by its host= partition. A glob that matches
/// nothing is a one-line error naming it.
#[test]
fn a_side_as_a_glob_over_a_fleet() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().join("fleet");
    fleet(&d);
    let p = |s: &str| d.join(s).to_str().unwrap().to_string();
    let v = json(&[&p("host=edge-*"), &p("host=canary")]);
    assert_eq!(v["a"]["hosts"], serde_json::json!(["edge-1", "edge-2"]));
    assert_eq!(v["b"]["hosts"], serde_json::json!(["canary"]));
    assert_eq!((v["a"]["sockets"].as_u64(), v["a"]["polls"].as_u64()), (Some(15), Some(2 * FLEET_POLLS)));
    let listed = json(&[&format!("{},{}", p("host=edge-1"), p("host=edge-2")), &p("host=canary")]);
    assert_eq!(listed["a"]["hosts"], v["a"]["hosts"]);
    assert_eq!(listed["groups"], v["groups"], "the same comparison");
    let whole = json(&[d.to_str().unwrap(), &format!("{}@+10s..", p("host=can?ry"))]);
    assert_eq!(whole["a"]["hosts"], serde_json::json!(["canary", "edge-1", "edge-2"]));
    assert_eq!(whole["b"]["polls"].as_u64(), Some(FLEET_POLLS - 10), "the range applies to each match");
    let o = compare(&[&p("host=core-*"), &p("host=canary")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(err.contains("host=core-*: no recording matches") && err.lines().count() == 1, "{err}");
    // The fleet's directory is not one recording.
    let o =
        Command::new(env!("CARGO_BIN_EXE_bbrtop")).args(["replay", d.to_str().unwrap()]).output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("3 hosts' recordings (host=canary, host=edge-1, host=edge-2)"), "{err}");
}

/// Databases of the test's own networks, written by a real writer (mmdb-writer), as the lab's
/// populations will be mapped: each block's sockets in their AS's and country's rows.
#[test]
fn compares_by_as_and_country_from_databases_a_real_writer_made() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let asn = serde_json::json!({"database_type": "bbrtop-lab-ASN", "networks": {
        "10.61.0.0/16": {"autonomous_system_number": 64501, "autonomous_system_organization": "Lab mobile"},
        "10.62.0.0/16": {"autonomous_system_number": 64502, "autonomous_system_organization": "Lab distant"}}});
    let country = serde_json::json!({"database_type": "bbrtop-lab-Country", "networks": {
        "10.61.0.0/16": {"country": {"iso_code": "BR"}},
        "10.62.0.0/16": {"country": {"iso_code": "AU"}}}});
    if !support::mmdb_write(&d.join("asn.mmdb"), &asn)
        || !support::mmdb_write(&d.join("country.mmdb"), &country)
    {
        return;
    }
    // A third of the peers in each block, a third in neither.
    let peer = |c: u64| match c % 3 {
        0 => format!("10.61.0.{c}:443"),
        1 => format!("10.62.0.{c}:443"),
        _ => format!("10.99.0.{c}:443"),
    };
    for (name, cc, first, srtt) in [("a", "cubic", 1, 500), ("b", "bbr", 101, 40)] {
        let mut r = recorder(&d.join(name));
        write_to(&mut r, (t0(), 20), (cc, first, 15, srtt), peer);
        r.finish().unwrap();
    }
    let p = |name: &str| d.join(name).to_str().unwrap().to_string();
    let v = json(&[
        &p("a"),
        &p("b"),
        "--peer-groups.asn.file",
        &p("asn.mmdb"),
        "--peer-groups.country.file",
        &p("country.mmdb"),
    ]);
    let by = |by: &str, name: &str| serde_json::json!({"by": by, "name": name});
    for g in [
        by("asn", "AS64501"),
        by("asn", "AS64502"),
        by("asn", "unknown"),
        by("country", "BR"),
        by("country", "AU"),
    ] {
        let m = metric(&v, &g, "srtt_p50_ms");
        assert_eq!((m["a"]["sockets"].as_u64(), m["b"]["sockets"].as_u64()), (Some(5), Some(5)), "{g}");
    }
}

/// A side's pattern that would stand for more paths than a comparison reads is a one-line
/// error before any is opened (on main `/*/*/*/*` walked the filesystem: 26 s and 84 MB before
/// its first error).
#[test]
fn a_glob_past_its_bound_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    // 65 × 65 directories: more than the 4096 paths a segment may stand for.
    for i in 0..65 {
        for j in 0..65 {
            std::fs::create_dir_all(d.join(format!("{i}/{j}"))).unwrap();
        }
    }
    let wide = d.join("*/*");
    let o = compare(&[wide.to_str().unwrap(), d.join("0/0").to_str().unwrap()]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("*/*: the pattern matches more than 4096 paths"), "{err}");
}

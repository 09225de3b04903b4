use super::host::bbr_module;
use super::*;

fn good() -> Readings {
    Readings {
        kernel: "6.18.44".into(),
        available_cc: Some(vec!["reno".into(), "bbr".into(), "cubic".into()]),
        cc: Some("bbr".into()),
        default_qdisc: Some("fq".into()),
        bbr_module: Some(BbrModule::Builtin),
        bbr: Some(bbrtop_core::model::HostBbr::detect(&["bbr".into()], None, Some(v1_struct()))),
        btf: true,
        caps: Some(CapSet(u64::MAX)),
        rmem_max: Some(64 << 20),
        wmem_max: Some(64 << 20),
        tcp_rmem: Some([4096, 131072, 64 << 20]),
        tcp_wmem: Some([4096, 16384, 64 << 20]),
        window_scaling: Some(1),
        fastopen: Some(1),
        min_rtt_wlen: Some(300),
        live: Some(Live { bbr_active: 2, bbr_pacing: 2, bbr_total: 3 }),
        interfaces: Some(vec![]),
        qdisc_kinds: super::sched::Kinds { fq: Some(true), fq_codel: Some(true) },
    }
}

fn v1_struct() -> bbrtop_core::model::StructBbr {
    bbrtop_core::model::StructBbr::from_members(["min_rtt_us", "bw", "lt_use_bw", "mode", "cycle_idx"])
}

fn status_of(checks: &[Check], name: &str) -> Status {
    checks.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no check {name}")).status
}

#[test]
fn a_good_host_passes() {
    let c = checks(&good(), Bdp::default());
    assert_eq!(exit_code(&c), 0, "{c:#?}");
    let v = c.iter().find(|c| c.name == "bbr_version").expect("which BBR");
    assert_eq!(v.value, "bbr v1 (BTF: struct bbr v1 layout)");
}

#[test]
fn each_problem_is_flagged_with_a_fix() {
    type Edit = fn(&mut Readings);
    let cases: &[(&str, Edit, &str, Status)] = &[
        ("old kernel", |r| r.kernel = "4.4.0".into(), "kernel", Status::Fail),
        ("no ebpf kernel", |r| r.kernel = "5.4.0".into(), "kernel", Status::Warn),
        ("no socket storage for tracing", |r| r.kernel = "5.10.0".into(), "kernel", Status::Warn),
        ("cubic default", |r| r.cc = Some("cubic".into()), "tcp_congestion_control", Status::Warn),
        (
            "no bbr",
            |r| r.available_cc = Some(vec!["cubic".into()]),
            "tcp_available_congestion_control",
            Status::Fail,
        ),
        ("pfifo", |r| r.default_qdisc = Some("pfifo_fast".into()), "default_qdisc", Status::Info),
        (
            "pfifo old",
            |r| {
                r.default_qdisc = Some("pfifo_fast".into());
                r.kernel = "4.10.0".into()
            },
            "default_qdisc",
            Status::Fail,
        ),
        ("module not loaded", |r| r.bbr_module = Some(BbrModule::Loadable), "tcp_bbr", Status::Warn),
        ("no btf", |r| r.btf = false, "btf", Status::Warn),
        (
            "bbr renamed, nothing tells",
            |r| r.bbr = Some(bbrtop_core::model::HostBbr::detect(&["bbr".into(), "bbr1".into()], None, None)),
            "bbr_version",
            Status::Info,
        ),
        ("no caps", |r| r.caps = Some(CapSet(0)), "capabilities", Status::Info),
        ("small rmem_max", |r| r.rmem_max = Some(212992), "net.core.rmem_max", Status::Warn),
        ("small tcp_wmem", |r| r.tcp_wmem = Some([4096, 16384, 4194304]), "net.ipv4.tcp_wmem", Status::Warn),
        ("no wscale", |r| r.window_scaling = Some(0), "net.ipv4.tcp_window_scaling", Status::Fail),
        (
            "not pacing",
            |r| r.live = Some(Live { bbr_active: 2, bbr_pacing: 1, bbr_total: 2 }),
            "live",
            Status::Fail,
        ),
    ];
    for (what, edit, name, want) in cases {
        let mut r = good();
        edit(&mut r);
        let c = checks(&r, Bdp::default());
        assert_eq!(status_of(&c, name), *want, "{what}");
        let ck = c.iter().find(|c| c.name == *name).unwrap();
        if *want >= Status::Warn && *name != "kernel" && *name != "live" {
            assert!(!ck.fix.is_empty(), "{what}: a warning without a fix");
        }
    }
}

#[test]
fn bdp_sizes_buffers() {
    // 1 Gbit x 100 ms = 12.5 MB; 2x that is 25 MB: 32 MB passes, 16 MB does not.
    assert_eq!(Bdp::default().bytes(), 12_500_000);
    let mut r = good();
    r.rmem_max = Some(16 << 20);
    let c = checks(&r, Bdp::default());
    let ck = c.iter().find(|c| c.name == "net.core.rmem_max").unwrap();
    assert_eq!(ck.status, Status::Warn);
    assert_eq!(ck.fix[0], "sysctl -w net.core.rmem_max=\"25000000\"");
    let small = Bdp { rate_bits_per_sec: 100e6, rtt_seconds: 0.02 };
    assert_eq!(status_of(&checks(&r, small), "net.core.rmem_max"), Status::Ok);
    // The largest path the flags take needs more than the sysctl holds: capped, and said.
    let huge = Bdp { rate_bits_per_sec: MAX_RATE, rtt_seconds: 10.0 };
    let c = checks(&r, huge);
    let ck = c.iter().find(|c| c.name == "net.core.rmem_max").unwrap();
    assert_eq!(ck.fix[0], "sysctl -w net.core.rmem_max=\"2147483647\"");
    assert!(ck.why.contains("capped at 2147483647"), "{}", ck.why);
}

#[test]
fn rates_and_versions() {
    assert_eq!(parse_rate("1gbit"), Ok(1e9));
    assert_eq!(parse_rate("100Mbit/s"), Ok(100e6));
    assert_eq!(parse_rate("500kbit"), Ok(500e3));
    assert_eq!(parse_rate("2500"), Ok(2500.0));
    assert!(parse_rate("-1gbit").is_err());
    assert!(parse_rate("fast").is_err());
    // 308 nines made an infinite rate and a buffer of u64::MAX bytes.
    let e = parse_rate(&format!("{}gbit", "9".repeat(308))).unwrap_err();
    assert!(e.contains("above 10tbit"), "{e}");
    assert_eq!(parse_rate("10tbit"), Ok(MAX_RATE));
    assert_eq!(kernel_version("6.18.44-fc-v669"), Some((6, 18)));
    assert_eq!(kernel_version("4.9.0"), Some((4, 9)));
    assert_eq!(kernel_version(""), None);
}

#[test]
fn module_detection() {
    let bbr = vec!["bbr".to_string()];
    assert_eq!(bbr_module(Some(&bbr), None, None), BbrModule::Builtin);
    assert_eq!(bbr_module(Some(&bbr), Some("tcp_bbr 20480 3 - Live 0x0\n"), None), BbrModule::Loaded);
    assert_eq!(bbr_module(Some(&[]), None, Some("kernel/net/ipv4/tcp_bbr.ko:")), BbrModule::Loadable);
    assert_eq!(bbr_module(None, None, None), BbrModule::Missing);
}

#[test]
fn namespace_differences() {
    let host = checks(&good(), Bdp::default());
    let mut r = good();
    r.cc = Some("cubic".into());
    let ns = checks(&r, Bdp::default());
    let d = netns_differences(&host, &ns);
    assert_eq!(d.len(), 1);
    assert_eq!(d[0].name, "netns:tcp_congestion_control");
    assert_eq!(d[0].value, "host bbr / netns cubic");
    assert!(d[0].fix[0].starts_with("ip netns exec <ns> sysctl -w net.ipv4.tcp_congestion_control"));
}

/// `ip -j link show` and `tc -s -j qdisc show` recorded in a namespace on this project's machine
/// (iproute2 6.1): htb with a pfifo leaf (v0, clsact too), tbf (v1), mq with the kernel's
/// pfifo_fast children (v2), pfifo_fast (v3), a veth's noqueue (v4), v5 down.
const LINKS: &str = include_str!("testdata/ip_link_recorded.json");
const QDISCS: &str = include_str!("testdata/tc_qdisc_recorded.json");

fn qdisc_checks(links: &str, qdiscs: &str, default_qdisc: &str) -> Vec<Check> {
    let ifaces = super::qdisc::parse(links, qdiscs).expect("parses");
    super::qdisc::checks(Some(&ifaces), Some((6, 18)), Some(default_qdisc), Some("fq"))
}

fn find<'a>(c: &'a [Check], name: &str) -> &'a Check {
    c.iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no {name} in {c:#?}"))
}

#[test]
fn qdiscs_recorded() {
    let c = qdisc_checks(LINKS, QDISCS, "pfifo_fast");
    let names: Vec<&str> = c.iter().map(|c| c.name.as_str()).collect();
    // Loopback and the interface that is down are left out.
    assert_eq!(names, ["qdisc:v1", "qdisc:v0", "qdisc:v3", "qdisc:v2", "qdisc:v4"]);
    let htb = find(&c, "qdisc:v0");
    assert_eq!((htb.status, htb.value.as_str()), (Status::Info, "htb: pfifo"), "clsact is not egress");
    assert_eq!(htb.fix, ["tc qdisc replace dev v0 parent 1:10 fq"]);
    let tbf = find(&c, "qdisc:v1");
    assert_eq!((tbf.status, tbf.value.as_str()), (Status::Info, "tbf"));
    assert_eq!(tbf.fix, ["tc qdisc add dev v1 parent 2:1 fq"]);
    let mq = find(&c, "qdisc:v2");
    assert_eq!((mq.status, mq.value.as_str()), (Status::Info, "mq: 2 x pfifo_fast"));
    assert_eq!(mq.fix.len(), 2);
    assert_eq!(find(&c, "qdisc:v3").value, "pfifo_fast");
    assert_eq!(find(&c, "qdisc:v4").status, Status::Info);
    assert!(find(&c, "qdisc:v4").why.contains("No queue"));
    // With default_qdisc=fq, a pfifo_fast is a leftover from before the sysctl: a warning.
    let c = qdisc_checks(LINKS, QDISCS, "fq");
    assert_eq!(find(&c, "qdisc:v3").status, Status::Warn);
    assert_eq!(find(&c, "qdisc:v2").status, Status::Warn);
    assert_eq!(find(&c, "qdisc:v0").status, Status::Info, "pfifo under htb was put there on purpose");
}

/// mq with fq children, in the shape `tc -s -j qdisc show` prints fq (iproute2's q_fq.c puts its
/// extended stats, `throttled` among them, in the qdisc's object). Written by hand: this kernel has
/// no fq to record.
const MQ_FQ: &str = r#"[{"kind":"mq","handle":"1:","dev":"eth0","root":true,"options":{},"bytes":10,"packets":1},
 {"kind":"fq","handle":"0:","dev":"eth0","parent":"1:1","options":{"limit":10000,"flow_limit":100},"bytes":5,"flows":12,"inactive":9,"throttled":2},
 {"kind":"fq","handle":"0:","dev":"eth0","parent":"1:2","options":{"limit":10000,"flow_limit":100},"bytes":5,"flows":3,"inactive":3,"throttled":1},
 {"kind":"fq_codel","handle":"0:","dev":"eth0","parent":"1:3","options":{}}]"#;
const ETH0: &str = r#"[{"ifname":"eth0","flags":["BROADCAST","MULTICAST","UP","LOWER_UP"]}]"#;

#[test]
fn qdiscs_fq_children() {
    let c = qdisc_checks(ETH0, MQ_FQ, "fq");
    let q = find(&c, "qdisc:eth0");
    assert_eq!(q.status, Status::Warn, "fq on two of three queues");
    assert_eq!(q.value, "mq: 2 x fq, fq_codel (throttled 3)");
    assert_eq!(q.fix, ["tc qdisc replace dev eth0 parent 1:3 fq"]);
    let all_fq = MQ_FQ.replace(r#""fq_codel""#, r#""fq""#);
    let q = &qdisc_checks(ETH0, &all_fq, "fq")[0];
    assert_eq!((q.status, q.value.as_str()), (Status::Ok, "mq: 3 x fq (throttled 3)"));
    // Before 4.13 BBR needs fq.
    let ifaces = super::qdisc::parse(LINKS, QDISCS).unwrap();
    let old = super::qdisc::checks(Some(&ifaces), Some((4, 9)), Some("pfifo_fast"), Some("fq"));
    assert!(old.iter().all(|c| c.status == Status::Fail || c.value == "noqueue"), "{old:#?}");
}

/// A kernel without fq (this project's machine: `# CONFIG_NET_SCH_FQ is not set`) is offered
/// fq_codel where it has it, and where it has neither, no `tc` line at all: `tc` would answer
/// "Specified qdisc kind is unknown" to every one (on main doctor printed fq lines regardless).
#[test]
fn only_a_qdisc_the_kernel_has_is_recommended() {
    let ifaces = super::qdisc::parse(LINKS, QDISCS).unwrap();
    let with = |pacer| super::qdisc::checks(Some(&ifaces), Some((6, 18)), Some("pfifo_fast"), pacer);
    let c = with(Some("fq_codel"));
    assert_eq!(find(&c, "qdisc:v0").fix, ["tc qdisc replace dev v0 parent 1:10 fq_codel"]);
    assert_eq!(find(&c, "qdisc:v1").fix, ["tc qdisc add dev v1 parent 2:1 fq_codel"]);
    assert!(find(&c, "qdisc:v1").why.contains("This kernel has no fq"));
    let c = with(None);
    assert!(c.iter().all(|c| c.fix.is_empty()), "{c:#?}");
    assert!(find(&c, "qdisc:v3").why.contains("neither fq nor fq_codel"), "{c:#?}");
    // The same readings through every check, with this machine's config.
    let config = include_str!("testdata/config_qdiscs_recorded.txt");
    let in_use: Vec<&str> = ifaces.iter().flat_map(|i| &i.qdiscs).map(|q| q.kind.as_str()).collect();
    let mut r = good();
    r.default_qdisc = Some("pfifo_fast".into());
    r.interfaces = Some(ifaces.clone());
    r.qdisc_kinds = super::sched::Kinds::read(
        super::sched::Sources { config: Some(config), ..Default::default() },
        &in_use,
    );
    let all = checks(&r, Bdp::default());
    let fq_lines: Vec<&String> = all.iter().flat_map(|c| &c.fix).filter(|f| f.contains("fq")).collect();
    assert!(fq_lines.is_empty(), "{fq_lines:?}");
    assert!(find(&all, "default_qdisc").why.contains("neither fq nor fq_codel"));
    r.qdisc_kinds.fq_codel = Some(true);
    let all = checks(&r, Bdp::default());
    let fix = &find(&all, "default_qdisc").fix;
    assert!(fix[0].contains("net.core.default_qdisc=\"fq_codel\""), "{fix:?}");
}

#[test]
fn qdiscs_unreadable_or_malformed() {
    let c = super::qdisc::checks(None, Some((6, 18)), None, Some("fq"));
    assert_eq!((c[0].name.as_str(), c[0].value.as_str()), ("qdiscs", "unknown"));
    assert!(super::qdisc::parse("[", "[]").unwrap_err().starts_with("ip -j link show"));
    assert!(super::qdisc::parse("[]", "{}").is_err());
}

#[test]
fn namespace_qdiscs_are_their_own() {
    let mut r = good();
    r.interfaces = Some(super::qdisc::parse(LINKS, QDISCS).unwrap());
    let ns = checks(&r, Bdp::default());
    let host = checks(&good(), Bdp::default());
    let d = netns_checks(&host, &ns);
    assert!(d.iter().any(|c| c.name == "netns:qdisc:v0"), "{d:#?}");
    assert!(!d.iter().any(|c| c.name.starts_with("netns:netns")));
}

/// The ebpf:* checks follow the feature catalog, as `bbrtop check` and the kernel matrix do:
/// Debian 11's 5.10 carries only the experiment, 12's 6.1 everything, BBR's state once tcp_bbr
/// loads.
#[test]
fn each_ebpf_feature_against_the_kernel() {
    let of = |kernel: &str, module| {
        let r = Readings { kernel: kernel.into(), bbr_module: Some(module), ..good() };
        checks(&r, Bdp::default())
    };
    let value = |c: &[Check], name: &str| c.iter().find(|c| c.name == name).map(|c| c.value.clone()).unwrap();
    let old = of("5.10.0-46-amd64", BbrModule::Loaded);
    for f in ["alert", "bbr_state", "walk", "closed_flows", "responses"] {
        assert_eq!(value(&old, &format!("ebpf:{f}")), "off", "{old:#?}");
    }
    assert_eq!(value(&old, "ebpf:experiment"), "on");
    let kernel = old.iter().find(|c| c.name == "kernel").unwrap();
    assert!(kernel.why.contains("alert, bbr_state, walk, closed_flows, responses"), "{kernel:?}");
    let bookworm = of("6.1.0-56-amd64", BbrModule::Loadable);
    assert_eq!(value(&bookworm, "ebpf:bbr_state"), "waits for tcp_bbr");
    assert_eq!(value(&bookworm, "ebpf:responses"), "on");
    assert_eq!(status_of(&bookworm, "kernel"), Status::Ok);
    let c = of("6.18.44", BbrModule::Builtin);
    assert!(c.iter().filter(|c| c.name.starts_with("ebpf:")).all(|c| c.value == "on"), "{c:#?}");
}

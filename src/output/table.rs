//! The aligned table `bbrtop snapshot` prints: one row per socket, ss-like units.

use bbrtop_core::snapshot::SocketView;
use bbrtop_core::units::{bitrate, micros, opt};
use std::io::Write;

/// Column headers, in order.
pub const COLUMNS: [&str; 18] = [
    "LOCAL", "PEER", "STATE", "CC", "PHASE", "BBR_BW", "BBR_MRTT", "P_GAIN", "C_GAIN", "SRTT", "MINRTT",
    "INFL", "PACING", "DELIVERY", "CWND", "RETRANS", "LIMIT", "ALERT",
];

/// The cells of one socket's row.
pub fn row(s: &SocketView) -> [String; 18] {
    let r = &s.record;
    let i = &r.tcp_info;
    let d = &s.derived;
    let gain = |g: f64| format!("{g:.2}");
    [
        r.local.to_string(),
        r.peer.to_string(),
        r.state.name().to_string(),
        r.cc_name().to_string(),
        opt(d.phase, |p| p.label().to_string()),
        opt(r.bbr, |b| bitrate(b.bw_bytes_per_sec as f64)),
        opt(r.bbr, |b| micros(b.min_rtt_us)),
        opt(r.bbr, |b| gain(b.pacing_gain)),
        opt(r.bbr, |b| gain(b.cwnd_gain)),
        opt(i.srtt_us(), micros),
        opt(i.min_rtt_us(), micros),
        opt(d.inflation_ratio, |x| format!("{x:.2}x")),
        opt(i.pacing_rate_bytes_per_sec(), |v| bitrate(v as f64)),
        opt(i.delivery_rate_bytes_per_sec(), |v| bitrate(v as f64)),
        opt(i.snd_cwnd_segs(), |v| v.to_string()),
        opt(i.total_retrans_segs(), |v| v.to_string()),
        opt(d.limited_by, |l| l.label().to_string()),
        if d.alert_firing {
            "FIRING".into()
        } else if d.inflated {
            "inflated".into()
        } else {
            "-".into()
        },
    ]
}

/// Writes the header and one aligned row per socket.
pub fn write<W: Write>(w: &mut W, sockets: &[&SocketView]) -> std::io::Result<()> {
    let rows: Vec<[String; 18]> = sockets.iter().map(|s| row(s)).collect();
    let mut width = COLUMNS.map(str::len);
    for r in &rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.len());
        }
    }
    let line = |w: &mut W, cells: &[&str]| -> std::io::Result<()> {
        let mut out = String::new();
        for (i, (c, wd)) in cells.iter().zip(width).enumerate() {
            if i + 1 == cells.len() {
                out.push_str(c);
            } else {
                out.push_str(&format!("{c:<wd$}  "));
            }
        }
        writeln!(w, "{}", out.trim_end())
    };
    line(w, &COLUMNS)?;
    for r in &rows {
        line(w, &r.each_ref().map(String::as_str))?;
    }
    Ok(())
}

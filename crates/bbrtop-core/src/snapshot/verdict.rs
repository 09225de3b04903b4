//! Is BBR hurting? One line per congestion control against a reference (CUBIC), in words, from
//! the per-cc aggregates: the guides' RTT comparison next to the rollout's main risks,
//! retransmits and a starved CUBIC.

use super::aggregate::CcAggregate;
use crate::units::percent;

/// The congestion control the others are judged against.
pub const REFERENCE: &str = "cubic";

/// "bbr: 0.40x cubic's p95 srtt, 3.1x its retransmit ratio (1.2% against 0.39%), 62% of the
/// goodput", or None when either cc has no aggregate. Each part needs both values; a part
/// missing one is left out, never guessed.
pub fn verdict(by_cc: &[CcAggregate], cc: &str, reference: &str) -> Option<String> {
    let get = |name: &str| by_cc.iter().find(|a| a.cc == name);
    let (a, r) = (get(cc)?, get(reference)?);
    let mut parts = Vec::new();
    if let (Some(x), Some(y)) = (a.srtt_p95_us, r.srtt_p95_us.filter(|&y| y > 0)) {
        parts.push(format!("{:.2}x {reference}'s p95 srtt", f64::from(x) / f64::from(y)));
    }
    let ratio = |g: &CcAggregate| g.recent.and_then(|r| r.retrans_ratio);
    match (ratio(a), ratio(r)) {
        (Some(x), Some(y)) if y > 0.0 => {
            parts.push(format!("{:.1}x its retransmit ratio ({} against {})", x / y, percent(x), percent(y)))
        }
        (Some(x), Some(_)) if x > 0.0 => {
            parts.push(format!("retransmits {} where {reference} has none", percent(x)))
        }
        (Some(_), Some(_)) => parts.push("no retransmits on either".to_string()),
        _ => {}
    }
    if let Some(share) = a.recent.and_then(|r| r.goodput_share) {
        parts.push(format!("{} of the goodput", percent(share)));
    }
    (!parts.is_empty()).then(|| format!("{cc}: {}", parts.join(", ")))
}

/// A verdict for every cc but the reference, when the reference is there.
pub fn all(by_cc: &[CcAggregate]) -> Vec<String> {
    by_cc.iter().filter(|a| a.cc != REFERENCE).filter_map(|a| verdict(by_cc, &a.cc, REFERENCE)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::aggregate::Recent;

    fn agg(cc: &str, p95: u32, retrans: Option<f64>, share: f64) -> CcAggregate {
        CcAggregate {
            cc: cc.into(),
            sockets: 1,
            srtt_p95_us: Some(p95),
            recent: Some(Recent {
                seconds: 60.0,
                retrans_ratio: retrans,
                goodput_share: Some(share),
                ..Recent::default()
            }),
            ..CcAggregate::default()
        }
    }

    #[test]
    fn in_words() {
        let v = [agg("bbr", 20_000, Some(0.031), 0.62), agg("cubic", 50_000, Some(0.01), 0.38)];
        assert_eq!(
            verdict(&v, "bbr", "cubic").unwrap(),
            "bbr: 0.40x cubic's p95 srtt, 3.1x its retransmit ratio (3.1% against 1.0%), 62% of the goodput"
        );
        assert_eq!(all(&v), vec![verdict(&v, "bbr", "cubic").unwrap()]);
        let v = [agg("bbr", 20_000, Some(0.004), 0.5), agg("cubic", 50_000, Some(0.0), 0.5)];
        assert!(verdict(&v, "bbr", "cubic").unwrap().contains("retransmits 0.40% where cubic has none"));
        let v = [agg("bbr", 20_000, None, 1.0), agg("cubic", 50_000, None, 0.0)];
        assert_eq!(verdict(&v, "bbr", "cubic").unwrap(), "bbr: 0.40x cubic's p95 srtt, 100% of the goodput");
        assert_eq!(verdict(&v[..1], "bbr", "cubic"), None, "no cubic, no verdict");
    }
}

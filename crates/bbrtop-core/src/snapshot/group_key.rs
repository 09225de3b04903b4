//! The key every per-group count is kept, compared, sorted and summed by: a congestion control's
//! sockets towards one peer group, AS and country, in one experiment arm. The records that carry
//! it ([`super::CcTotals`], the response rows, `compare`'s buckets) keep its parts as fields of
//! their own, so JSON, Parquet and metric labels stay as they are; they lend it out as this.

/// Whose counts. The order (cc, peer group, AS, country, arm; a missing label first) is the
/// order the engine publishes its totals in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct GroupKey<'a> {
    pub cc: &'a str,
    pub peer_group: &'a str,
    /// The peers' AS label, with an AS database.
    pub asn: Option<&'a str>,
    /// The peers' country label, with a country database.
    pub country: Option<&'a str>,
    /// The experiment arm, under `bbrtop experiment`.
    pub arm: Option<&'a str>,
}

impl<'a> GroupKey<'a> {
    /// A cc's sockets towards every peer group together.
    pub fn everyone(cc: &'a str) -> GroupKey<'a> {
        GroupKey { cc, peer_group: "all", asn: None, country: None, arm: None }
    }

    /// The key with AS and country left out: the series a view summed over peers keeps.
    pub fn without_peers(self) -> GroupKey<'a> {
        GroupKey { asn: None, country: None, ..self }
    }

    /// As labels (`cc`, `peer_group`, then `asn`, `country` and `arm` where given): a series'
    /// labels on `/metrics`.
    pub fn labels(self) -> Vec<(&'static str, &'a str)> {
        let mut l = vec![("cc", self.cc), ("peer_group", self.peer_group)];
        l.extend(self.asn.map(|a| ("asn", a)));
        l.extend(self.country.map(|c| ("country", c)));
        l.extend(self.arm.map(|a| ("arm", a)));
        l
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_by_cc_then_group_then_labels_then_arm() {
        let k = |cc, pg, asn, arm| GroupKey { cc, peer_group: pg, asn, country: None, arm };
        let mut keys = [
            k("cubic", "all", None, None),
            k("bbr", "near", Some("AS2"), None),
            k("bbr", "near", None, Some("test")),
            k("bbr", "near", None, None),
            k("bbr", "far", Some("AS1"), Some("control")),
        ];
        keys.sort();
        let shown: Vec<_> = keys.iter().map(|k| (k.cc, k.peer_group, k.asn, k.arm)).collect();
        assert_eq!(
            shown,
            [
                ("bbr", "far", Some("AS1"), Some("control")),
                ("bbr", "near", None, None),
                ("bbr", "near", None, Some("test")),
                ("bbr", "near", Some("AS2"), None),
                ("cubic", "all", None, None),
            ]
        );
        let full = k("bbr", "near", Some("AS2"), Some("test"));
        assert_eq!(full.without_peers(), k("bbr", "near", None, Some("test")));
        assert_eq!(GroupKey::everyone("bbr"), k("bbr", "all", None, None));
        // The records built from a key lend the same key back.
        assert_eq!(crate::snapshot::CcTotals::of(full).key(), full);
        assert_eq!(full.labels(), [("cc", "bbr"), ("peer_group", "near"), ("asn", "AS2"), ("arm", "test")]);
    }
}

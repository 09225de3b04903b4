//! A certificate's validity period, read from its DER: an expired server certificate makes every
//! client that verifies it refuse the exporter, so it is refused at start rather than served.
//! rustls checks validity on the client's side only; this reads the few DER fields on the path
//! to `tbsCertificate.validity` (RFC 5280 4.1), nothing else. Pure.

use std::time::SystemTime;

/// (notBefore, notAfter), or None where the bytes are not a certificate this can read.
pub fn validity(der: &[u8]) -> Option<(SystemTime, SystemTime)> {
    const SEQUENCE: u8 = 0x30;
    let (SEQUENCE, cert, _) = tlv(der)? else { return None };
    let (SEQUENCE, mut tbs, _) = tlv(cert)? else { return None };
    // [0] version (optional), serialNumber, signature, issuer, then validity.
    if tbs.first() == Some(&0xa0) {
        tbs = tlv(tbs)?.2;
    }
    for _ in 0..3 {
        tbs = tlv(tbs)?.2;
    }
    let (SEQUENCE, validity, _) = tlv(tbs)? else { return None };
    let (t1, c1, rest) = tlv(validity)?;
    let (t2, c2, _) = tlv(rest)?;
    Some((time(t1, c1)?, time(t2, c2)?))
}

/// One DER element: (tag, contents, what follows).
fn tlv(b: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = b.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        (rest[..n].iter().fold(0usize, |a, &b| a << 8 | usize::from(b)), &rest[n..])
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// UTCTime (YYMMDDHHMMSSZ, years 1950 to 2049) or GeneralizedTime (YYYYMMDDHHMMSSZ).
fn time(tag: u8, b: &[u8]) -> Option<SystemTime> {
    let s = std::str::from_utf8(b).ok()?.strip_suffix('Z')?;
    let full = match (tag, s.len()) {
        (0x17, 12) => {
            let yy: u32 = s[..2].parse().ok()?;
            format!("{}{s}", if yy >= 50 { "19" } else { "20" })
        }
        (0x18, 14) => s.to_string(),
        _ => return None,
    };
    if !full.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let rfc3339 = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &full[..4],
        &full[4..6],
        &full[6..8],
        &full[8..10],
        &full[10..12],
        &full[12..14]
    );
    humantime::parse_rfc3339(&rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two self-signed certificates valid from 2020-01-01 to 2020-01-02 only (made with `openssl
    /// ca -startdate 20200101000000Z -enddate 20200102000000Z`): a version 1 one, which has no
    /// version field, and a version 3 one (with an extension), which has.
    const EXPIRED: &str = include_str!("testdata/expired-cert.pem");

    fn ders() -> Vec<Vec<u8>> {
        use rustls_pki_types::CertificateDer;
        use rustls_pki_types::pem::PemObject;
        CertificateDer::pem_slice_iter(EXPIRED.as_bytes()).map(|c| c.unwrap().to_vec()).collect()
    }

    #[test]
    fn reads_the_validity_period() {
        assert_eq!(ders().len(), 2);
        for der in ders() {
            let (from, to) = validity(&der).unwrap();
            assert_eq!(from, humantime::parse_rfc3339("2020-01-01T00:00:00Z").unwrap());
            assert_eq!(to, humantime::parse_rfc3339("2020-01-02T00:00:00Z").unwrap());
        }
    }

    #[test]
    fn anything_else_is_none_never_a_panic() {
        let good = ders().pop().unwrap();
        for cut in 0..good.len() {
            let _ = validity(&good[..cut]);
        }
        assert_eq!(validity(b""), None);
        assert_eq!(validity(&[0x30, 0x84, 0xff, 0xff, 0xff, 0xff]), None);
        assert_eq!(time(0x17, b"991231235959Z"), humantime::parse_rfc3339("1999-12-31T23:59:59Z").ok());
        assert_eq!(time(0x18, b"2049123123595Z"), None);
    }
}

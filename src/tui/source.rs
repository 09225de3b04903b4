//! Which source the TUI shows: the header always names it.

use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// This host's sockets (or a namespace's, or the lab's), live.
    Local,
    /// A remote `bbrtop export`'s live state, by its URL.
    Remote(String),
    /// A recording (`bbrtop replay PATH`); the header adds the poll shown and the play.
    Recording(PathBuf),
}

impl Source {
    /// The header's words for the source: "live", "remote https://edge-1:9100",
    /// "recording /var/lib/bbrtop/rec". A URL's user and password are left out.
    pub fn label(&self) -> String {
        match self {
            Source::Local => "live".into(),
            Source::Remote(url) => format!("remote {}", without_credentials(url)),
            Source::Recording(path) => format!("recording {}", path.display()),
        }
    }
}

/// `https://user:secret@host:9100/x` as `https://host:9100/x`.
fn without_credentials(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, path) = rest.split_at(end);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if scheme.is_empty() { format!("{host}{path}") } else { format!("{scheme}://{host}{path}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_name_the_source_and_hide_credentials() {
        assert_eq!(Source::Local.label(), "live");
        assert_eq!(Source::Recording("/var/lib/bbrtop/rec".into()).label(), "recording /var/lib/bbrtop/rec");
        for (url, shown) in [
            ("https://edge-1:9100", "https://edge-1:9100"),
            ("https://ops:s3cret@edge-1:9100/", "https://edge-1:9100/"),
            ("https://ops@edge-1:9100/x?y=a@b", "https://edge-1:9100/x?y=a@b"),
            ("http://[::1]:9100", "http://[::1]:9100"),
            ("ops:pw@edge-1:9100", "edge-1:9100"),
        ] {
            assert_eq!(Source::Remote(url.into()).label(), format!("remote {shown}"), "{url}");
        }
    }
}

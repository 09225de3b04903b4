//! A URL's credentials kept out of what people and scrapers see: labels, log lines, errors.
//!
//! The password of `scheme://user:password@host` is shown as `xxxxx`, as Go's
//! `url.URL.Redacted()` prints it (what Prometheus and exporter-toolkit show for a URL of their
//! configuration). Pure, and total: any text goes in, a URL or not.

/// What stands for a password.
pub const MASK: &str = "xxxxx";

/// The URL's userinfo (`user` or `user:password`, as written), if it has one: the text before the
/// last `@` of the authority, which runs from `://` (or the start) to the first `/`, `?` or `#`.
pub fn userinfo(url: &str) -> Option<&str> {
    authority(url).1.rsplit_once('@').map(|(info, _)| info)
}

/// The URL with its password, if any, replaced by [`MASK`]; the user is kept (it names who
/// connects). A user alone is masked whole: there it is often a token (`https://TOKEN@host`),
/// where Go's `Redacted` would show it. A URL without userinfo comes back as it is.
pub fn redacted(url: &str) -> String {
    let Some(info) = userinfo(url) else { return url.to_string() };
    let shown = match info.split_once(':') {
        Some((user, _)) => format!("{user}:{MASK}"),
        None => MASK.to_string(),
    };
    let start = authority(url).0;
    format!("{}{shown}{}", &url[..start], &url[start + info.len()..])
}

/// The URL's userinfo, if any, and the URL without it (and its `@`).
pub fn without_userinfo(url: &str) -> (Option<&str>, String) {
    let Some(info) = userinfo(url) else { return (None, url.to_string()) };
    let start = authority(url).0;
    (Some(info), format!("{}{}", &url[..start], &url[start + info.len() + 1..]))
}

/// Where the authority of `url` starts, and its text.
fn authority(url: &str) -> (usize, &str) {
    // A `://` after the authority began (in a path or query) is no scheme's.
    let start = match url.find("://") {
        Some(i) if !url[..i].contains(['/', '?', '#', '@']) => i + 3,
        _ => 0,
    };
    let rest = &url[start..];
    (start, &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_masked_and_the_rest_kept() {
        for (url, shown) in [
            ("http://u:p@am:9093", "http://u:xxxxx@am:9093"),
            (
                "https://alice:s3cret@collector:4318/v1/logs?x=1",
                "https://alice:xxxxx@collector:4318/v1/logs?x=1",
            ),
            // The last @ of the authority ends the userinfo; a colon in the password is its own.
            ("http://bob:p@ss:w@h:1/a@b", "http://bob:xxxxx@h:1/a@b"),
            ("http://u:@h", "http://u:xxxxx@h"),
            ("u:p@h:4317", "u:xxxxx@h:4317"),
            ("https://a:b@c/d?q=1#f", "https://a:xxxxx@c/d?q=1#f"),
            ("http://[::1]:9093/x", "http://[::1]:9093/x"),
            ("http://prom@h:1", "http://xxxxx@h:1"),
            ("https://token@h/v1/logs?a=b@c", "https://xxxxx@h/v1/logs?a=b@c"),
            ("http://h:1/path@x", "http://h:1/path@x"),
            ("", ""),
        ] {
            assert_eq!(redacted(url), shown, "{url}");
        }
    }

    #[test]
    fn a_url_without_its_userinfo() {
        assert_eq!(without_userinfo("https://a:b@c:1/d@e"), (Some("a:b"), "https://c:1/d@e".into()));
        assert_eq!(without_userinfo("https://c/d"), (None, "https://c/d".into()));
    }

    #[test]
    fn userinfo_is_found_only_in_the_authority() {
        assert_eq!(userinfo("http://u:p@am:9093/"), Some("u:p"));
        assert_eq!(userinfo("http://prom@h"), Some("prom"));
        assert_eq!(userinfo("http://h:1/a@b"), None);
        assert_eq!(userinfo("http://h:1?a@b"), None);
        assert_eq!(userinfo("not a url"), None);
        assert_eq!(userinfo("h:1/?next=http://u:p@x"), None);
    }
}

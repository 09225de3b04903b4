//! Parser fuzzing of the exporter's web configuration (see `bbrtop_core::testing::fuzz`).

use bbrtop_core::testing::fuzz::fuzz;

#[test]
#[ignore = "fuzzing: scripts/test.sh runs it, see bbrtop_core::testing::fuzz"]
fn fuzz_web_configuration() {
    use crate::export::web_config::WebConfig;
    let corpus: Vec<Vec<u8>> = [
        "basic_auth_users:\n  prom: '$2b$04$abcdefghijklmnopqrstuuJZbTvV2pDT5yQMbyGgDy4XdNVcsvTg2'\n",
        "tls_server_config: {cert_file: c.pem, key_file: k.pem, min_version: TLS13}\n",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect();
    fuzz("web configuration", corpus, |b| {
        let _ = WebConfig::parse(&String::from_utf8_lossy(b));
    });
}

//! Output formats for `snapshot` and `watch`.

pub mod json;
pub mod table;

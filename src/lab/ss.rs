//! ss

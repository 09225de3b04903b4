//! The queue-delay alert: the rule (pure) and, in time, its delivery.

pub mod push;
pub mod rule;

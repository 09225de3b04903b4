//! Code that may panic on input bbrtop does not control (parquet's reader panics on some damaged
//! pages), run so that the panic becomes an error: the hooks bbrtop installs stay silent for it
//! (the TUI's would restore the terminal and stop the UI), and the caller gets a one-line error.

use std::cell::Cell;
use std::panic::{AssertUnwindSafe, PanicHookInfo};

thread_local! {
    static CONTAINED: Cell<bool> = const { Cell::new(false) };
}

/// Whether the panic under way on this thread is one [`contain`] catches.
pub fn is_contained() -> bool {
    CONTAINED.with(Cell::get)
}

/// Runs `f`; a panic in it is the error "`what`: damaged data (the panic's message)".
pub fn contain<T>(what: &str, f: impl FnOnce() -> anyhow::Result<T>) -> anyhow::Result<T> {
    let was = CONTAINED.with(|c| c.replace(true));
    let r = std::panic::catch_unwind(AssertUnwindSafe(f));
    CONTAINED.with(|c| c.set(was));
    r.unwrap_or_else(|p| {
        let msg = p.downcast_ref::<&str>().copied().or(p.downcast_ref::<String>().map(String::as_str));
        Err(anyhow::anyhow!("{what}: damaged data ({})", msg.unwrap_or("unreadable")))
    })
}

/// Wraps the process's panic hook so that a contained panic prints nothing.
pub fn quiet_when_contained() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info: &PanicHookInfo<'_>| {
        if !is_contained() {
            previous(info);
        }
    }));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_panic_becomes_an_error_and_the_flag_is_restored() {
        let e = contain::<()>("a frame", || panic!("index out of bounds")).unwrap_err();
        assert_eq!(e.to_string(), "a frame: damaged data (index out of bounds)");
        assert!(!is_contained());
        assert_eq!(contain("x", || Ok(7)).unwrap(), 7);
        assert!(contain::<()>("x", || anyhow::bail!("plain")).unwrap_err().to_string().contains("plain"));
    }
}

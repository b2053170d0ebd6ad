//! The global allocator: mimalloc (the default `mimalloc` feature). A CLI
//! run allocates millions of small property values and strings, and glibc's
//! malloc took a quarter of a no-op preview's cycles. Without the feature
//! the system allocator is used, which heap profilers (heaptrack) see.
//!
//! mimalloc keeps freed memory for a second before it returns it to the
//! system (`purge_delay`, 1,000 ms in its v3). A run's phases free and
//! allocate different sizes (the program's parse tree, the decoded
//! checkpoint, the checkpoint's JSON at the end), so at 10,000 resources
//! the peak RSS was 160–220 MB with under 110 MB live. Purging after 1 ms
//! brings it to 125–165 MB for about the same time.

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v3's `mi_option_e` (`mimalloc.h`);
/// libmimalloc-sys does not name it. The test checks its default.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
const PURGE_DELAY_MS: std::ffi::c_long = 1;

/// Sets mimalloc's options; called first thing in `main`, before any
/// other thread exists.
#[allow(unsafe_code)]
pub(crate) fn configure() {
    // SAFETY: `mi_option_set` stores an integer option; it is not thread
    // safe, and no other thread runs yet.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) };
}

/// Ends the process with `code` once the command is done and its output
/// flushed. mimalloc's exit handler collects every heap page and returns
/// it to the system (`mi_process_done`; 12 ms after a 10,000-resource
/// preview, ten times that at 100,000), work the kernel does anyway when
/// the process ends; `_exit` skips it, and with it every other exit
/// handler, of which the CLI registers none.
#[allow(unsafe_code)]
pub(crate) fn exit(code: i32) -> ! {
    crate::flush_output();
    // SAFETY: `_exit` takes any status and does not return; nothing in the
    // process depends on an exit handler (output is flushed above).
    unsafe { libc::_exit(code) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The option number is mimalloc's purge delay: its default is v3's
    /// 1,000 ms, and `configure` sets it.
    #[test]
    #[allow(unsafe_code)]
    fn configure_sets_the_purge_delay() {
        // SAFETY: reads and sets an integer option; only this test does.
        let get = || unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
            assert_eq!(get(), 1000);
        }
        configure();
        assert_eq!(get(), PURGE_DELAY_MS);
    }
}

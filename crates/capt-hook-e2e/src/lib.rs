//! End-to-end tests of the runtime live in `tests/`; this crate's binaries are the runtime's
//! (plus a scriptable fake worker) built where the tests can find them.

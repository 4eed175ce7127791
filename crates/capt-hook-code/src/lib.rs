//! Code-aware matching (to be filled).

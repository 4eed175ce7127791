//! Transcript reading (to be filled).

//! Session and durable state (to be filled).

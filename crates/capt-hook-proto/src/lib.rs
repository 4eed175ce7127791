//! Wire types and framing (to be filled by the runtime work).

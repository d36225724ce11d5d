//! symbols

//! splitter

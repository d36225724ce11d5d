//! Tells whether an executable was built with rr-lite, so `record` can say
//! so up front instead of producing an empty trace.

use std::path::Path;

use object::{Object, ObjectSection, ObjectSymbol};

use crate::RecordError;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instrumentation {
    /// Instrumented and linked against the rr-lite runtime.
    RrLite,
    /// Built with plain `-fsanitize=thread` (the system libtsan).
    SystemTsan,
    /// No `__tsan_*` hooks at all.
    None,
    /// Not an ELF file (a script, say): cannot tell.
    Unknown,
}

pub fn check_instrumentation(path: &Path) -> Result<Instrumentation, RecordError> {
    let bytes = std::fs::read(path).map_err(RecordError::io("read", path))?;
    let Ok(file) = object::File::parse(&*bytes) else {
        return Ok(Instrumentation::Unknown);
    };
    let hooks = file
        .dynamic_symbols()
        .any(|s| s.is_undefined() && s.name().is_ok_and(|n| n.starts_with("__tsan_")));
    if !hooks {
        return Ok(Instrumentation::None);
    }
    let dynstr = file
        .section_by_name(".dynstr")
        .and_then(|s| s.data().ok())
        .unwrap_or_default();
    let mentions = |needle: &[u8]| dynstr.windows(needle.len()).any(|w| w == needle);
    Ok(if mentions(b"librr_lite_rt.so") {
        Instrumentation::RrLite
    } else if mentions(b"libtsan.so") {
        Instrumentation::SystemTsan
    } else {
        Instrumentation::Unknown
    })
}

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

/// Threading libraries a program may load whose synchronisation the runtime
/// does not model, with what that means for the user, found by name among
/// the executable's needed libraries. An empty list when the file cannot
/// be read or parsed (the record itself reports that).
pub fn unmodelled_libraries(path: &Path) -> Vec<String> {
    const KNOWN: &[(&str, &str)] = &[(
        "libtbb.so",
        "it uses Intel TBB, whose task scheduler synchronises inside libtbb in ways rr-lite \
         does not model: which thread runs which task is not recorded, and replay will \
         likely report a divergence",
    )];
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let Ok(file) = object::File::parse(&*bytes) else {
        return Vec::new();
    };
    let dynstr = file
        .section_by_name(".dynstr")
        .and_then(|s| s.data().ok())
        .unwrap_or_default();
    let mentions = |needle: &str| dynstr.windows(needle.len()).any(|w| w == needle.as_bytes());
    KNOWN
        .iter()
        .filter(|(name, _)| mentions(name))
        .map(|(_, why)| format!("{}: {why}", path.display()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_without_unmodelled_libraries_gets_no_warning() {
        let me = std::env::current_exe().unwrap();
        assert!(unmodelled_libraries(&me).is_empty());
        assert!(unmodelled_libraries(Path::new("/nonexistent/program")).is_empty());
    }
}

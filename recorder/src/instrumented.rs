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
    let dynstr = dynamic_strings(path).unwrap_or_default();
    let mentions = |needle: &str| dynstr.windows(needle.len()).any(|w| w == needle.as_bytes());
    KNOWN
        .iter()
        .filter(|(name, _)| mentions(name))
        .map(|(_, why)| format!("{}: {why}", path.display()))
        .collect()
}

/// The rr-lite runtime directory the executable's rpath names, if it is
/// not this build's (another `runtime-<hash>`): the program then loads
/// another build's runtime, whose plans or state file this build's replay
/// may not share. `None` when it is this build's, names none, or the file
/// cannot be read.
pub fn other_builds_runtime(path: &Path) -> Option<String> {
    let ours = crate::runtime::runtime_dir();
    let ours = ours.file_name()?.to_str()?;
    let dynstr = dynamic_strings(path)?;
    dynstr
        .split(|&b| b == 0)
        .flat_map(|s| s.split(|&b| b == b':'))
        .filter_map(|entry| std::str::from_utf8(entry).ok())
        .find(|entry| {
            let name = Path::new(entry).file_name().and_then(|n| n.to_str());
            name.is_some_and(|n| is_runtime_dir_name(n) && n != ours)
        })
        .map(str::to_owned)
}

/// `runtime-` and a hex hash: how `crate::runtime::runtime_dir` names
/// an installed runtime.
fn is_runtime_dir_name(name: &str) -> bool {
    name.strip_prefix("runtime-")
        .is_some_and(|hash| !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The executable's dynamic string table (needed libraries, rpath), if it
/// is an ELF file that has one.
fn dynamic_strings(path: &Path) -> Option<Vec<u8>> {
    let bytes = std::fs::read(path).ok()?;
    let file = object::File::parse(&*bytes).ok()?;
    let dynstr = file.section_by_name(".dynstr")?.data().ok()?;
    Some(dynstr.to_vec())
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

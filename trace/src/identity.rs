//! A program's identity, as `header.json`'s `program_id` records it: the
//! executable's GNU build-id when it has one, else a hash of its bytes.
//! Replay compares it with the file it is about to run.

use std::path::Path;

use object::Object;

use crate::TraceError;

/// Largest executable whose identity is computed (its bytes are hashed
/// whole when it has no build-id).
const PROGRAM_LIMIT: u64 = 4 << 30;

/// The identity of the executable at `path`: `build-id:<hex>` or
/// `fnv1a:<hex>` of its contents.
pub fn program_id(path: &Path) -> Result<String, TraceError> {
    let bytes = crate::bounded::read(path, PROGRAM_LIMIT)?;
    Ok(program_id_of(&bytes))
}

/// [`program_id`] of an executable's bytes.
pub fn program_id_of(bytes: &[u8]) -> String {
    if let Ok(Some(id)) = object::File::parse(bytes).and_then(|f| f.build_id()) {
        let hex: String = id.iter().map(|b| format!("{b:02x}")).collect();
        return format!("build-id:{hex}");
    }
    format!("fnv1a:{:016x}", crate::codec::checksum::fnv1a(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_without_a_build_id_are_named_by_their_contents() {
        assert_eq!(program_id_of(b"#!/bin/sh\n"), program_id_of(b"#!/bin/sh\n"));
        assert_ne!(
            program_id_of(b"#!/bin/sh\n"),
            program_id_of(b"#!/bin/sh \n")
        );
        assert!(program_id_of(b"").starts_with("fnv1a:"));
    }

    #[test]
    fn an_elf_with_a_build_id_is_named_by_it() {
        // The test binary itself: cargo links with a build-id on Linux.
        let me = std::env::current_exe().unwrap();
        let id = program_id(&me).unwrap();
        assert!(
            id.starts_with("build-id:") || id.starts_with("fnv1a:"),
            "{id}"
        );
        assert!(program_id(Path::new("/nonexistent/program")).is_err());
    }
}

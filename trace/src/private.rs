//! Files and directories of a trace, created private whatever the umask:
//! directories 0700, files 0600. A trace holds a program's environment,
//! its output and its input: it is the user's to share, not the machine's.
//! (The mode is given at creation; the umask can only take bits away.)

use std::fs::{DirBuilder, File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Mode of directories rr-lite creates for traces.
pub const DIR_MODE: u32 = 0o700;
/// Mode of files rr-lite writes into traces.
pub const FILE_MODE: u32 = 0o600;

/// Creates one directory, 0700.
pub fn create_dir(path: &Path) -> std::io::Result<()> {
    DirBuilder::new().mode(DIR_MODE).create(path)
}

/// Creates a directory and its missing parents, each 0700.
pub fn create_dir_all(path: &Path) -> std::io::Result<()> {
    DirBuilder::new()
        .recursive(true)
        .mode(DIR_MODE)
        .create(path)
}

/// Creates (or truncates) a file, 0600 when new.
pub fn create(path: &Path) -> std::io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(FILE_MODE)
        .open(path)
}

/// Writes a whole file, 0600 when new.
pub fn write(path: &Path, bytes: impl AsRef<[u8]>) -> std::io::Result<()> {
    create(path)?.write_all(bytes.as_ref())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn modes_ignore_a_permissive_umask() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("a/b");
        create_dir_all(&dir).unwrap();
        let file = dir.join("f");
        write(&file, "x").unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir) & !DIR_MODE, 0);
        assert_eq!(mode(&tmp.path().join("a")) & !DIR_MODE, 0);
        assert_eq!(mode(&file) & !FILE_MODE, 0);
    }
}

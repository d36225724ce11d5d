//! The checksums of rr-lite files: FNV-1a for files written once, whole (the
//! splitter's replay logs; the recorder's fallback program id), and the
//! thread logs' ([`LogChecksum`]), which every split and first replay reads
//! back in full; replay plans, verified before every replay, take the
//! logs' CRC-32.

/// FNV-1a, 64 bits, byte by byte: catches flipped and shuffled bytes and
/// costs next to nothing. Not a defence against deliberate tampering.
pub fn fnv1a(bytes: &[u8]) -> u64 {
    fnv1a_more(FNV1A_START, bytes)
}

/// FNV-1a's starting value: [`fnv1a`] of bytes written in pieces is
/// `fnv1a_more(fnv1a_more(FNV1A_START, a), b)`.
pub const FNV1A_START: u64 = 0xcbf2_9ce4_8422_2325;

/// Continues an FNV-1a hash `h` over `bytes`.
pub fn fnv1a_more(mut h: u64, bytes: &[u8]) -> u64 {
    for &b in bytes {
        h = (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// [`fnv1a`] of a whole file, read in pieces.
pub fn fnv1a_of_file(path: &std::path::Path) -> std::io::Result<u64> {
    fnv1a_of_file_prefix(path, u64::MAX).map(|(h, _)| h)
}

/// [`fnv1a`] of the first `len` bytes of a file (all of it if shorter),
/// and how many bytes that was.
pub fn fnv1a_of_file_prefix(path: &std::path::Path, len: u64) -> std::io::Result<(u64, u64)> {
    log_checksum_of_file_prefix(LogChecksum::Fnv1a, path, len)
}

/// How a trace's thread logs are checksummed in `header.json`
/// (`log_checksum`): CRC-32 (IEEE) since the key exists, FNV-1a in the
/// traces before it. CRC-32 runs at memory speed (crc32fast uses the CPU's
/// carry-less multiply); FNV-1a goes byte by byte, and hashing a 600 MB
/// log took a tenth of a recording's time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LogChecksum {
    Fnv1a,
    Crc32,
}

impl LogChecksum {
    /// The name `header.json` gives it.
    pub fn name(self) -> &'static str {
        match self {
            LogChecksum::Fnv1a => "fnv1a",
            LogChecksum::Crc32 => "crc32",
        }
    }

    /// The algorithm `header.json` names (None: one this reader does not know).
    pub fn from_name(name: &str) -> Option<LogChecksum> {
        [LogChecksum::Fnv1a, LogChecksum::Crc32]
            .into_iter()
            .find(|k| k.name() == name)
    }

    /// The checksum of `bytes`, whole.
    pub fn of(self, bytes: &[u8]) -> u64 {
        let mut sum = self.start();
        sum.update(bytes);
        sum.value()
    }

    /// The running state before any byte.
    pub fn start(self) -> RunningChecksum {
        match self {
            LogChecksum::Fnv1a => RunningChecksum::Fnv1a(FNV1A_START),
            LogChecksum::Crc32 => RunningChecksum::Crc32(crc32fast::Hasher::new()),
        }
    }
}

/// A [`LogChecksum`] fed piece by piece.
#[derive(Debug, Clone)]
pub enum RunningChecksum {
    Fnv1a(u64),
    Crc32(crc32fast::Hasher),
}

impl RunningChecksum {
    pub fn update(&mut self, bytes: &[u8]) {
        match self {
            RunningChecksum::Fnv1a(h) => *h = fnv1a_more(*h, bytes),
            RunningChecksum::Crc32(h) => h.update(bytes),
        }
    }

    /// The value so far (CRC-32 widened to 64 bits).
    pub fn value(&self) -> u64 {
        match self {
            RunningChecksum::Fnv1a(h) => *h,
            RunningChecksum::Crc32(h) => u64::from(h.clone().finalize()),
        }
    }
}

/// `kind`'s checksum of the first `len` bytes of a file (all of it if
/// shorter), and how many bytes that was.
pub fn log_checksum_of_file_prefix(
    kind: LogChecksum,
    path: &std::path::Path,
    len: u64,
) -> std::io::Result<(u64, u64)> {
    use std::io::Read;
    let mut file = std::fs::File::open(path)?.take(len);
    let mut buf = vec![0u8; 1 << 16];
    let mut sum = kind.start();
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((sum.value(), read));
        }
        read += n as u64;
        sum.update(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_reference_values() {
        // From the FNV reference test suite.
        assert_eq!(fnv1a(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a(b"foobar"), 0x8594_4171_f739_67e8);
    }

    #[test]
    fn crc32_in_pieces_is_crc32_of_the_whole() {
        let mut sum = LogChecksum::Crc32.start();
        sum.update(b"1234");
        sum.update(b"56789");
        // The CRC-32 (IEEE) check value.
        assert_eq!(sum.value(), 0xcbf4_3926);
        for kind in [LogChecksum::Fnv1a, LogChecksum::Crc32] {
            assert_eq!(LogChecksum::from_name(kind.name()), Some(kind));
        }
        assert_eq!(LogChecksum::from_name("md5"), None);
    }
}

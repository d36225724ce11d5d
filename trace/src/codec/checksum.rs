//! The checksum of rr-lite files that are written once, whole (the
//! splitter's replay logs; the recorder's fallback program id).

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
    use std::io::Read;
    let mut file = std::fs::File::open(path)?.take(len);
    let mut buf = vec![0u8; 1 << 16];
    let mut h = FNV1A_START;
    let mut read = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            return Ok((h, read));
        }
        read += n as u64;
        h = fnv1a_more(h, &buf[..n]);
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
}

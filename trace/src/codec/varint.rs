//! LEB128 varints and zigzag deltas: the integer encoding of every rr-lite
//! binary file that has variable-length records (thread logs, and the
//! splitter's replay logs). docs/FORMAT.md specifies it once for all of them.
//!
//! The encoder writes into a caller's buffer and never allocates, because
//! the runtime encodes from inside its hooks. The decoder reads at most
//! [`MAX_LEN`] bytes and never past the slice it is given, and never panics:
//! callers hand it untrusted file contents.

use std::path::Path;

use crate::error::TraceError;

/// Longest varint of a `u64`: 64 bits at 7 bits per byte.
pub const MAX_LEN: usize = 10;

/// Maps a signed delta (two's complement, wrapping) to an unsigned value that
/// is small when the delta is small in either direction, so that it encodes
/// in few bytes.
#[inline]
pub fn zigzag(delta: u64) -> u64 {
    let d = delta as i64;
    ((d << 1) ^ (d >> 63)) as u64
}

/// The inverse of [`zigzag`].
#[inline]
pub fn unzigzag(z: u64) -> u64 {
    ((z >> 1) as i64 ^ -((z & 1) as i64)) as u64
}

/// Writes `v` at the start of `buf` and returns how many bytes it took.
///
/// `buf` must have room for the encoding ([`MAX_LEN`] bytes always do);
/// callers size their buffers up front, so a short one is a bug and panics.
#[inline]
pub fn write(buf: &mut [u8], mut v: u64) -> usize {
    let mut len = 0;
    while v >= 0x80 {
        buf[len] = (v as u8) | 0x80;
        v >>= 7;
        len += 1;
    }
    buf[len] = v as u8;
    len + 1
}

/// `v` encoded, for writers that append to a growing buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Encoded {
    bytes: [u8; MAX_LEN],
    len: u8,
}

impl Encoded {
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

/// Encodes `v` without a caller's buffer: `out.extend_from_slice(encode(v).as_bytes())`.
#[inline]
pub fn encode(v: u64) -> Encoded {
    let mut bytes = [0u8; MAX_LEN];
    let len = write(&mut bytes, v);
    Encoded {
        bytes,
        len: len as u8,
    }
}

/// Why some bytes are not a varint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VarintError {
    /// The bytes end before the varint's last byte (one without the high bit).
    Truncated,
    /// The value does not fit in 64 bits (a tenth byte above 1, or more
    /// than ten bytes).
    Overflow,
}

impl VarintError {
    /// The error for a varint starting at byte `offset` of the file at
    /// `path`, which was to be part of `what` ("entry", "sync point"...).
    pub fn at(self, path: &Path, offset: u64, what: &'static str) -> TraceError {
        let path = path.to_path_buf();
        match self {
            VarintError::Truncated => TraceError::Truncated { path, offset, what },
            VarintError::Overflow => TraceError::Corrupt {
                path,
                offset,
                what: format!("{what}: varint overflows 64 bits"),
            },
        }
    }
}

/// Decodes the varint at the start of `bytes`: its value and its length.
/// Reads at most [`MAX_LEN`] bytes, never past the end of `bytes`.
#[inline]
pub fn decode(bytes: &[u8]) -> Result<(u64, usize), VarintError> {
    let mut v = 0u64;
    for (i, &byte) in bytes.iter().take(MAX_LEN).enumerate() {
        let shift = 7 * i as u32;
        // The tenth byte holds bit 63 only: anything above 1 is lost bits,
        // and a continuation bit would announce an eleventh byte.
        if shift == 63 && byte > 1 {
            return Err(VarintError::Overflow);
        }
        v |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok((v, i + 1));
        }
    }
    Err(VarintError::Truncated)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn known_encodings() {
        assert_eq!(encode(0).as_bytes(), [0]);
        assert_eq!(encode(0x7f).as_bytes(), [0x7f]);
        assert_eq!(encode(0x80).as_bytes(), [0x80, 0x01]);
        assert_eq!(encode(300).as_bytes(), [0xac, 0x02]);
        let max = encode(u64::MAX);
        assert_eq!(max.as_bytes().len(), MAX_LEN);
        assert_eq!(max.as_bytes()[MAX_LEN - 1], 1);
        assert_eq!(zigzag(0), 0);
        assert_eq!(zigzag(-1i64 as u64), 1);
        assert_eq!(zigzag(1), 2);
        assert_eq!(zigzag(-2i64 as u64), 3);
    }

    #[test]
    fn bad_bytes_are_errors() {
        assert_eq!(decode(&[]), Err(VarintError::Truncated));
        assert_eq!(decode(&[0x80, 0x80]), Err(VarintError::Truncated));
        let mut over = [0xffu8; MAX_LEN];
        over[MAX_LEN - 1] = 2;
        assert_eq!(decode(&over), Err(VarintError::Overflow));
        // A continuation bit on the tenth byte announces bits beyond 64.
        assert_eq!(decode(&[0xff; 11]), Err(VarintError::Overflow));
        let err = VarintError::Truncated.at(Path::new("f.log"), 77, "entry");
        assert_eq!(
            err.to_string(),
            "f.log: truncated at byte 77: incomplete entry"
        );
    }

    proptest! {
        #[test]
        fn round_trips(v in any::<u64>(), small in 0u64..1 << 14, tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            for v in [v, small] {
                let mut bytes = encode(v).as_bytes().to_vec();
                let len = bytes.len();
                bytes.extend_from_slice(&tail);
                prop_assert_eq!(decode(&bytes), Ok((v, len)));
                let mut buf = [0u8; MAX_LEN];
                prop_assert_eq!(write(&mut buf, v), len);
                prop_assert_eq!(&buf[..len], &bytes[..len]);
                prop_assert_eq!(unzigzag(zigzag(v)), v);
            }
        }

        #[test]
        fn decoder_never_panics_or_reads_too_far(bytes in proptest::collection::vec(any::<u8>(), 0..16)) {
            match decode(&bytes) {
                Ok((v, len)) => {
                    prop_assert!(len <= MAX_LEN.min(bytes.len()));
                    // Canonical or not, what was read encodes the value read.
                    let (again, _) = decode(&bytes[..len]).unwrap();
                    prop_assert_eq!(again, v);
                }
                Err(VarintError::Truncated) => prop_assert!(bytes.len() < MAX_LEN),
                Err(VarintError::Overflow) => prop_assert!(bytes.len() >= MAX_LEN),
            }
        }
    }
}

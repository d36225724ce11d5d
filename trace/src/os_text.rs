//! Byte strings in `header.json` (the program's path, argv, working
//! directory and environment): Unix gives bytes, not UTF-8, and replay must
//! give the program the very bytes it had. A value that is valid UTF-8 is a
//! JSON string; any other is `{"hex": "<two hex digits per byte>"}`. Used
//! through `#[serde(with = ...)]` on the header's fields.

use std::ffi::{OsStr, OsString};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// One byte string as JSON holds it.
#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum Repr {
    Text(String),
    Bytes { hex: String },
}

fn to_repr(value: &OsStr) -> Repr {
    match value.to_str() {
        Some(text) => Repr::Text(text.to_owned()),
        None => Repr::Bytes {
            hex: value
                .as_bytes()
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect(),
        },
    }
}

fn from_repr<E: serde::de::Error>(repr: Repr) -> Result<OsString, E> {
    match repr {
        Repr::Text(text) => Ok(OsString::from(text)),
        Repr::Bytes { hex } => {
            let digits = hex.as_bytes();
            if digits.len() % 2 != 0 {
                return Err(E::custom("a hex byte string of odd length"));
            }
            digits
                .chunks(2)
                .map(|pair| {
                    std::str::from_utf8(pair)
                        .ok()
                        .and_then(|p| u8::from_str_radix(p, 16).ok())
                        .ok_or_else(|| E::custom("a hex byte string with a non-hex digit"))
                })
                .collect::<Result<Vec<u8>, E>>()
                .map(OsString::from_vec)
        }
    }
}

/// `#[serde(with = "os_text::path")]` for a `PathBuf`.
pub mod path {
    use super::*;

    pub fn serialize<S: Serializer>(value: &Path, s: S) -> Result<S::Ok, S::Error> {
        to_repr(value.as_os_str()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<PathBuf, D::Error> {
        from_repr(Repr::deserialize(d)?).map(PathBuf::from)
    }
}

/// `#[serde(with = "os_text::list")]` for a `Vec<OsString>`.
pub mod list {
    use super::*;

    pub fn serialize<S: Serializer>(value: &[OsString], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(value.iter().map(|v| to_repr(v)))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<OsString>, D::Error> {
        Vec::<Repr>::deserialize(d)?
            .into_iter()
            .map(from_repr)
            .collect()
    }
}

/// `#[serde(with = "os_text::pairs")]` for a `Vec<(OsString, OsString)>`
/// (an environment, in order).
pub mod pairs {
    use super::*;

    pub fn serialize<S: Serializer>(
        value: &[(OsString, OsString)],
        s: S,
    ) -> Result<S::Ok, S::Error> {
        s.collect_seq(value.iter().map(|(k, v)| (to_repr(k), to_repr(v))))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Vec<(OsString, OsString)>, D::Error> {
        Vec::<(Repr, Repr)>::deserialize(d)?
            .into_iter()
            .map(|(k, v)| {
                let key = from_repr::<D::Error>(k)?;
                if key.is_empty() || key.as_bytes().contains(&b'=') {
                    return Err(D::Error::custom(
                        "an environment variable name that is empty or holds '='",
                    ));
                }
                Ok((key, from_repr(v)?))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Sample {
        #[serde(with = "path")]
        program: PathBuf,
        #[serde(with = "list")]
        argv: Vec<OsString>,
        #[serde(with = "pairs")]
        env: Vec<(OsString, OsString)>,
    }

    proptest! {
        /// Any bytes come back as they went in; UTF-8 stays a plain string.
        #[test]
        fn bytes_survive_json(
            program in proptest::collection::vec(any::<u8>(), 0..20),
            argv in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..12), 0..4),
            value in proptest::collection::vec(any::<u8>(), 0..12),
        ) {
            let os = |b: &[u8]| OsString::from_vec(b.to_vec());
            let sample = Sample {
                program: PathBuf::from(os(&program)),
                argv: argv.iter().map(|a| os(a)).collect(),
                env: vec![(OsString::from("NAME"), os(&value))],
            };
            let json = serde_json::to_string(&sample).unwrap();
            let back: Sample = serde_json::from_str(&json).unwrap();
            prop_assert_eq!(&back, &sample);
            if let Ok(text) = std::str::from_utf8(&program) {
                prop_assert!(json.contains(&serde_json::to_string(text).unwrap()));
            }
        }
    }

    #[test]
    fn bad_hex_and_bad_names_are_errors() {
        for json in [
            r#"{"program":{"hex":"6"},"argv":[],"env":[]}"#,
            r#"{"program":{"hex":"zz"},"argv":[],"env":[]}"#,
            r#"{"program":"p","argv":[],"env":[["A=B","c"]]}"#,
            r#"{"program":"p","argv":[],"env":[["","c"]]}"#,
        ] {
            assert!(serde_json::from_str::<Sample>(json).is_err(), "{json}");
        }
    }
}

//! Sizes and durations with unit suffixes: `64GiB`, `4KiB`, `2GB`, `50us`, `1.5ms`, `30d`.
//!
//! Binary prefixes (KiB, MiB, GiB, TiB) are powers of 1024, decimal ones (KB, MB, GB, TB)
//! powers of 1000; a bare number is bytes or nanoseconds. Configuration fields that hold a
//! size or a duration accept either an integer or such a string, and are written back as
//! integers so that the configuration embedded in results is unambiguous.

fn split_number(s: &str) -> (&str, &str) {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(s.len());
    (&s[..end], s[end..].trim())
}

fn scaled(number: &str, scale: f64, what: &str, original: &str) -> Result<u64, String> {
    let cleaned: String = number.chars().filter(|&c| c != '_').collect();
    let value: f64 = cleaned
        .parse()
        .map_err(|_| format!("`{original}` is not a {what}"))?;
    let v = value * scale;
    if !v.is_finite() || v < 0.0 || v > u64::MAX as f64 {
        return Err(format!("`{original}` is out of range"));
    }
    if v.fract() != 0.0 {
        return Err(format!(
            "`{original}` is not a whole number of {}",
            if what == "size" {
                "bytes"
            } else {
                "nanoseconds"
            }
        ));
    }
    Ok(v as u64)
}

/// Parses a byte size such as `4096`, `4KiB`, `64 MiB`, `2GB`.
pub fn parse_bytes(s: &str) -> Result<u64, String> {
    let (number, unit) = split_number(s);
    let scale = match unit.to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kib" => 1024.0,
        "m" | "mib" => 1024.0 * 1024.0,
        "g" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tib" => 1024f64.powi(4),
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => {
            return Err(format!(
            "`{s}` has an unknown size unit `{unit}` (use B, KiB, MiB, GiB, TiB, KB, MB, GB, TB)"
        ))
        }
    };
    scaled(number, scale, "size", s)
}

/// Parses a duration such as `50000`, `50us`, `1.5ms`, `3 s` into nanoseconds.
pub fn parse_duration_ns(s: &str) -> Result<u64, String> {
    let (number, unit) = split_number(s);
    let scale = match unit {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        // Long durations: the media's retention time (`media.age_ns`).
        "min" => 60e9,
        "h" => 3600e9,
        "d" => 86_400e9,
        _ => {
            return Err(format!(
                "`{s}` has an unknown time unit `{unit}` (use ns, us, ms, s, min, h, d)"
            ))
        }
    };
    scaled(number, scale, "duration", s)
}

macro_rules! unit_serde {
    ($module:ident, $parse:ident, $expecting:literal) => {
        /// Serde adapter: reads an integer or a string with a unit, writes an integer.
        pub mod $module {
            use serde::{de, Deserializer, Serializer};
            use std::fmt;

            pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_u64(*v)
            }

            pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
                struct V;
                impl de::Visitor<'_> for V {
                    type Value = u64;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_u64<E: de::Error>(self, v: u64) -> Result<u64, E> {
                        Ok(v)
                    }
                    fn visit_i64<E: de::Error>(self, v: i64) -> Result<u64, E> {
                        u64::try_from(v).map_err(|_| E::custom(format!("{v} is negative")))
                    }
                    fn visit_f64<E: de::Error>(self, v: f64) -> Result<u64, E> {
                        if v >= 0.0 && v.fract() == 0.0 && v <= u64::MAX as f64 {
                            Ok(v as u64)
                        } else {
                            Err(E::custom(format!("{v} is not a whole non-negative number")))
                        }
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<u64, E> {
                        super::$parse(v).map_err(E::custom)
                    }
                }
                d.deserialize_any(V)
            }
        }
    };
}

unit_serde!(
    bytes,
    parse_bytes,
    "a size in bytes, as an integer or a string like \"64MiB\""
);
unit_serde!(
    nanos,
    parse_duration_ns,
    "a duration in nanoseconds, as an integer or a string like \"50us\""
);

/// Serde adapter for a list of sizes: each item an integer or a string with a unit.
pub mod bytes_list {
    use serde::{Deserialize, Deserializer, Serializer};

    #[derive(Deserialize)]
    struct Size(#[serde(with = "super::bytes")] u64);

    pub fn serialize<S: Serializer>(v: &[u64], s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(v)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u64>, D::Error> {
        Ok(Vec::<Size>::deserialize(d)?
            .into_iter()
            .map(|s| s.0)
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        assert_eq!(parse_bytes("4096"), Ok(4096));
        assert_eq!(parse_bytes("4KiB"), Ok(4096));
        assert_eq!(parse_bytes("64 MiB"), Ok(64 << 20));
        assert_eq!(parse_bytes("2GB"), Ok(2_000_000_000));
        assert_eq!(parse_bytes("1.5KiB"), Ok(1536));
        assert!(parse_bytes("12 parsecs")
            .unwrap_err()
            .contains("unknown size unit"));
        assert!(parse_bytes("0.3B").is_err());
        assert!(parse_bytes("KiB").is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration_ns("50us"), Ok(50_000));
        assert_eq!(parse_duration_ns("1.5ms"), Ok(1_500_000));
        assert_eq!(parse_duration_ns("3 s"), Ok(3_000_000_000));
        assert_eq!(parse_duration_ns("20"), Ok(20));
        assert!(parse_duration_ns("5 fortnights").is_err());
    }
}

//! gRPC metadata sent with every call, from `key:value` pairs (grpcurl's and curl's `-H`) or a
//! JSON object of keys and values (ghz's `-m`). A key ending in `-bin` takes base64; the keys
//! gRPC sets itself are refused.

use tonic::metadata::{MetadataKey, MetadataMap, MetadataValue};

/// Why a metadata entry is refused. Each names the entry as given.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum MetadataError {
    /// Not `key:value`.
    #[error("{entry:?}: expected key:value")]
    NotKeyValue {
        /// The entry.
        entry: String,
    },
    /// Not a JSON object of string values.
    #[error("{entry:?}: expected a JSON object of keys and string values: {source}")]
    NotJson {
        /// The entry.
        entry: String,
        /// The JSON parser's error.
        source: serde_json::Error,
    },
    /// A JSON object with a value that is not a string.
    #[error(
        "{entry:?}: expected a JSON object of keys and string values: the value of {key:?} is \
         {value}, not a string"
    )]
    NotAString {
        /// The entry.
        entry: String,
        /// The key.
        key: String,
        /// Its value.
        value: serde_json::Value,
    },
    /// A key gRPC sets itself.
    #[error("{entry:?}: {key} is set by gRPC itself (the deadline sets grpc-timeout; the authority, :authority)")]
    Reserved {
        /// The entry.
        entry: String,
        /// The key.
        key: String,
    },
    /// Not a valid key.
    #[error("{entry:?}: {key:?} is not a valid metadata key (lower-case letters, digits, - _ .)")]
    BadKey {
        /// The entry.
        entry: String,
        /// The key.
        key: String,
    },
    /// A `-bin` value that is not base64.
    #[error("{entry:?}: a -bin key takes a base64 value")]
    NotBase64 {
        /// The entry.
        entry: String,
    },
    /// A text value with characters metadata cannot carry.
    #[error("{entry:?}: the value must be printable ASCII")]
    BadValue {
        /// The entry.
        entry: String,
    },
}

/// Metadata from `entries`, each `key:value` or a JSON object `{"key":"value",...}`.
pub fn parse(entries: &[String]) -> Result<MetadataMap, MetadataError> {
    let mut map = MetadataMap::new();
    for entry in entries {
        if entry.trim_start().starts_with('{') {
            let object: serde_json::Map<String, serde_json::Value> = serde_json::from_str(entry)
                .map_err(|source| MetadataError::NotJson {
                    entry: entry.clone(),
                    source,
                })?;
            for (key, value) in object {
                let value = match value {
                    serde_json::Value::String(s) => s,
                    value => {
                        return Err(MetadataError::NotAString {
                            entry: entry.clone(),
                            key,
                            value,
                        })
                    }
                };
                add(&mut map, entry, &key, &value)?;
            }
            continue;
        }
        let (key, value) = entry
            .split_once(':')
            .ok_or_else(|| MetadataError::NotKeyValue {
                entry: entry.clone(),
            })?;
        add(&mut map, entry, key, value.trim_start())?;
    }
    Ok(map)
}

/// Adds one key and value.
fn add(map: &mut MetadataMap, entry: &str, key: &str, value: &str) -> Result<(), MetadataError> {
    let key = key.trim().to_ascii_lowercase();
    let entry = entry.to_string();
    if key.starts_with("grpc-")
        || key.starts_with(':')
        || ["content-type", "te", "user-agent"].contains(&key.as_str())
    {
        return Err(MetadataError::Reserved { entry, key });
    }
    if key.ends_with("-bin") {
        let k = MetadataKey::from_bytes(key.as_bytes()).map_err(|_| MetadataError::BadKey {
            entry: entry.clone(),
            key: key.clone(),
        })?;
        let bytes = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, value)
            .map_err(|_| MetadataError::NotBase64 {
                entry: entry.clone(),
            })?;
        map.append_bin(k, MetadataValue::from_bytes(&bytes));
    } else {
        let k = MetadataKey::from_bytes(key.as_bytes()).map_err(|_| MetadataError::BadKey {
            entry: entry.clone(),
            key: key.clone(),
        })?;
        let v: MetadataValue<_> = value
            .parse()
            .map_err(|_| MetadataError::BadValue { entry })?;
        map.append(k, v);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_checked() {
        let m = parse(&[
            "x-user: ann".into(),
            "trace-bin:AAEC".into(),
            r#"{"x-team":"b"}"#.into(),
        ])
        .unwrap();
        assert_eq!(m.get("x-user").unwrap(), "ann");
        assert_eq!(m.get("x-team").unwrap(), "b");
        assert_eq!(
            m.get_bin("trace-bin").unwrap().to_bytes().unwrap().as_ref(),
            &[0, 1, 2]
        );
        for (bad, says) in [
            ("novalue", "key:value"),
            ("grpc-timeout:1S", "set by gRPC"),
            ("bad key:1", "not a valid metadata key"),
            ("x-bin:!!", "base64"),
            (r#"{"a":1}"#, "not a string"),
        ] {
            let e = parse(&[bad.into()]).unwrap_err().to_string();
            assert!(e.contains(says), "{bad}: {e}");
        }
    }
}

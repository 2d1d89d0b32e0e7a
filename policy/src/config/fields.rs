//! What every policy's config reader shares: the [`Fields`] reader of one JSON object (which
//! names the field in every error, and ignores unknown fields as gRPC does, reporting them to
//! [`collect_ignored`]) and the [`ConfigError`] it returns.
//! Policy modules import this file; it imports no policy, so the policy table above it can name
//! them all without an import circle.

use std::cell::RefCell;
use std::fmt;

use serde_json::{Map, Value};

use crate::p2c::MAX_CHOICES;
use crate::{duration, Nanos};

/// An invalid service config: where (a JSON path such as
/// `loadBalancingConfig[0].peak_ewma_experimental.choiceCount`) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub struct ConfigError {
    /// JSON path of the offending field (empty for the document itself).
    pub path: String,
    /// What is wrong and what would be valid.
    pub message: String,
    /// 1-based line and column, for JSON syntax errors.
    pub position: Option<(usize, usize)>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.position, self.path.is_empty()) {
            (Some((line, col)), _) => write!(f, "line {line}, column {col}: {}", self.message),
            (None, true) => write!(f, "{}", self.message),
            (None, false) => write!(f, "`{}`: {}", self.path, self.message),
        }
    }
}

impl ConfigError {
    pub(crate) fn at(path: &str, message: impl Into<String>) -> Self {
        ConfigError {
            path: path.to_string(),
            message: message.into(),
            position: None,
        }
    }
}

thread_local! {
    /// The unknown fields the parses of this thread ignored while [`collect_ignored`] runs one;
    /// `None` otherwise (no parse pays for a list nobody reads).
    static IGNORED: RefCell<Option<Vec<ConfigError>>> = const { RefCell::new(None) };
}

/// Runs `parse` and returns what it returned with the unknown fields it ignored, each as a
/// [`ConfigError`] naming the field (its message says it was ignored and lists the known ones).
pub(crate) fn collect_ignored<T>(parse: impl FnOnce() -> T) -> (T, Vec<ConfigError>) {
    let outer = IGNORED.with(|i| i.borrow_mut().replace(Vec::new()));
    let parsed = parse();
    let ignored = IGNORED.with(|i| std::mem::replace(&mut *i.borrow_mut(), outer));
    (parsed, ignored.unwrap_or_default())
}

/// Reads the fields of one JSON object, remembering which were read so unknown ones are known.
pub(crate) struct Fields<'a> {
    map: &'a Map<String, Value>,
    path: String,
    read: Vec<&'static str>,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(value: &'a Value, path: &str) -> Result<Self, ConfigError> {
        let map = value.as_object().ok_or_else(|| {
            ConfigError::at(path, format!("must be a JSON object, found {value}"))
        })?;
        Ok(Fields {
            map,
            path: path.to_string(),
            read: Vec::new(),
        })
    }

    /// The JSON path of field `key` of this object.
    pub(crate) fn path_of(&self, key: &str) -> String {
        format!("{}.{key}", self.path)
    }

    pub(crate) fn err(&self, key: &str, message: impl Into<String>) -> ConfigError {
        ConfigError::at(&self.path_of(key), message)
    }

    /// Whether field `key` is present (and not null), without marking it read.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.map.get(key).is_some_and(|v| !v.is_null())
    }

    pub(crate) fn take(&mut self, key: &'static str) -> Option<&'a Value> {
        self.read.push(key);
        self.map.get(key).filter(|v| !v.is_null())
    }

    /// The fields of this object that were not read, each as an error naming it.
    fn unknown(&self, what: &str) -> Vec<ConfigError> {
        let known = if self.read.is_empty() {
            "none".to_string()
        } else {
            self.read.join(", ")
        };
        self.map
            .keys()
            .filter(|key| !self.read.contains(&key.as_str()))
            .map(|key| {
                self.err(
                    key,
                    format!("unknown field{what}; known fields here: {known}"),
                )
            })
            .collect()
    }

    /// Ends the object: its unknown fields are ignored, as gRPC's parsers ignore them (grpc-go's
    /// `ConfigParser` contract: "for future compatibility reasons, unknown fields in the config
    /// should be ignored"; grpc-java and C-core read only the fields they know), and reported to
    /// [`collect_ignored`] for the lab's warnings.
    pub(crate) fn finish(self) -> Result<(), ConfigError> {
        let unknown = self.unknown(", ignored (as gRPC ignores it)");
        if !unknown.is_empty() {
            IGNORED.with(|i| {
                if let Some(list) = i.borrow_mut().as_mut() {
                    list.extend(unknown);
                }
            });
        }
        Ok(())
    }

    /// Ends an object of the lab's own (`lblabAblation`), which no gRPC implementation reads: an
    /// unknown field there is a typo that would silently measure another variation, so it is
    /// rejected.
    pub(crate) fn finish_strict(self) -> Result<(), ConfigError> {
        match self.unknown("").into_iter().next() {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    pub(crate) fn u32(&mut self, key: &'static str, default: u32) -> Result<u32, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_u64()
            .and_then(|n| u32::try_from(n).ok())
            .ok_or_else(|| {
                self.err(
                    key,
                    format!("{v} is not a whole number from 0 to 4294967295"),
                )
            })
    }

    pub(crate) fn percent(&mut self, key: &'static str, default: u32) -> Result<u32, ConfigError> {
        let v = self.u32(key, default)?;
        if v > 100 {
            return Err(self.err(
                key,
                format!("{v} is above 100; a percentage must be 0..=100"),
            ));
        }
        Ok(v)
    }

    pub(crate) fn f64(&mut self, key: &'static str, default: f64) -> Result<f64, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_f64()
            .filter(|x| x.is_finite())
            .ok_or_else(|| self.err(key, format!("{v} is not a number")))
    }

    pub(crate) fn bool(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_bool()
            .ok_or_else(|| self.err(key, format!("{v} is not true or false")))
    }

    pub(crate) fn duration(
        &mut self,
        key: &'static str,
        default: Nanos,
    ) -> Result<Nanos, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        let text = v.as_str().ok_or_else(|| {
            self.err(
                key,
                format!("{v} is not a duration string; write e.g. \"10s\" or \"0.030s\""),
            )
        })?;
        duration::parse(text).map_err(|m| self.err(key, m.to_string()))
    }

    pub(crate) fn positive_duration(
        &mut self,
        key: &'static str,
        default: Nanos,
    ) -> Result<Nanos, ConfigError> {
        let d = self.duration(key, default)?;
        if d == 0 {
            return Err(self.err(key, "must be greater than 0s"));
        }
        Ok(d)
    }

    /// `choiceCount` as A48 defines it: default 2, below 2 rejected, above 10 clamped.
    pub(crate) fn choice_count(&mut self) -> Result<u32, ConfigError> {
        let n = self.u32("choiceCount", 2)?;
        if n < 2 {
            return Err(self.err("choiceCount", format!("{n} is below 2; choiceCount must be at least 2 (values above {MAX_CHOICES} are clamped to {MAX_CHOICES})")));
        }
        Ok(n.min(MAX_CHOICES))
    }

    /// The nested object `key`, if present, read by `read`; its unknown fields are ignored as
    /// gRPC ignores them ([`finish`](Self::finish)).
    pub(crate) fn object<T>(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Fields<'a>) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        self.nested(key, read, Fields::finish)
    }

    /// [`object`](Self::object) for an object of the lab's own, whose unknown fields are
    /// rejected ([`finish_strict`](Self::finish_strict)).
    pub(crate) fn lab_object<T>(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Fields<'a>) -> Result<T, ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        self.nested(key, read, Fields::finish_strict)
    }

    fn nested<T>(
        &mut self,
        key: &'static str,
        read: impl FnOnce(&mut Fields<'a>) -> Result<T, ConfigError>,
        finish: fn(Fields<'a>) -> Result<(), ConfigError>,
    ) -> Result<Option<T>, ConfigError> {
        let path = self.path_of(key);
        let Some(v) = self.take(key) else {
            return Ok(None);
        };
        let mut o = Fields::new(v, &path)?;
        let parsed = read(&mut o)?;
        finish(o)?;
        Ok(Some(parsed))
    }

    /// A string field naming one of `choices` (`(name, value)` pairs).
    pub(crate) fn choice<T: Copy>(
        &mut self,
        key: &'static str,
        choices: &[(&'static str, T)],
        default: T,
    ) -> Result<T, ConfigError> {
        let Some(v) = self.take(key) else {
            return Ok(default);
        };
        v.as_str()
            .and_then(|s| choices.iter().find(|(name, _)| *name == s))
            .map(|&(_, value)| value)
            .ok_or_else(|| {
                let names: Vec<&str> = choices.iter().map(|(name, _)| *name).collect();
                self.err(key, format!("{v} is not one of {}", names.join(", ")))
            })
    }
}

/// The name of `value` among `choices`, as [`Fields::choice`] reads it.
pub(crate) fn choice_name<T: PartialEq>(choices: &[(&'static str, T)], value: T) -> &'static str {
    choices
        .iter()
        .find(|(_, v)| *v == value)
        .map(|(name, _)| *name)
        .expect("every value has a name")
}

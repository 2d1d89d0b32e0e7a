//! Who checks in: a pod's id, `<group>-<index>` ([`PodId`]), the groups a starter waits for
//! ([`Group`]: `fleet=20`), and a list of ids for messages ([`list`]: `fleet-0 to fleet-19`).

use std::fmt;
use std::str::FromStr;

use super::BarrierError;

/// The most pods of one group: more than any deployment writes (a fleet's backends, a run's
/// shards), few enough that an index is a short number.
pub const MAX_GROUP: usize = 100_000;

/// A pod that checks in: its group (`fleet`, `loadgen`, `collect`) and its index in it (the
/// Indexed Job's completion index).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PodId {
    /// Its group: a lower-case letter, then lower-case letters and digits.
    pub group: String,
    /// Its index in the group, from 0.
    pub index: usize,
}

impl fmt::Display for PodId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.group, self.index)
    }
}

/// Whether `name` is a group's name: a lower-case letter, then up to 30 lower-case letters and
/// digits.
fn is_group_name(name: &str) -> bool {
    name.len() <= 31
        && name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
}

/// A whole number of at most six digits, without a sign or a leading zero (other than 0 itself).
fn small_number(text: &str) -> Option<usize> {
    let plain = !text.is_empty()
        && text.len() <= 6
        && text.chars().all(|c| c.is_ascii_digit())
        && (text == "0" || !text.starts_with('0'));
    plain.then(|| text.parse().ok()).flatten()
}

impl FromStr for PodId {
    type Err = BarrierError;

    /// `fleet-3`: a group's name, `-`, an index.
    fn from_str(text: &str) -> Result<PodId, BarrierError> {
        let bad = || BarrierError::Id(text.to_string());
        let (group, index) = text.rsplit_once('-').ok_or_else(bad)?;
        if !is_group_name(group) {
            return Err(bad());
        }
        let index = small_number(index).ok_or_else(bad)?;
        Ok(PodId {
            group: group.to_string(),
            index,
        })
    }
}

/// A group of pods a starter waits for: `count` pods with the ids `<name>-0` to
/// `<name>-<count - 1>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The group's name.
    pub name: String,
    /// How many pods it has: at least 1, at most [`MAX_GROUP`].
    pub count: usize,
}

impl Group {
    /// Whether `id` is one of this group's pods.
    pub fn has(&self, id: &PodId) -> bool {
        id.group == self.name && id.index < self.count
    }

    /// Its pods' ids.
    pub fn ids(&self) -> impl Iterator<Item = PodId> + '_ {
        (0..self.count).map(|index| PodId {
            group: self.name.clone(),
            index,
        })
    }
}

impl FromStr for Group {
    type Err = BarrierError;

    /// `fleet=20`: a group's name, `=`, how many pods it has.
    fn from_str(text: &str) -> Result<Group, BarrierError> {
        let bad = || BarrierError::Group(text.to_string());
        let (name, count) = text.split_once('=').ok_or_else(bad)?;
        let count = small_number(count)
            .filter(|n| (1..=MAX_GROUP).contains(n))
            .ok_or_else(bad)?;
        if !is_group_name(name) {
            return Err(bad());
        }
        Ok(Group {
            name: name.to_string(),
            count,
        })
    }
}

impl fmt::Display for Group {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}={}", self.name, self.count)
    }
}

/// `ids` for a message, sorted, each run of consecutive indices of a group as one range:
/// `fleet-0 to fleet-19, loadgen-1`.
pub fn list(ids: &[PodId]) -> String {
    let mut ids = ids.to_vec();
    ids.sort();
    ids.dedup();
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len()
            && ids[j + 1].group == ids[i].group
            && ids[j + 1].index == ids[j].index + 1
        {
            j += 1;
        }
        parts.push(match j - i {
            0 => ids[i].to_string(),
            1 => format!("{}, {}", ids[i], ids[j]),
            _ => format!("{} to {}", ids[i], ids[j]),
        });
        i = j + 1;
    }
    parts.join(", ")
}

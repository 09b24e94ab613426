//! [`KeyState`]: the state of one grouping key of a [`super::StatefulProcessor`], as Spark's
//! `transformWithState` handles give it: named value, list and map state variables and
//! processing-time timers. Values are any serde type, kept as JSON.

use std::collections::{BTreeMap, BTreeSet};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use tributary_sdk::{Error, ErrorCode, Result};

/// Everything one key holds; what is saved per key.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct Entry {
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    values: BTreeMap<String, serde_json::Value>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    lists: BTreeMap<String, Vec<serde_json::Value>>,
    /// Map keys as their JSON text, so any serde key type orders and compares.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    maps: BTreeMap<String, BTreeMap<String, serde_json::Value>>,
    #[serde(default, skip_serializing_if = "BTreeSet::is_empty")]
    pub(crate) timers: BTreeSet<i64>,
}

impl Entry {
    /// Whether the key holds nothing (it then leaves the state).
    pub(crate) fn is_empty(&self) -> bool {
        self.values.is_empty()
            && self.lists.values().all(Vec::is_empty)
            && self.maps.values().all(BTreeMap::is_empty)
            && self.timers.is_empty()
    }

    pub(crate) fn encode(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| codec("encoding", e))
    }

    pub(crate) fn decode(bytes: &[u8]) -> Result<Entry> {
        serde_json::from_slice(bytes).map_err(|e| codec("decoding", e))
    }
}

fn codec(what: &str, e: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorCode::Internal,
        format!("[transformWithState] {what} a state value: {e}"),
    )
}

fn to_json<T: Serialize>(v: &T) -> Result<serde_json::Value> {
    serde_json::to_value(v).map_err(|e| codec("encoding", e))
}

fn from_json<T: DeserializeOwned>(v: &serde_json::Value) -> Result<T> {
    T::deserialize(v).map_err(|e| codec("decoding", e))
}

/// The state of the key being processed. Changes are kept when the handler returns `Ok`; a key
/// left holding nothing (no value, list, map entry or timer) leaves the state.
#[derive(Debug, Default)]
pub struct KeyState {
    pub(crate) entry: Entry,
}

impl KeyState {
    /// The value state variable `name`, if set.
    pub fn get_value<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>> {
        self.entry.values.get(name).map(from_json).transpose()
    }

    /// Sets the value state variable `name`.
    pub fn set_value<T: Serialize>(&mut self, name: &str, value: &T) -> Result<()> {
        self.entry.values.insert(name.to_string(), to_json(value)?);
        Ok(())
    }

    /// Removes the value state variable `name`.
    pub fn clear_value(&mut self, name: &str) {
        self.entry.values.remove(name);
    }

    /// The list state variable `name` (empty if never set).
    pub fn get_list<T: DeserializeOwned>(&self, name: &str) -> Result<Vec<T>> {
        self.entry
            .lists
            .get(name)
            .map_or(Ok(Vec::new()), |l| l.iter().map(from_json).collect())
    }

    /// Appends to the list state variable `name`.
    pub fn append_list<T: Serialize>(&mut self, name: &str, value: &T) -> Result<()> {
        let v = to_json(value)?;
        self.entry
            .lists
            .entry(name.to_string())
            .or_default()
            .push(v);
        Ok(())
    }

    /// Replaces the list state variable `name`.
    pub fn put_list<T: Serialize>(&mut self, name: &str, values: &[T]) -> Result<()> {
        let l = values.iter().map(to_json).collect::<Result<Vec<_>>>()?;
        self.entry.lists.insert(name.to_string(), l);
        Ok(())
    }

    /// Removes the list state variable `name`.
    pub fn clear_list(&mut self, name: &str) {
        self.entry.lists.remove(name);
    }

    /// The value under `key` in the map state variable `name`.
    pub fn get_map<K: Serialize, V: DeserializeOwned>(
        &self,
        name: &str,
        key: &K,
    ) -> Result<Option<V>> {
        let k = map_key(key)?;
        self.entry
            .maps
            .get(name)
            .and_then(|m| m.get(&k))
            .map(from_json)
            .transpose()
    }

    /// Puts `value` under `key` in the map state variable `name`.
    pub fn put_map<K: Serialize, V: Serialize>(
        &mut self,
        name: &str,
        key: &K,
        value: &V,
    ) -> Result<()> {
        let (k, v) = (map_key(key)?, to_json(value)?);
        self.entry
            .maps
            .entry(name.to_string())
            .or_default()
            .insert(k, v);
        Ok(())
    }

    /// Removes `key` from the map state variable `name`.
    pub fn remove_map<K: Serialize>(&mut self, name: &str, key: &K) -> Result<()> {
        let k = map_key(key)?;
        if let Some(m) = self.entry.maps.get_mut(name) {
            m.remove(&k);
        }
        Ok(())
    }

    /// Every entry of the map state variable `name`, in key order of their JSON text.
    pub fn map_entries<K: DeserializeOwned, V: DeserializeOwned>(
        &self,
        name: &str,
    ) -> Result<Vec<(K, V)>> {
        let Some(m) = self.entry.maps.get(name) else {
            return Ok(Vec::new());
        };
        m.iter()
            .map(|(k, v)| {
                let k: serde_json::Value =
                    serde_json::from_str(k).map_err(|e| codec("decoding", e))?;
                Ok((from_json(&k)?, from_json(v)?))
            })
            .collect()
    }

    /// Registers a processing-time timer firing at the end of the first batch (or real-time
    /// chunk) ending at or after `expiry_ms` (epoch milliseconds).
    pub fn register_timer(&mut self, expiry_ms: i64) {
        self.entry.timers.insert(expiry_ms);
    }

    /// Deletes a registered timer.
    pub fn delete_timer(&mut self, expiry_ms: i64) {
        self.entry.timers.remove(&expiry_ms);
    }

    /// The key's registered timers, earliest first.
    pub fn list_timers(&self) -> Vec<i64> {
        self.entry.timers.iter().copied().collect()
    }

    /// Removes everything the key holds (values, lists, maps and timers).
    pub fn clear(&mut self) {
        self.entry = Entry::default();
    }
}

fn map_key<K: Serialize>(key: &K) -> Result<String> {
    serde_json::to_string(key).map_err(|e| codec("encoding", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_lists_maps_and_timers_round_trip_through_the_saved_form() {
        let mut s = KeyState::default();
        s.set_value("count", &3u64).unwrap();
        s.append_list("recent", &"a").unwrap();
        s.append_list("recent", &"b").unwrap();
        s.put_map("by_action", &"click", &2u32).unwrap();
        s.register_timer(1_000);
        let back = KeyState {
            entry: Entry::decode(&s.entry.encode().unwrap()).unwrap(),
        };
        assert_eq!(back.get_value::<u64>("count").unwrap(), Some(3));
        assert_eq!(back.get_list::<String>("recent").unwrap(), vec!["a", "b"]);
        assert_eq!(
            back.get_map::<_, u32>("by_action", &"click").unwrap(),
            Some(2)
        );
        assert_eq!(
            back.map_entries::<String, u32>("by_action").unwrap(),
            vec![("click".to_string(), 2)]
        );
        assert_eq!(back.list_timers(), vec![1_000]);
        // a wrong type is an error, not a panic
        assert!(back.get_value::<String>("count").is_err());
        let mut s = back;
        s.clear_value("count");
        s.clear_list("recent");
        s.remove_map("by_action", &"click").unwrap();
        assert!(!s.entry.is_empty(), "a timer is still held");
        s.delete_timer(1_000);
        assert!(s.entry.is_empty());
    }
}

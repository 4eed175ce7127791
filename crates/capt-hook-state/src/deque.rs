//! `Deque<T, N>`: a collection that keeps only its newest `N` items, including across reloads.

use std::borrow::Cow;
use std::collections::VecDeque;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{Deserialize, Deserializer, SeqAccess, Visitor};
use serde::ser::{Serialize, Serializer};

/// A bounded deque: appending past `N` evicts the oldest item, and loading keeps the last `N`
/// items of the stored array, so a durable collection can never grow without bound. Serializes
/// as a plain JSON array. It dereferences to [`VecDeque`] for reading; writes go through the
/// methods below, which keep the bound.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Deque<T, const N: usize>(VecDeque<T>);

impl<T, const N: usize> Deque<T, N> {
    /// An empty deque.
    pub fn new() -> Deque<T, N> {
        Deque(VecDeque::new())
    }

    /// The bound.
    pub const fn capacity_bound() -> usize {
        N
    }

    /// Appends at the back, evicting from the front past the bound; returns the evicted item.
    pub fn push_back(&mut self, item: T) -> Option<T> {
        if N == 0 {
            return Some(item);
        }
        let evicted = if self.0.len() >= N {
            self.0.pop_front()
        } else {
            None
        };
        self.0.push_back(item);
        evicted
    }

    /// Same as [`Deque::push_back`] (the Python `append`).
    pub fn append(&mut self, item: T) -> Option<T> {
        self.push_back(item)
    }

    /// Removes and returns the oldest item.
    pub fn pop_front(&mut self) -> Option<T> {
        self.0.pop_front()
    }

    /// Removes and returns the newest item.
    pub fn pop_back(&mut self) -> Option<T> {
        self.0.pop_back()
    }

    /// Removes every item.
    pub fn clear(&mut self) {
        self.0.clear();
    }

    /// Keeps the items for which `f` is true.
    pub fn retain(&mut self, f: impl FnMut(&T) -> bool) {
        self.0.retain(f);
    }

    /// The items, oldest first.
    pub fn into_inner(self) -> VecDeque<T> {
        self.0
    }
}

impl<T, const N: usize> Default for Deque<T, N> {
    fn default() -> Self {
        Deque::new()
    }
}

impl<T, const N: usize> std::ops::Deref for Deque<T, N> {
    type Target = VecDeque<T>;
    fn deref(&self) -> &VecDeque<T> {
        &self.0
    }
}

impl<T: fmt::Debug, const N: usize> fmt::Debug for Deque<T, N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.0.iter()).finish()
    }
}

impl<T, const N: usize> Extend<T> for Deque<T, N> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for item in iter {
            self.push_back(item);
        }
    }
}

impl<T, const N: usize> FromIterator<T> for Deque<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        let mut d = Deque::new();
        d.extend(iter);
        d
    }
}

impl<'a, T, const N: usize> IntoIterator for &'a Deque<T, N> {
    type Item = &'a T;
    type IntoIter = std::collections::vec_deque::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<T, const N: usize> IntoIterator for Deque<T, N> {
    type Item = T;
    type IntoIter = std::collections::vec_deque::IntoIter<T>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.into_iter()
    }
}

impl<T: Serialize, const N: usize> Serialize for Deque<T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter())
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for Deque<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Seq<T, const N: usize>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for Seq<T, N> {
            type Value = Deque<T, N>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "an array (the last {N} items are kept)")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                // Evicting while reading keeps memory at N items however long the stored array.
                let mut out = Deque::new();
                while let Some(item) = seq.next_element()? {
                    out.push_back(item);
                }
                Ok(out)
            }
        }
        d.deserialize_seq(Seq::<T, N>(std::marker::PhantomData))
    }
}

impl<T: JsonSchema, const N: usize> JsonSchema for Deque<T, N> {
    fn schema_name() -> Cow<'static, str> {
        format!("Deque_{}_{N}", T::schema_name()).into()
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "type": "array",
            "items": generator.subschema_for::<T>(),
            "maxItems": N,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn appending_evicts_the_oldest() {
        let mut d: Deque<String, 2> = Deque::new();
        assert_eq!(d.append("a".into()), None);
        d.append("b".into());
        assert_eq!(d.append("c".into()), Some("a".into()));
        assert_eq!(d.iter().cloned().collect::<Vec<_>>(), ["b", "c"]);
        assert_eq!(serde_json::to_string(&d).unwrap(), r#"["b","c"]"#);
    }

    #[test]
    fn loading_keeps_the_last_n() {
        let d: Deque<u32, 3> = serde_json::from_str("[1,2,3,4,5]").unwrap();
        assert_eq!(d.iter().copied().collect::<Vec<_>>(), [3, 4, 5]);
        let e: Deque<u32, 0> = serde_json::from_str("[1]").unwrap();
        assert!(e.is_empty());
        assert!(serde_json::from_str::<Deque<u32, 3>>("{}").is_err());
    }

    #[test]
    fn schema_is_a_bounded_array() {
        let s = schemars::schema_for!(Deque<String, 256>);
        let v = s.as_value();
        assert_eq!(v["type"], "array");
        assert_eq!(v["maxItems"], 256);
        assert_eq!(v["items"]["type"], "string");
    }
}

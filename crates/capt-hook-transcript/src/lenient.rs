//! JSON readers that never fail on a type mismatch: a value of an unexpected type reads as
//! "absent" (consumed without being allocated) instead of failing the whole line.

use std::fmt;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// The longest prefix of `s` of at most `cap` bytes that ends on a character boundary.
pub(crate) fn clip(s: &str, cap: usize) -> &str {
    if s.len() <= cap {
        return s;
    }
    let mut end = cap;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

/// Implements the visitor methods for every JSON type a lenient reader does not want: the value
/// is consumed and the reader's default comes back.
macro_rules! ignore_other_types {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
        fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

macro_rules! ignore_strings {
    () => {
        fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
            Ok(Default::default())
        }
    };
}

macro_rules! ignore_seqs {
    () => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            while seq.next_element::<IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

macro_rules! ignore_maps {
    () => {
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok(Default::default())
        }
    };
}

/// A string, or `None` for any other JSON value.
#[derive(Debug, Default)]
pub(crate) struct LStr(pub Option<String>);

impl<'de> Deserialize<'de> for LStr {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = LStr;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<LStr, E> {
                Ok(LStr(Some(s.to_owned())))
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<LStr, E> {
                Ok(LStr(Some(s)))
            }
            ignore_other_types!();
            ignore_seqs!();
            ignore_maps!();
        }
        d.deserialize_any(V)
    }
}

/// JSON truthiness (`true`, a non-zero number, a non-empty string or collection).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Flag(pub bool);

impl<'de> Deserialize<'de> for Flag {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Flag;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Flag, E> {
                Ok(Flag(b))
            }
            fn visit_i64<E: de::Error>(self, n: i64) -> Result<Flag, E> {
                Ok(Flag(n != 0))
            }
            fn visit_u64<E: de::Error>(self, n: u64) -> Result<Flag, E> {
                Ok(Flag(n != 0))
            }
            fn visit_f64<E: de::Error>(self, n: f64) -> Result<Flag, E> {
                Ok(Flag(n != 0.0))
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Flag, E> {
                Ok(Flag(!s.is_empty()))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Flag, E> {
                Ok(Flag(false))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Flag, A::Error> {
                let mut any = false;
                while seq.next_element::<IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(Flag(any))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Flag, A::Error> {
                let mut any = false;
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
                    any = true;
                }
                Ok(Flag(any))
            }
        }
        d.deserialize_any(V)
    }
}

/// Exactly JSON `true` (the `isAsync` marker is compared strictly, as the original does).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct IsTrue(pub bool);

impl<'de> Deserialize<'de> for IsTrue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = IsTrue;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<IsTrue, E> {
                Ok(IsTrue(b))
            }
            fn visit_i64<E: de::Error>(self, _: i64) -> Result<IsTrue, E> {
                Ok(IsTrue(false))
            }
            fn visit_u64<E: de::Error>(self, _: u64) -> Result<IsTrue, E> {
                Ok(IsTrue(false))
            }
            fn visit_f64<E: de::Error>(self, _: f64) -> Result<IsTrue, E> {
                Ok(IsTrue(false))
            }
            fn visit_unit<E: de::Error>(self) -> Result<IsTrue, E> {
                Ok(IsTrue(false))
            }
            ignore_strings!();
            ignore_seqs!();
            ignore_maps!();
        }
        d.deserialize_any(V)
    }
}

/// A struct read only when the value is an object; anything else reads as `None`.
#[derive(Debug)]
pub(crate) struct Lenient<T>(pub Option<T>);

impl<T> Default for Lenient<T> {
    fn default() -> Self {
        Lenient(None)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Lenient<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Lenient<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any value")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Lenient<T>, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map)).map(|v| Lenient(Some(v)))
            }
            ignore_other_types!();
            ignore_strings!();
            ignore_seqs!();
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

pub(crate) use {ignore_maps, ignore_other_types, ignore_seqs, ignore_strings};

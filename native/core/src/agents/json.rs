//! A JSON document that keeps its keys in the order they were written: the agents' settings files
//! are the user's, and `chokepoint init` edits them without reordering what it did not add.
//!
//! serde_json keeps order only with its `preserve_order` feature, which would change the key order
//! of everything the engine serialises (records, subjects, digests) in every crate of the build; a
//! document type of our own keeps that choice to this file.

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use std::fmt;

#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    Number(serde_json::Number),
    String(String),
    Array(Vec<Json>),
    Object(Object),
}

/// An object's members in the order they were written. A key given twice keeps its first place and
/// its last value, as JSON readers do.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Object(Vec<(String, Json)>);

impl Object {
    pub fn get(&self, key: &str) -> Option<&Json> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Json> {
        self.0.iter_mut().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// Sets `key`: in its place when it is there, else at the end.
    pub fn insert(&mut self, key: &str, value: Json) {
        match self.get_mut(key) {
            Some(slot) => *slot = value,
            None => self.0.push((key.to_owned(), value)),
        }
    }

    pub fn remove(&mut self, key: &str) -> Option<Json> {
        let i = self.0.iter().position(|(k, _)| k == key)?;
        Some(self.0.remove(i).1)
    }

    /// The value of `key`, inserted at the end with `make` when it is not there.
    pub fn entry(&mut self, key: &str, make: impl FnOnce() -> Json) -> &mut Json {
        let i = match self.0.iter().position(|(k, _)| k == key) {
            Some(i) => i,
            None => {
                self.0.push((key.to_owned(), make()));
                self.0.len() - 1
            }
        };
        &mut self.0[i].1
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &Json)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    pub fn iter_mut(&mut self) -> impl Iterator<Item = (&str, &mut Json)> {
        self.0.iter_mut().map(|(k, v)| (k.as_str(), v))
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&str, &Json) -> bool) {
        self.0.retain(|(k, v)| keep(k, v));
    }
}

impl<const N: usize> From<[(&str, Json); N]> for Object {
    fn from(members: [(&str, Json); N]) -> Object {
        let mut object = Object::default();
        for (k, v) in members {
            object.insert(k, v);
        }
        object
    }
}

impl Json {
    /// An object of these members, in this order.
    pub fn object<const N: usize>(members: [(&str, Json); N]) -> Json {
        Json::Object(Object::from(members))
    }

    pub fn as_object(&self) -> Option<&Object> {
        if let Json::Object(o) = self { Some(o) } else { None }
    }

    pub fn as_object_mut(&mut self) -> Option<&mut Object> {
        if let Json::Object(o) = self { Some(o) } else { None }
    }

    pub fn as_array(&self) -> Option<&Vec<Json>> {
        if let Json::Array(a) = self { Some(a) } else { None }
    }

    pub fn as_array_mut(&mut self) -> Option<&mut Vec<Json>> {
        if let Json::Array(a) = self { Some(a) } else { None }
    }

    pub fn as_str(&self) -> Option<&str> {
        if let Json::String(s) = self { Some(s) } else { None }
    }

    pub fn as_f64(&self) -> Option<f64> {
        if let Json::Number(n) = self { n.as_f64() } else { None }
    }

    pub fn as_bool(&self) -> Option<bool> {
        if let Json::Bool(b) = self { Some(*b) } else { None }
    }

    pub fn get(&self, key: &str) -> Option<&Json> {
        self.as_object().and_then(|o| o.get(key))
    }

    /// What kind of value this is, for a message.
    pub fn kind(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "a boolean",
            Json::Number(_) => "a number",
            Json::String(_) => "a string",
            Json::Array(_) => "an array",
            Json::Object(_) => "an object",
        }
    }

    /// The document as text, indented with `indent`, ending with a newline.
    pub fn to_text(&self, indent: &str) -> String {
        let mut out = Vec::new();
        let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
        let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
        self.serialize(&mut serializer).expect("a JSON document serialises into memory");
        let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
        text.push('\n');
        text
    }
}

impl From<&str> for Json {
    fn from(s: &str) -> Json {
        Json::String(s.to_owned())
    }
}

impl From<String> for Json {
    fn from(s: String) -> Json {
        Json::String(s)
    }
}

impl From<u64> for Json {
    fn from(n: u64) -> Json {
        Json::Number(n.into())
    }
}

impl From<bool> for Json {
    fn from(b: bool) -> Json {
        Json::Bool(b)
    }
}

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Json::Null => serializer.serialize_unit(),
            Json::Bool(b) => serializer.serialize_bool(*b),
            Json::Number(n) => n.serialize(serializer),
            Json::String(s) => serializer.serialize_str(s),
            Json::Array(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            Json::Object(object) => {
                let mut map = serializer.serialize_map(Some(object.0.len()))?;
                for (k, v) in &object.0 {
                    map.serialize_entry(k, v)?;
                }
                map.end()
            }
        }
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        deserializer.deserialize_any(JsonVisitor)
    }
}

struct JsonVisitor;

impl<'de> Visitor<'de> for JsonVisitor {
    type Value = Json;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, b: bool) -> Result<Json, E> {
        Ok(Json::Bool(b))
    }

    fn visit_i64<E>(self, n: i64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_u64<E>(self, n: u64) -> Result<Json, E> {
        Ok(Json::Number(n.into()))
    }

    fn visit_f64<E: de::Error>(self, n: f64) -> Result<Json, E> {
        serde_json::Number::from_f64(n).map(Json::Number).ok_or_else(|| E::custom("a number JSON cannot hold"))
    }

    fn visit_str<E>(self, s: &str) -> Result<Json, E> {
        Ok(Json::String(s.to_owned()))
    }

    fn visit_string<E>(self, s: String) -> Result<Json, E> {
        Ok(Json::String(s))
    }

    fn visit_unit<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_none<E>(self) -> Result<Json, E> {
        Ok(Json::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Json, D::Error> {
        Json::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Json, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Json::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Json, A::Error> {
        let mut object = Object::default();
        while let Some((k, v)) = map.next_entry::<String, Json>()? {
            object.insert(&k, v);
        }
        Ok(Json::Object(object))
    }
}

/// `text`, a file VS Code reads as JSON with comments (`.vscode/settings.json`), as plain JSON: its
/// `//` and `/* */` comments and its trailing commas blanked out, strings untouched, so that a
/// serde reader takes it and its errors keep their line and column.
pub fn without_comments(text: &str) -> String {
    let mut out = text.as_bytes().to_vec();
    // First the comments, then (on what is left) the commas before a closing bracket.
    let mut in_string = false;
    let mut i = 0;
    while i < out.len() {
        match (in_string, out[i]) {
            (true, b'\\') => i += 1,
            (_, b'"') => in_string = !in_string,
            (false, b'/') if matches!(out.get(i + 1), Some(b'/' | b'*')) => {
                let line = out[i + 1] == b'/';
                let mut j = i + 2;
                while j < out.len() && !(if line { out[j] == b'\n' } else { out[j - 1] == b'*' && out[j] == b'/' && j > i + 2 }) {
                    j += 1;
                }
                let end = if line { j } else { (j + 1).min(out.len()) };
                for b in &mut out[i..end] {
                    if *b != b'\n' {
                        *b = b' ';
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    in_string = false;
    i = 0;
    while i < out.len() {
        match (in_string, out[i]) {
            (true, b'\\') => i += 1,
            (_, b'"') => in_string = !in_string,
            (false, b',') if matches!(out[i + 1..].iter().find(|b| !b.is_ascii_whitespace()), Some(b'}' | b']')) => out[i] = b' ',
            _ => {}
        }
        i += 1;
    }
    // Only ASCII bytes outside strings were replaced, by spaces: still UTF-8.
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vs_codes_json_with_comments_reads_as_json() {
        let text = "{\n  // off for now\n  \"chat.useHooks\": false, /* a \"quoted\" note */\n  \"url\": \"http://x//y\",\n  \"list\": [1, 2,],\n}\n";
        let plain = without_comments(text);
        let value: serde_json::Value = serde_json::from_str(&plain).unwrap_or_else(|e| panic!("{e}: {plain}"));
        assert_eq!(value, serde_json::json!({ "chat.useHooks": false, "url": "http://x//y", "list": [1, 2] }));
        assert_eq!(plain.lines().count(), text.lines().count(), "lines kept");
    }

    #[test]
    fn keys_keep_their_order_through_a_round_trip() {
        let text = "{\n    \"z\": 1,\n    \"a\": [\n        true,\n        null,\n        \"x\",\n        1.5\n    ],\n    \"m\": {\n        \"b\": {},\n        \"a\": []\n    }\n}\n";
        let doc: Json = serde_json::from_str(text).unwrap();
        assert_eq!(doc.to_text("    "), text);
        let mut object = doc.as_object().unwrap().clone();
        object.insert("a", Json::Null);
        object.insert("new", Json::from(2u64));
        let keys: Vec<&str> = object.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["z", "a", "m", "new"]);
    }
}

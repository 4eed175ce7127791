//! The shape of a verdict: a flat object of typed fields, rendered as the JSON Schema a backend
//! is asked to fill and used to check what came back. Backends are told to answer in this shape,
//! but a model can still answer something else, so every answer is validated here before a hook
//! reads it.

use serde_json::{Map, Value, json};

/// The type of one verdict field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `true` or `false`.
    Bool,
    /// Free text.
    String,
    /// A whole number, optionally bounded (inclusive).
    Integer {
        /// Smallest allowed value.
        min: Option<i64>,
        /// Largest allowed value.
        max: Option<i64>,
    },
    /// One of these strings.
    Choice(Vec<String>),
    /// How likely a statement holds, from 0 to 1. Jev answers it as a yes/no question with its
    /// probability of yes; a model writes the number.
    Probability,
}

/// One field of a verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field's name (an identifier: templates substitute `{name}`).
    pub name: String,
    /// Its type.
    pub ty: FieldType,
    /// What the field means, shown to the model.
    pub description: Option<String>,
}

impl Field {
    /// A field with a description.
    pub fn new(name: &str, ty: FieldType, description: &str) -> Field {
        Field {
            name: name.to_owned(),
            ty,
            description: (!description.is_empty()).then(|| description.to_owned()),
        }
    }
}

/// Why a schema cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SchemaError(pub String);

/// A verdict's shape: every field required, nothing else allowed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerdictSchema {
    fields: Vec<Field>,
}

/// True for `[A-Za-z_][A-Za-z0-9_]*`, the names a `{field}` template can substitute.
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl VerdictSchema {
    /// A schema of these fields; names must be distinct identifiers and choices non-empty.
    pub fn new(fields: Vec<Field>) -> Result<VerdictSchema, SchemaError> {
        if fields.is_empty() {
            return Err(SchemaError("a verdict needs at least one field".into()));
        }
        for (i, f) in fields.iter().enumerate() {
            if !is_identifier(&f.name) {
                return Err(SchemaError(format!(
                    "field name `{}` is not an identifier (letters, digits, `_`)",
                    f.name
                )));
            }
            if fields[..i].iter().any(|g| g.name == f.name) {
                return Err(SchemaError(format!("field `{}` is listed twice", f.name)));
            }
            match &f.ty {
                FieldType::Choice(c) if c.len() < 2 => {
                    return Err(SchemaError(format!(
                        "field `{}` needs at least two choices",
                        f.name
                    )));
                }
                FieldType::Integer {
                    min: Some(lo),
                    max: Some(hi),
                } if lo > hi => {
                    return Err(SchemaError(format!(
                        "field `{}`: min {lo} is above max {hi}",
                        f.name
                    )));
                }
                _ => {}
            }
        }
        Ok(VerdictSchema { fields })
    }

    /// `{block: bool, reasoning: string}`: the model sets `block` to deny.
    pub fn gate() -> VerdictSchema {
        VerdictSchema {
            fields: vec![
                Field::new("block", FieldType::Bool, "true to block the agent"),
                Field::new("reasoning", FieldType::String, "one or two sentences why"),
            ],
        }
    }

    /// `{fire: bool, reasoning: string}`: the model sets `fire` to send the nudge.
    pub fn nudge() -> VerdictSchema {
        VerdictSchema {
            fields: vec![
                Field::new("fire", FieldType::Bool, "true to send the nudge"),
                Field::new("reasoning", FieldType::String, "one or two sentences why"),
            ],
        }
    }

    /// `{action: "ok"|"warning"|"block", reason: string}` for `prompt_check`.
    pub fn prompt_check() -> VerdictSchema {
        VerdictSchema {
            fields: vec![
                Field::new(
                    "action",
                    FieldType::Choice(vec!["ok".into(), "warning".into(), "block".into()]),
                    "ok when nothing is wrong",
                ),
                Field::new("reason", FieldType::String, "what is wrong, for the agent"),
            ],
        }
    }

    /// `{safe: bool, reasoning: string}` for `llm_approve`.
    pub fn safety() -> VerdictSchema {
        VerdictSchema {
            fields: vec![
                Field::new(
                    "safe",
                    FieldType::Bool,
                    "true only when the call is clearly safe",
                ),
                Field::new("reasoning", FieldType::String, "one or two sentences why"),
            ],
        }
    }

    /// The fields, in order.
    pub fn fields(&self) -> &[Field] {
        &self.fields
    }

    /// The field named `name`.
    pub fn field(&self, name: &str) -> Option<&Field> {
        self.fields.iter().find(|f| f.name == name)
    }

    /// The JSON Schema: an object with every field required and no others
    /// (`additionalProperties: false`), as structured-output modes expect.
    pub fn to_json(&self) -> Value {
        let mut props = Map::new();
        for f in &self.fields {
            let mut p = match &f.ty {
                FieldType::Bool => json!({"type": "boolean"}),
                FieldType::String => json!({"type": "string"}),
                FieldType::Integer { min, max } => {
                    let mut p = json!({"type": "integer"});
                    if let Some(m) = min {
                        p["minimum"] = json!(m);
                    }
                    if let Some(m) = max {
                        p["maximum"] = json!(m);
                    }
                    p
                }
                FieldType::Choice(c) => json!({"type": "string", "enum": c}),
                FieldType::Probability => json!({"type": "number", "minimum": 0, "maximum": 1}),
            };
            if let Some(d) = &f.description {
                p["description"] = json!(d);
            }
            props.insert(f.name.clone(), p);
        }
        json!({
            "type": "object",
            "properties": props,
            "required": self.fields.iter().map(|f| f.name.clone()).collect::<Vec<_>>(),
            "additionalProperties": false,
        })
    }

    /// The verdict when `value` has this shape; otherwise what is wrong with it. Unknown keys
    /// are an error: a model that invents fields has not followed the schema.
    pub fn validate(&self, value: &Value) -> Result<Map<String, Value>, ShapeError> {
        let Value::Object(obj) = value else {
            return Err(ShapeError::NotAnObject(value.clone()));
        };
        for f in &self.fields {
            let Some(v) = obj.get(&f.name) else {
                return Err(ShapeError::Missing(f.name.clone()));
            };
            let ok = match &f.ty {
                FieldType::Bool => v.is_boolean(),
                FieldType::String => v.is_string(),
                FieldType::Integer { min, max } => v
                    .as_i64()
                    .is_some_and(|n| min.is_none_or(|m| n >= m) && max.is_none_or(|m| n <= m)),
                FieldType::Choice(c) => v.as_str().is_some_and(|s| c.iter().any(|x| x == s)),
                FieldType::Probability => v.as_f64().is_some_and(|p| (0.0..=1.0).contains(&p)),
            };
            if !ok {
                return Err(ShapeError::BadValue {
                    field: f.name.clone(),
                    value: v.clone(),
                });
            }
        }
        if let Some(extra) = obj.keys().find(|k| self.field(k).is_none()) {
            return Err(ShapeError::Unexpected(extra.clone()));
        }
        Ok(obj.clone())
    }

    /// What inline tests answer when no stub value is given: booleans true (so the hook fires),
    /// the first choice that is not `ok` (a check that finds something), the smallest integer,
    /// a probability of 1 (sure) and text `"inline test stub"`.
    pub fn stub(&self) -> Map<String, Value> {
        self.fields
            .iter()
            .map(|f| {
                let v = match &f.ty {
                    FieldType::Bool => json!(true),
                    FieldType::String => json!("inline test stub"),
                    FieldType::Integer { min, .. } => json!(min.unwrap_or(0)),
                    FieldType::Choice(c) => {
                        json!(c.iter().rev().find(|x| x.as_str() != "ok").unwrap_or(&c[0]))
                    }
                    FieldType::Probability => json!(1.0),
                };
                (f.name.clone(), v)
            })
            .collect()
    }
}

/// Why a value is not a verdict of a schema's shape.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeError {
    /// The value is not a JSON object.
    #[error("expected a JSON object, got {0}")]
    NotAnObject(Value),
    /// A field of the schema is absent.
    #[error("missing field `{0}`")]
    Missing(String),
    /// A field's value is not of its type or outside its range or choices.
    #[error("field `{field}` has a bad value: {value}")]
    BadValue {
        /// The field.
        field: String,
        /// What the value was.
        value: Value,
    },
    /// A key the schema does not have.
    #[error("unexpected field `{0}`")]
    Unexpected(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gate_schema_is_strict_and_validates() {
        let s = VerdictSchema::gate();
        assert_eq!(
            s.to_json(),
            json!({
                "type": "object",
                "properties": {
                    "block": {"type": "boolean", "description": "true to block the agent"},
                    "reasoning": {"type": "string", "description": "one or two sentences why"},
                },
                "required": ["block", "reasoning"],
                "additionalProperties": false,
            })
        );
        assert!(
            s.validate(&json!({"block": true, "reasoning": "r"}))
                .is_ok()
        );
        let e = s
            .validate(&json!({"block": "yes", "reasoning": "r"}))
            .unwrap_err();
        assert!(e.to_string().contains("`block`"), "{e}");
        let e = s.validate(&json!({"reasoning": "r"})).unwrap_err();
        assert!(e.to_string().contains("missing field `block`"), "{e}");
        let e = s
            .validate(&json!({"block": true, "reasoning": "r", "x": 1}))
            .unwrap_err();
        assert!(e.to_string().contains("unexpected field `x`"), "{e}");
        assert!(s.validate(&json!([1])).is_err());
    }

    #[test]
    fn custom_schemas_check_names_choices_and_bounds() {
        assert!(VerdictSchema::new(vec![]).is_err());
        assert!(VerdictSchema::new(vec![Field::new("a b", FieldType::Bool, "")]).is_err());
        assert!(
            VerdictSchema::new(vec![
                Field::new("a", FieldType::Bool, ""),
                Field::new("a", FieldType::String, "")
            ])
            .is_err()
        );
        assert!(
            VerdictSchema::new(vec![Field::new(
                "c",
                FieldType::Choice(vec!["x".into()]),
                ""
            )])
            .is_err()
        );
        let s = VerdictSchema::new(vec![
            Field::new(
                "score",
                FieldType::Integer {
                    min: Some(1),
                    max: Some(5),
                },
                "",
            ),
            Field::new(
                "kind",
                FieldType::Choice(vec!["ok".into(), "bad".into()]),
                "",
            ),
        ])
        .unwrap();
        assert!(s.validate(&json!({"score": 3, "kind": "bad"})).is_ok());
        assert!(s.validate(&json!({"score": 6, "kind": "bad"})).is_err());
        assert!(s.validate(&json!({"score": 3, "kind": "meh"})).is_err());
        assert_eq!(
            s.stub(),
            json!({"score": 1, "kind": "bad"})
                .as_object()
                .unwrap()
                .clone()
        );
        assert_eq!(s.to_json()["properties"]["score"]["maximum"], 5);
    }
}

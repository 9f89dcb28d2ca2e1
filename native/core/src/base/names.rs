//! The closed vocabularies that cross to the edges as strings (a Pending's kind, a change's kind, a
//! hook's priority, ...): each value's one name, every name of the set, and, for a set of plain
//! values, the value a name stands for.
//!
//! Why a macro: the names are written once, in a `match` over the enum, so a variant added without
//! its name does not compile; and the list the binding's TypeScript unions are generated from
//! (`native/node/header.d.ts`, its test) is made from the same arms, so the edges cannot drift from
//! the core. Before, each edge wrote the strings again (one said `'type_changed'` where the value
//! sent was `"type changed"`), and the binding parsed them back with matches of its own.
//!
//! The macro is exported (`chokepoint_core::base::names::names!`) so that the binding names its own
//! options (which outcomes cross back) the same way.

use std::fmt;

/// `names!(Type { Pattern => "name", ... })`: `Type::NAMES` (every name, in order) and
/// `Type::as_str(&self)` (this value's name). A variant that carries data is named by a pattern
/// (`Self::Retry { .. } => "retry"`).
///
/// When every arm is a plain variant (`Self::Open => "open"`), the same arms also read the other
/// way: `Type::from_name(&str) -> Option<Type>`, and `Type::parse_name(what, &str)`, whose error
/// names what was being read and lists every name. A set with a variant that carries data has no
/// parse direction: a name alone cannot make its value.
#[macro_export]
#[doc(hidden)]
macro_rules! __names {
    // Every arm a plain variant: both directions.
    ($ty:ty { $(Self::$variant:ident => $name:literal),+ $(,)? }) => {
        $crate::base::names::names!(@to_name $ty { $(Self::$variant => $name),+ });

        impl $ty {
            /// The value this name stands for, or `None` for a name outside the set.
            pub fn from_name(name: &str) -> ::std::option::Option<Self> {
                match name {
                    $($name => ::std::option::Option::Some(Self::$variant),)+
                    _ => ::std::option::Option::None,
                }
            }

            /// The value this name stands for; for a name outside the set, an error that says what
            /// was being read (`what`: "priority") and lists every name.
            pub fn parse_name(what: &'static str, name: &str) -> ::std::result::Result<Self, $crate::base::names::UnknownName> {
                Self::from_name(name).ok_or_else(|| $crate::base::names::UnknownName { what, name: name.to_owned(), names: Self::NAMES })
            }
        }
    };
    ($ty:ty { $($pat:pat => $name:literal),+ $(,)? }) => {
        $crate::base::names::names!(@to_name $ty { $($pat => $name),+ });
    };
    (@to_name $ty:ty { $($pat:pat => $name:literal),+ }) => {
        impl $ty {
            /// Every name of the set, in order: what the binding's generated union lists.
            pub const NAMES: &'static [&'static str] = &[$($name),+];

            /// This value's name, as every edge spells it.
            pub fn as_str(&self) -> &'static str {
                match self {
                    $($pat => $name),+
                }
            }
        }
    };
}
pub use __names as names;

/// A name outside its set, read at an edge (an option of the binding, a field of a host hook's
/// spec): what was being read, the name given, and the names that would have done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownName {
    /// What the name was to say, for the message: "priority", "failure mode".
    pub what: &'static str,
    pub name: String,
    /// Every name of the set, in order.
    pub names: &'static [&'static str],
}

/// "unknown priority `urgent`; use critical, high, normal or low".
impl fmt::Display for UnknownName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "unknown {} `{}`; use ", self.what, self.name)?;
        for (i, name) in self.names.iter().enumerate() {
            let separator = match i {
                0 => "",
                _ if i + 1 == self.names.len() => " or ",
                _ => ", ",
            };
            write!(f, "{separator}{name}")?;
        }
        Ok(())
    }
}

impl std::error::Error for UnknownName {}

#[cfg(test)]
mod tests {
    use super::{UnknownName, names};

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Plain {
        One,
        Two,
        Three,
    }

    names!(Plain {
        Self::One => "one",
        Self::Two => "two",
        Self::Three => "three",
    });

    #[allow(dead_code)]
    #[derive(Debug)]
    enum Carrying {
        Bare,
        With(u32),
    }

    // A set with data has names one way only (no `from_name`: a name alone cannot make `With`).
    names!(Carrying {
        Self::Bare => "bare",
        Self::With(_) => "with",
    });

    #[test]
    fn every_name_parses_back_to_its_value() {
        for value in [Plain::One, Plain::Two, Plain::Three] {
            assert_eq!(Plain::from_name(value.as_str()), Some(value));
        }
        assert_eq!(Plain::NAMES, ["one", "two", "three"]);
        assert_eq!(Carrying::NAMES, ["bare", "with"]);
        assert_eq!(Carrying::With(1).as_str(), "with");
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_name_listed() {
        assert_eq!(Plain::from_name("One"), None, "names are matched exactly, case included");
        let refused = Plain::parse_name("count", "four").unwrap_err();
        assert_eq!(refused, UnknownName { what: "count", name: "four".into(), names: Plain::NAMES });
        assert_eq!(refused.to_string(), "unknown count `four`; use one, two or three");
        let two = UnknownName { what: "mode", name: "x".into(), names: &["closed", "open"] };
        assert_eq!(two.to_string(), "unknown mode `x`; use closed or open");
    }
}

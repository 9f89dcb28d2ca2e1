//! The closed vocabularies that cross to the edges as strings (a Pending's kind, a change's kind, a
//! hook's priority, ...): each value's one name, and every name of the set.
//!
//! Why a macro: the names are written once, in a `match` over the enum, so a variant added without
//! its name does not compile; and the list the binding's TypeScript unions are generated from
//! (`native/node/header.d.ts`, its test) is made from the same arms, so the edges cannot drift from
//! the core. Before, each edge wrote the strings again (one said `'type_changed'` where the value
//! sent was `"type changed"`).

/// `names!(Type { Pattern => "name", ... })`: `Type::NAMES` (every name, in order) and
/// `Type::as_str(&self)` (this value's name). A variant that carries data is named by a pattern
/// (`Self::Retry { .. } => "retry"`).
macro_rules! names {
    ($ty:ty { $($pat:pat => $name:literal),+ $(,)? }) => {
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
pub(crate) use names;

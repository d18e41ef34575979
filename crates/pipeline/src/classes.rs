//! The classes of the user's own models: each model a scenario or `--model` declares gets
//! a job class of its own ([`Kind::Model`]), named as the user named it, with the policy's
//! importance, deadline and cap for that name — the same terms as the built-in classes.
//!
//! Why a table of the process rather than of a run: a class's name travels with every job,
//! result, trace span and metric as a `&'static str`, as the built-in names do, and a
//! process registers its models once, before its first run. Registering is idempotent (the
//! same name gives the same class), and the table only grows, so a class number stays
//! valid for the life of the process.

use std::sync::RwLock;

use mmsched_core::Modality;

use crate::stats::Kind;

/// The most classes of the user's models one process holds.
pub const MAX_CLASSES: usize = 64;

#[derive(Debug, Clone, Copy)]
struct Entry {
    class: &'static str,
    model: &'static str,
    modality: Modality,
}

static TABLE: RwLock<Vec<Entry>> = RwLock::new(Vec::new());

fn read() -> std::sync::RwLockReadGuard<'static, Vec<Entry>> {
    TABLE.read().unwrap_or_else(|p| p.into_inner())
}

/// Why a class cannot be registered.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ClassError {
    /// The name is a built-in class's, or not a plain name.
    #[error(
        "model name `{0}` cannot name a class: use 1–40 letters, digits, `-` or `_`, other than `vision`, `vad`, `asr`, `llm` and `text`"
    )]
    BadName(String),
    /// The name was registered for another model.
    #[error("class `{class}` already runs model `{model}`: give each model its own name")]
    Taken {
        /// The class.
        class: String,
        /// The model it runs.
        model: String,
    },
    /// Too many classes.
    #[error("at most {MAX_CLASSES} models of your own run in one process")]
    Full,
    /// The same model declared twice in one run.
    #[error("model `{0}` is declared twice: give each model its own name")]
    Twice(String),
}

/// Registers the class `class` for the model `model` of `modality`, or finds it if it was
/// registered for the same model before.
pub fn register(class: &str, model: &str, modality: Modality) -> Result<Kind, ClassError> {
    let plain = !class.is_empty()
        && class.len() <= 40
        && class
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    let builtin = matches!(class, "vision" | "vad" | "asr" | "llm" | "text");
    if !plain || builtin {
        return Err(ClassError::BadName(class.to_string()));
    }
    let mut table = TABLE.write().unwrap_or_else(|p| p.into_inner());
    if let Some(n) = table.iter().position(|e| e.class == class) {
        let e = table[n];
        if e.model != model {
            return Err(ClassError::Taken {
                class: class.to_string(),
                model: e.model.to_string(),
            });
        }
        return Ok(Kind::Model(n as u16));
    }
    if table.len() >= MAX_CLASSES {
        return Err(ClassError::Full);
    }
    // Leaked once per class, and the table is bounded: the names live as long as the
    // process, as the built-in ones do.
    table.push(Entry {
        class: Box::leak(class.to_string().into_boxed_str()),
        model: Box::leak(model.to_string().into_boxed_str()),
        modality,
    });
    Ok(Kind::Model((table.len() - 1) as u16))
}

/// The classes registered so far, in order.
pub fn registered() -> Vec<Kind> {
    (0..read().len()).map(|n| Kind::Model(n as u16)).collect()
}

/// The class registered under `name`.
pub fn find(name: &str) -> Option<Kind> {
    read()
        .iter()
        .position(|e| e.class == name)
        .map(|n| Kind::Model(n as u16))
}

/// The name of class `n` (`model` for a number never registered).
pub fn class_name(n: u16) -> &'static str {
    read().get(usize::from(n)).map_or("model", |e| e.class)
}

/// The model class `n` runs.
pub fn model_name(n: u16) -> &'static str {
    read().get(usize::from(n)).map_or("model", |e| e.model)
}

/// The modality of class `n`'s inputs.
pub fn modality(n: u16) -> Modality {
    read()
        .get(usize::from(n))
        .map_or(Modality::Image, |e| e.modality)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_class_is_found_by_its_name_and_registering_it_again_finds_it() {
        let kind = register("unit-test-class", "m1", Modality::Image).expect("registers");
        assert_eq!(register("unit-test-class", "m1", Modality::Image), Ok(kind));
        assert_eq!(Kind::parse("unit-test-class"), Some(kind));
        assert_eq!(kind.as_str(), "unit-test-class");
        assert_eq!(kind.model_name(), "m1");
        assert!(Kind::all().contains(&kind));
        let taken = register("unit-test-class", "m2", Modality::Image).unwrap_err();
        assert!(
            taken.to_string().contains("give each model its own name"),
            "{taken}"
        );
    }

    #[test]
    fn built_in_and_odd_names_are_refused_with_the_rule() {
        for bad in ["vision", "llm", "", "a b", "ü"] {
            let err = register(bad, "m", Modality::Image).unwrap_err();
            assert!(matches!(err, ClassError::BadName(_)), "{bad}: {err}");
        }
    }
}

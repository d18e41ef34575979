//! A value per job kind: the built-in four and the classes of the user's models, indexed
//! by [`Kind`], growing when a class appears after the table was made (a class registered
//! later in the process reads the fill value until it is written).

use std::ops::{Index, IndexMut};

use crate::stats::Kind;

/// A value per job kind. See the [module docs](self).
#[derive(Debug, Clone, PartialEq)]
pub struct PerKind<T> {
    items: Vec<T>,
    fill: T,
}

impl<T: Clone> PerKind<T> {
    /// `fill` for every kind of the process.
    pub fn new(fill: T) -> Self {
        let each = fill.clone();
        Self::from_fn(move |_| each.clone(), fill)
    }

    /// `f(kind)` for every kind of the process; `fill` for a kind registered later.
    pub fn from_fn(f: impl FnMut(Kind) -> T, fill: T) -> Self {
        Self {
            items: Kind::all().into_iter().map(f).collect(),
            fill,
        }
    }

    /// Each kind with its value, in report order.
    pub fn iter(&self) -> impl Iterator<Item = (Kind, &T)> {
        self.items.iter().enumerate().map(|(i, v)| (kind_at(i), v))
    }

    /// Each value, in report order.
    pub fn values(&self) -> impl Iterator<Item = &T> {
        self.items.iter()
    }

    /// Each value, mutable, in report order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut()
    }
}

impl<T: Clone + Default> Default for PerKind<T> {
    fn default() -> Self {
        Self::new(T::default())
    }
}

/// The kind at position `i` of [`Kind::all`].
fn kind_at(i: usize) -> Kind {
    match i {
        0..4 => Kind::ALL[i],
        n => Kind::Model((n - 4) as u16),
    }
}

impl<T> Index<Kind> for PerKind<T> {
    type Output = T;
    fn index(&self, kind: Kind) -> &T {
        self.items.get(kind.index()).unwrap_or(&self.fill)
    }
}

impl<T: Clone> IndexMut<Kind> for PerKind<T> {
    fn index_mut(&mut self, kind: Kind) -> &mut T {
        let i = kind.index();
        if i >= self.items.len() {
            self.items.resize(i + 1, self.fill.clone());
        }
        &mut self.items[i]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kind_beyond_the_table_reads_the_fill_and_grows_when_written() {
        let mut t = PerKind::new(7u32);
        let late = Kind::Model(40);
        assert_eq!(t[late], 7);
        t[late] = 9;
        assert_eq!(t[late], 9);
        assert_eq!(t[Kind::Vision], 7);
        assert_eq!(t.iter().last(), Some((late, &9)));
    }
}

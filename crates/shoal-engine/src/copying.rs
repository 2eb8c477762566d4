//! What changed on a node, by name, while it copied a set of named things from another
//! member (the function libraries, the ACL users: `shoal_cluster::copies`): the copy was
//! taken at some moment before or after those changes reached this node, and must neither
//! bring back what was deleted here nor undo what was set here since.

use std::borrow::Borrow;
use std::collections::HashSet;
use std::hash::Hash;

/// The names changed since a copy began, or all of them (a flush, a reload).
#[derive(Debug)]
pub struct ChangedSince<K> {
    touched: HashSet<K>,
    all: bool,
}

impl<K> Default for ChangedSince<K> {
    fn default() -> Self {
        ChangedSince {
            touched: HashSet::new(),
            all: false,
        }
    }
}

impl<K: Hash + Eq> ChangedSince<K> {
    /// Notes that `names` changed here, or every name (`all`).
    pub fn note(&mut self, names: impl IntoIterator<Item = K>, all: bool) {
        if all {
            self.all = true;
            self.touched.clear();
        } else if !self.all {
            self.touched.extend(names);
        }
    }

    /// Whether the copy may bring `name`: nothing changed it here since the copy began.
    pub fn untouched<Q>(&self, name: &Q) -> bool
    where
        K: Borrow<Q>,
        Q: Hash + Eq + ?Sized,
    {
        !self.all && !self.touched.contains(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_changed_or_everything_changed_is_left_to_this_node() {
        let mut c: ChangedSince<String> = ChangedSince::default();
        assert!(c.untouched("a"));
        c.note(["a".to_string()], false);
        assert!(!c.untouched("a") && c.untouched("b"));
        c.note([], true);
        assert!(!c.untouched("b"));
        // After everything, single names add nothing.
        c.note(["c".to_string()], false);
        assert!(!c.untouched("c") && !c.untouched("z"));
    }
}

//! The free-run index behind the slot table: a segment tree over the physical ring of
//! slots, the classic "hotel" tree.
//!
//! Every node knows, for its range, the longest free run (`best`), the free run at its
//! left edge (`pre`) and at its right edge (`suf`). That is enough to find the leftmost
//! run of `n` free slots at or after a position in O(log N): walk the O(log N) canonical
//! nodes of the searched range from left to right, carrying the free run that ends at the
//! current position, and descend into the first node that can hold the request.
//!
//! Each node also carries a `cover`: the owner of its whole range when it is uniform
//! (free, one reservation, or padding), or `MIXED`. Assigning a range to an owner stops at
//! the covered nodes (lazy assignment), so booking or freeing `n` slots costs O(log N)
//! whatever `n` is, and "who holds slot i" is a descent to the first uniform node.

use alloc::vec;
use alloc::vec::Vec;

/// Owner value of a free slot.
pub(crate) const FREE: u32 = u32::MAX;
/// Owner value of the padding leaves past the end of the ring (never free, never owned).
const PADDING: u32 = u32::MAX - 1;
/// Cover value of a node whose range has more than one owner.
const MIXED: u32 = u32::MAX - 2;
/// Owners (slab indices of reservations) must stay below this value.
pub(crate) const MAX_OWNER: u32 = MIXED;

#[derive(Debug, Clone, Copy)]
struct Node {
    best: u32,
    pre: u32,
    suf: u32,
    cover: u32,
}

impl Node {
    fn uniform(owner: u32, len: u32) -> Self {
        let free = if owner == FREE { len } else { 0 };
        Node {
            best: free,
            pre: free,
            suf: free,
            cover: owner,
        }
    }
}

/// Segment tree over `len` physical slots (indices `0..len`).
#[derive(Debug, Clone)]
pub(crate) struct FreeRunTree {
    nodes: Vec<Node>,
    /// Leaves in the tree (a power of two ≥ `len`).
    size: u32,
    /// Usable slots; leaves from `len` to `size` are padding.
    len: u32,
}

impl FreeRunTree {
    /// A tree with `len` free slots (`1 ≤ len ≤ 2^31`).
    pub(crate) fn new(len: u32) -> Self {
        let size = len.next_power_of_two();
        let mut tree = FreeRunTree {
            nodes: vec![Node::uniform(FREE, 0); 2 * size as usize],
            size,
            len,
        };
        tree.reset();
        tree
    }

    /// Frees every slot.
    pub(crate) fn reset(&mut self) {
        let size = self.size as usize;
        for i in 0..size {
            let owner = if i < self.len as usize { FREE } else { PADDING };
            self.nodes[size + i] = Node::uniform(owner, 1);
        }
        let mut half = 1;
        let mut level_start = size / 2;
        while level_start >= 1 {
            for node in level_start..2 * level_start {
                self.pull(node, half);
            }
            half *= 2;
            level_start /= 2;
        }
    }

    /// Recomputes a node from its two children, each `half` slots long.
    #[inline]
    fn pull(&mut self, node: usize, half: u32) {
        let l = self.nodes[2 * node];
        let r = self.nodes[2 * node + 1];
        self.nodes[node] = Node {
            pre: if l.pre == half { half + r.pre } else { l.pre },
            suf: if r.suf == half { half + l.suf } else { r.suf },
            best: l.best.max(r.best).max(l.suf + r.pre),
            cover: if l.cover == r.cover { l.cover } else { MIXED },
        };
    }

    /// Hands a uniform node's owner down to its children before they are changed.
    #[inline]
    fn push(&mut self, node: usize, half: u32) {
        let cover = self.nodes[node].cover;
        if cover != MIXED {
            self.nodes[2 * node] = Node::uniform(cover, half);
            self.nodes[2 * node + 1] = Node::uniform(cover, half);
        }
    }

    /// Gives the slots `lo..hi` to `owner` (or frees them with [`FREE`]).
    pub(crate) fn assign(&mut self, lo: u32, hi: u32, owner: u32) {
        debug_assert!(lo < hi && hi <= self.len);
        self.assign_rec(1, 0, self.size, lo, hi, owner);
    }

    fn assign_rec(&mut self, node: usize, nl: u32, nr: u32, lo: u32, hi: u32, owner: u32) {
        if lo <= nl && nr <= hi {
            self.nodes[node] = Node::uniform(owner, nr - nl);
            return;
        }
        let half = (nr - nl) / 2;
        let mid = nl + half;
        self.push(node, half);
        if lo < mid {
            self.assign_rec(2 * node, nl, mid, lo, hi, owner);
        }
        if hi > mid {
            self.assign_rec(2 * node + 1, mid, nr, lo, hi, owner);
        }
        self.pull(node, half);
    }

    /// The owner of slot `i` ([`FREE`] when free).
    pub(crate) fn owner_at(&self, i: u32) -> u32 {
        let (mut node, mut nl, mut nr) = (1usize, 0u32, self.size);
        loop {
            let cover = self.nodes[node].cover;
            if cover != MIXED {
                return cover;
            }
            let mid = nl + (nr - nl) / 2;
            if i < mid {
                node *= 2;
                nr = mid;
            } else {
                node = 2 * node + 1;
                nl = mid;
            }
        }
    }

    /// The leftmost start of `n` contiguous free slots inside `lo..hi`, where a free run
    /// of `*run` slots ends just before `lo` and may be extended (so the answer can lie up
    /// to `*run` slots before `lo`). On failure `*run` becomes the free run ending at `hi`,
    /// ready to carry into a range that continues this one.
    pub(crate) fn first_fit(&self, lo: u32, hi: u32, n: u32, run: &mut u32) -> Option<i64> {
        debug_assert!(n > 0 && lo <= hi && hi <= self.len);
        if lo == hi {
            return None;
        }
        self.fit_rec(1, 0, self.size, lo, hi, n, run)
    }

    #[allow(clippy::too_many_arguments)] // a recursive walk: node, its range, the query
    fn fit_rec(
        &self,
        node: usize,
        nl: u32,
        nr: u32,
        lo: u32,
        hi: u32,
        n: u32,
        run: &mut u32,
    ) -> Option<i64> {
        let nd = self.nodes[node];
        if lo <= nl && nr <= hi {
            // A canonical node: it either completes the carried run, holds a fit, or
            // passes on its free suffix.
            if *run + nd.pre >= n {
                return Some(i64::from(nl) - i64::from(*run));
            }
            if nd.best >= n {
                return Some(i64::from(self.leftmost_run(node, nl, nr, n)));
            }
            *run = if nd.pre == nr - nl {
                *run + (nr - nl)
            } else {
                nd.suf
            };
            return None;
        }
        if nd.cover != MIXED {
            // Uniform node only partly inside the query: its children are stale, so
            // treat the overlapping part as one uniform stretch.
            let a = lo.max(nl);
            let b = hi.min(nr);
            if nd.cover == FREE {
                if *run + (b - a) >= n {
                    return Some(i64::from(a) - i64::from(*run));
                }
                *run += b - a;
            } else {
                *run = 0;
            }
            return None;
        }
        let mid = nl + (nr - nl) / 2;
        if lo < mid
            && let Some(x) = self.fit_rec(2 * node, nl, mid, lo, hi, n, run)
        {
            return Some(x);
        }
        if hi > mid {
            return self.fit_rec(2 * node + 1, mid, nr, lo, hi, n, run);
        }
        None
    }

    /// The start of the leftmost free run of at least `n` slots inside a node whose `best`
    /// is at least `n`.
    fn leftmost_run(&self, mut node: usize, mut nl: u32, mut nr: u32, n: u32) -> u32 {
        loop {
            if self.nodes[node].cover != MIXED {
                // Uniform and (since best ≥ n > 0) free.
                return nl;
            }
            let mid = nl + (nr - nl) / 2;
            let l = self.nodes[2 * node];
            let r = self.nodes[2 * node + 1];
            if l.best >= n {
                node *= 2;
                nr = mid;
            } else if l.suf + r.pre >= n {
                return mid - l.suf;
            } else {
                node = 2 * node + 1;
                nl = mid;
            }
        }
    }

    /// The first slot in `lo..hi` that is not free.
    pub(crate) fn first_taken(&self, lo: u32, hi: u32) -> Option<u32> {
        if lo >= hi {
            return None;
        }
        self.taken_rec(1, 0, self.size, lo, hi)
    }

    fn taken_rec(&self, node: usize, nl: u32, nr: u32, lo: u32, hi: u32) -> Option<u32> {
        let nd = self.nodes[node];
        if nd.cover != MIXED {
            return (nd.cover != FREE).then(|| lo.max(nl));
        }
        if lo <= nl && nr <= hi && nd.pre == nr - nl {
            return None;
        }
        let mid = nl + (nr - nl) / 2;
        if lo < mid
            && let Some(x) = self.taken_rec(2 * node, nl, mid, lo, hi)
        {
            return Some(x);
        }
        if hi > mid {
            return self.taken_rec(2 * node + 1, mid, nr, lo, hi);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assign_and_query() {
        let mut t = FreeRunTree::new(10);
        let mut run = 0;
        assert_eq!(t.first_fit(0, 10, 10, &mut run), Some(0));
        t.assign(2, 5, 7);
        assert_eq!(t.owner_at(1), FREE);
        assert_eq!(t.owner_at(2), 7);
        assert_eq!(t.owner_at(4), 7);
        assert_eq!(t.owner_at(5), FREE);
        let mut run = 0;
        assert_eq!(t.first_fit(0, 10, 3, &mut run), Some(5));
        let mut run = 0;
        assert_eq!(t.first_fit(0, 10, 2, &mut run), Some(0));
        let mut run = 0;
        assert_eq!(t.first_fit(1, 10, 2, &mut run), Some(5));
        let mut run = 0;
        assert_eq!(t.first_fit(5, 10, 6, &mut run), None);
        assert_eq!(run, 5, "free suffix carried out");
        assert_eq!(t.first_taken(0, 10), Some(2));
        assert_eq!(t.first_taken(5, 10), None);
        t.assign(0, 10, FREE);
        assert_eq!(t.first_taken(0, 10), None);
    }

    #[test]
    fn carried_run_extends_backwards() {
        let t = FreeRunTree::new(8);
        let mut run = 3;
        assert_eq!(t.first_fit(0, 2, 5, &mut run), Some(-3));
    }
}

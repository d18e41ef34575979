//! The free-run index behind the slot table: a bitmap of free slots, with a segment tree
//! over its 64-slot words.
//!
//! Slot `i` of the ring is bit `i % 64` of word `i / 64` (1 = free). Each tree leaf is one
//! word; every node knows, for its range, the longest free run (`best`), the free run at
//! its left edge (`pre`) and at its right edge (`suf`). A leaf gets these from its word
//! with bit tricks (trailing/leading ones, and the longest run by repeated
//! `x & (x >> k)`), so the tree has 64 times fewer leaves than the ring has slots.
//!
//! - Finding the leftmost run of `n` free slots at or after a position is O(log N): the
//!   partial words at both ends are searched with bit operations, the whole words in
//!   between by walking the O(log N) canonical nodes from left to right, carrying the free
//!   run that ends at the current position, and descending into the first node that can
//!   hold the request (a run may straddle two leaves: the suffix of one plus the prefix of
//!   the next).
//! - Booking or freeing `n` slots sets or clears whole words and recomputes the touched
//!   leaves and their ancestors (stopping at the first level where nothing changed):
//!   O(log N + n / 64).
//! - Owners: a second bitmap marks the first slot of every booked stretch, and `owners`
//!   holds the owner at each marked slot. "Who holds slot i" is the nearest mark at or
//!   before `i`, found a word at a time.

use alloc::vec;
use alloc::vec::Vec;

/// Owner value of a free slot.
pub(crate) const FREE: u32 = u32::MAX;
/// Owners (slab indices of reservations) must stay below this value.
pub(crate) const MAX_OWNER: u32 = u32::MAX - 2;

/// Slots per bitmap word (and per tree leaf).
const WORD: u32 = 64;

/// Free slots at the low end of a word (bit 0 is the first slot).
#[inline]
pub(crate) fn word_prefix(w: u64) -> u32 {
    w.trailing_ones()
}

/// Free slots at the high end of a word.
#[inline]
pub(crate) fn word_suffix(w: u64) -> u32 {
    w.leading_ones()
}

/// The longest run of one bits in a word.
///
/// After `y &= y >> k`, bit `i` of `y` says that the `2k` bits from `i` are all ones:
/// doubling `k` finds the power of two below the answer in at most 6 steps, then a binary
/// search over the remaining bits finds the answer in at most 5 more.
#[inline]
pub(crate) fn word_longest(w: u64) -> u32 {
    if w == u64::MAX {
        return 64;
    }
    if w == 0 {
        return 0;
    }
    // `y`: starts of runs of at least `k` ones.
    let (mut y, mut k) = (w, 1u32);
    loop {
        let z = y & (y >> k);
        if z == 0 {
            break;
        }
        y = z;
        k *= 2;
    }
    // Runs of at least `k` exist, none of `2k`: binary search in between.
    let mut step = k / 2;
    while step > 0 {
        let z = y & (y >> step);
        if z != 0 {
            y = z;
            k += step;
        }
        step /= 2;
    }
    k
}

/// The lowest bit position where `n` consecutive one bits start (`1 ≤ n ≤ 64`).
#[inline]
pub(crate) fn word_first_fit(w: u64, n: u32) -> Option<u32> {
    let (mut y, mut have) = (w, 1u32);
    while have < n && y != 0 {
        let step = have.min(n - have);
        y &= y >> step;
        have += step;
    }
    (y != 0).then(|| y.trailing_zeros())
}

/// The low `len` bits set (`1 ≤ len ≤ 64`).
#[inline]
fn low_mask(len: u32) -> u64 {
    u64::MAX >> (WORD - len)
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Node {
    best: u32,
    pre: u32,
    suf: u32,
}

impl Node {
    #[inline]
    fn leaf(w: u64) -> Self {
        Node {
            best: word_longest(w),
            pre: word_prefix(w),
            suf: word_suffix(w),
        }
    }
}

/// Free-run index over `len` physical slots (indices `0..len`).
#[derive(Debug, Clone)]
pub(crate) struct FreeRunTree {
    /// Usable slots; the bits past `len` in the last word stay 0 (never free).
    len: u32,
    /// One bit per slot, 1 = free.
    words: Vec<u64>,
    /// One bit per slot, 1 = first slot of a booked stretch.
    marks: Vec<u64>,
    /// The owner at each marked slot (stale elsewhere).
    owners: Vec<u32>,
    /// 1-based heap: node `k` has children `2k` and `2k + 1`, leaf `j` is `leaves + j`.
    nodes: Vec<Node>,
    /// Leaves in the tree (a power of two ≥ the number of words); the leaves past the
    /// last word are padding with no free slot.
    leaves: u32,
}

impl FreeRunTree {
    /// A tree with `len` free slots (`1 ≤ len ≤ 2^26`).
    pub(crate) fn new(len: u32) -> Self {
        let words = len.div_ceil(WORD);
        let leaves = words.next_power_of_two();
        let mut tree = FreeRunTree {
            len,
            words: vec![0; words as usize],
            marks: vec![0; words as usize],
            owners: vec![FREE; len as usize],
            nodes: vec![Node::default(); 2 * leaves as usize],
            leaves,
        };
        tree.reset();
        tree
    }

    /// Frees every slot.
    pub(crate) fn reset(&mut self) {
        let leaves = self.leaves as usize;
        for (i, (w, m)) in self.words.iter_mut().zip(&mut self.marks).enumerate() {
            let from = i as u32 * WORD;
            *w = low_mask((self.len - from).min(WORD));
            *m = 0;
            self.nodes[leaves + i] = Node::leaf(*w);
        }
        // Internal nodes bottom-up; `half` is the span of a child in slots.
        let (mut a, mut half) = (leaves / 2, WORD);
        while a >= 1 {
            for node in a..2 * a {
                self.pull(node, half);
            }
            a /= 2;
            half *= 2;
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
        };
    }

    #[inline]
    fn is_free(&self, i: u32) -> bool {
        self.words[(i / WORD) as usize] >> (i % WORD) & 1 == 1
    }

    #[inline]
    fn is_mark(&self, i: u32) -> bool {
        self.marks[(i / WORD) as usize] >> (i % WORD) & 1 == 1
    }

    #[inline]
    fn set_mark(&mut self, i: u32, owner: u32) {
        self.marks[(i / WORD) as usize] |= 1 << (i % WORD);
        self.owners[i as usize] = owner;
    }

    /// Gives the slots `lo..hi` to `owner` (or frees them with [`FREE`]). Booking is only
    /// ever done on free slots, and freeing on slots of one owner.
    ///
    /// Sets or clears the bits word by word, recomputes those leaves, then their
    /// ancestors level by level: O(log N + (hi − lo) / 64).
    pub(crate) fn assign(&mut self, lo: u32, hi: u32, owner: u32) {
        debug_assert!(lo < hi && hi <= self.len);
        let free = owner == FREE;
        if free && hi < self.len && !self.is_free(hi) && !self.is_mark(hi) {
            // The owner keeps the slots from `hi` on (a trimmed reservation): its stretch
            // now starts there.
            let kept = self.owner_at(hi);
            self.set_mark(hi, kept);
        }
        let (wl, wh) = (lo / WORD, (hi - 1) / WORD);
        let leaves = self.leaves as usize;
        for w in wl..=wh {
            let from = w * WORD;
            let s = lo.max(from) - from;
            let e = hi.min(from + WORD) - from;
            let mask = low_mask(e - s) << s;
            let i = w as usize;
            if free {
                self.words[i] |= mask;
            } else {
                self.words[i] &= !mask;
            }
            self.marks[i] &= !mask;
            self.nodes[leaves + i] = Node::leaf(self.words[i]);
        }
        if !free {
            self.set_mark(lo, owner);
        }
        // Ancestors level by level; a level where no node changed leaves everything above
        // it unchanged, which is the common case for a short booking in a long ring.
        let (mut a, mut b, mut half) =
            ((leaves + wl as usize) / 2, (leaves + wh as usize) / 2, WORD);
        while a >= 1 {
            let mut changed = false;
            for node in a..=b {
                let old = self.nodes[node];
                self.pull(node, half);
                changed |= self.nodes[node] != old;
            }
            if !changed {
                break;
            }
            a /= 2;
            b /= 2;
            half *= 2;
        }
    }

    /// The owner of slot `i` ([`FREE`] when free).
    pub(crate) fn owner_at(&self, i: u32) -> u32 {
        if self.is_free(i) {
            return FREE;
        }
        let mut w = (i / WORD) as usize;
        // Marks at or before `i` in its word.
        let mut bits = self.marks[w] & (u64::MAX >> (WORD - 1 - i % WORD));
        while bits == 0 {
            w = w
                .checked_sub(1)
                .expect("every booked stretch has a mark on its first slot");
            bits = self.marks[w];
        }
        self.owners[w * WORD as usize + (WORD - 1 - bits.leading_zeros()) as usize]
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
        let (wl, wh) = (lo / WORD, (hi - 1) / WORD);
        if wl == wh {
            return self.fit_segment(lo, hi, n, run);
        }
        if let Some(x) = self.fit_segment(lo, (wl + 1) * WORD, n, run) {
            return Some(x);
        }
        let full_hi = hi / WORD;
        if wl + 1 < full_hi
            && let Some(x) = self.fit_words(wl + 1, full_hi, n, run)
        {
            return Some(x);
        }
        if !hi.is_multiple_of(WORD) {
            return self.fit_segment(full_hi * WORD, hi, n, run);
        }
        None
    }

    /// [`Self::first_fit`] inside one word: the slots `s..e`.
    #[inline]
    fn fit_segment(&self, s: u32, e: u32, n: u32, run: &mut u32) -> Option<i64> {
        let len = e - s;
        let x = (self.words[(s / WORD) as usize] >> (s % WORD)) & low_mask(len);
        let pre = word_prefix(x);
        if *run + pre >= n {
            return Some(i64::from(s) - i64::from(*run));
        }
        if n <= WORD
            && let Some(p) = word_first_fit(x, n)
        {
            return Some(i64::from(s + p));
        }
        *run = if pre == len {
            *run + len
        } else {
            word_suffix(x << (WORD - len))
        };
        None
    }

    /// [`Self::first_fit`] over the whole words `a..b`.
    ///
    /// Bottom-up over the canonical nodes of the range: the left boundary climbs from the
    /// first word and meets its nodes from left to right, so a fit near the start is found
    /// after a level or two instead of a descent from the root; the right boundary's
    /// nodes come right to left and wait on a small stack.
    fn fit_words(&self, a: u32, b: u32, n: u32, run: &mut u32) -> Option<i64> {
        let leaves = self.leaves as usize;
        let (mut l, mut r, mut level) = (leaves + a as usize, leaves + b as usize, 0u32);
        // At most one right node per level, and a tree has at most 21 levels (2^26 slots).
        let mut right = [(0usize, 0u32); 32];
        let mut pending = 0;
        while l < r {
            if l & 1 == 1 {
                if let Some(x) = self.fit_node(l, level, n, run) {
                    return Some(x);
                }
                l += 1;
            }
            if r & 1 == 1 {
                r -= 1;
                right[pending] = (r, level);
                pending += 1;
            }
            l /= 2;
            r /= 2;
            level += 1;
        }
        while pending > 0 {
            pending -= 1;
            let (node, level) = right[pending];
            if let Some(x) = self.fit_node(node, level, n, run) {
                return Some(x);
            }
        }
        None
    }

    /// One canonical node of a search, `level` levels above the leaves: it either
    /// completes the carried run, holds a fit, or passes on its free suffix.
    #[inline]
    fn fit_node(&self, node: usize, level: u32, n: u32, run: &mut u32) -> Option<i64> {
        let nd = self.nodes[node];
        let nl = ((node << level) - self.leaves as usize) as u32;
        let words = 1u32 << level;
        let span = words * WORD;
        if *run + nd.pre >= n {
            return Some(i64::from(nl * WORD) - i64::from(*run));
        }
        if nd.best >= n {
            return Some(i64::from(self.leftmost_run(node, nl, nl + words, n)));
        }
        *run = if nd.pre == span { *run + span } else { nd.suf };
        None
    }

    /// The start of the leftmost free run of at least `n` slots inside a node (words
    /// `nl..nr`) whose `best` is at least `n`.
    fn leftmost_run(&self, mut node: usize, mut nl: u32, mut nr: u32, n: u32) -> u32 {
        while node < self.leaves as usize {
            let mid = nl + (nr - nl) / 2;
            let l = self.nodes[2 * node];
            let r = self.nodes[2 * node + 1];
            if l.best >= n {
                node *= 2;
                nr = mid;
            } else if l.suf + r.pre >= n {
                return mid * WORD - l.suf;
            } else {
                node = 2 * node + 1;
                nl = mid;
            }
        }
        // A leaf whose longest run is at least n (so n ≤ 64).
        let p = word_first_fit(self.words[nl as usize], n)
            .expect("a word whose longest free run is at least n holds a fit");
        nl * WORD + p
    }

    /// The first slot in `lo..hi` that is not free.
    pub(crate) fn first_taken(&self, lo: u32, hi: u32) -> Option<u32> {
        if lo >= hi {
            return None;
        }
        let (wl, wh) = (lo / WORD, (hi - 1) / WORD);
        if wl == wh {
            return self.taken_segment(lo, hi);
        }
        if let Some(x) = self.taken_segment(lo, (wl + 1) * WORD) {
            return Some(x);
        }
        let full_hi = hi / WORD;
        if wl + 1 < full_hi
            && let Some(x) = self.taken_nodes(1, 0, self.leaves, wl + 1, full_hi)
        {
            return Some(x);
        }
        if !hi.is_multiple_of(WORD) {
            return self.taken_segment(full_hi * WORD, hi);
        }
        None
    }

    /// [`Self::first_taken`] inside one word: the slots `s..e`.
    #[inline]
    fn taken_segment(&self, s: u32, e: u32) -> Option<u32> {
        let x = !(self.words[(s / WORD) as usize] >> (s % WORD)) & low_mask(e - s);
        (x != 0).then(|| s + x.trailing_zeros())
    }

    /// [`Self::first_taken`] over the whole words `a..b`, below `node` (words `nl..nr`).
    fn taken_nodes(&self, node: usize, nl: u32, nr: u32, a: u32, b: u32) -> Option<u32> {
        if a <= nl && nr <= b {
            if self.nodes[node].pre == (nr - nl) * WORD {
                return None;
            }
            if node >= self.leaves as usize {
                return Some(nl * WORD + (!self.words[nl as usize]).trailing_zeros());
            }
        }
        let mid = nl + (nr - nl) / 2;
        if a < mid
            && let Some(x) = self.taken_nodes(2 * node, nl, mid, a, b)
        {
            return Some(x);
        }
        if b > mid {
            return self.taken_nodes(2 * node + 1, mid, nr, a, b);
        }
        None
    }
}

#[cfg(test)]
mod tests;

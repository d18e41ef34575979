//! Unit tests and model-based property tests of the bitmap free-run index.

use alloc::vec;
use alloc::vec::Vec;

use proptest::prelude::*;

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

#[test]
fn runs_cross_word_boundaries() {
    let mut t = FreeRunTree::new(300);
    t.assign(0, 60, 1);
    t.assign(70, 300, 2);
    let mut run = 0;
    assert_eq!(t.first_fit(0, 300, 10, &mut run), Some(60));
    let mut run = 0;
    assert_eq!(t.first_fit(0, 300, 11, &mut run), None);
    assert_eq!(run, 0);
    // Trimming the front of a stretch keeps its owner on the rest.
    t.assign(70, 200, FREE);
    assert_eq!(t.owner_at(250), 2);
    assert_eq!(t.owner_at(200), 2);
    assert_eq!(t.owner_at(199), FREE);
    let mut run = 0;
    assert_eq!(t.first_fit(0, 300, 140, &mut run), Some(60));
    assert_eq!(t.first_taken(60, 300), Some(200));
    assert_eq!(t.first_taken(130, 300), Some(200));
}

#[test]
fn longest_run_edges() {
    assert_eq!(word_longest(0), 0);
    assert_eq!(word_longest(u64::MAX), 64);
    assert_eq!(word_longest(u64::MAX >> 1), 63);
    assert_eq!(word_longest(u64::MAX << 1), 63);
    assert_eq!(word_longest(0b1011_0111), 3);
    assert_eq!(word_first_fit(u64::MAX, 64), Some(0));
    assert_eq!(word_first_fit(u64::MAX << 1, 64), None);
    assert_eq!(word_first_fit(0b1011_0111, 3), Some(0));
    assert_eq!(word_first_fit(0b1011_0110, 2), Some(1));
}

fn naive_runs(w: u64) -> (u32, u32, u32) {
    let bit = |i: u32| w >> i & 1 == 1;
    let pre = (0..64).take_while(|&i| bit(i)).count() as u32;
    let suf = (0..64).rev().take_while(|&i| bit(i)).count() as u32;
    let (mut best, mut cur) = (0, 0);
    for i in 0..64 {
        cur = if bit(i) { cur + 1 } else { 0 };
        best = best.max(cur);
    }
    (pre, suf, best)
}

fn naive_first_fit(w: u64, n: u32) -> Option<u32> {
    (0..=64 - n).find(|&p| (p..p + n).all(|i| w >> i & 1 == 1))
}

/// Words with long runs: random words are mostly short runs, so also build words from
/// a few random ranges of ones.
fn word() -> impl Strategy<Value = u64> {
    prop_oneof![
        any::<u64>(),
        prop::collection::vec((0u32..64, 1u32..=64), 0..4).prop_map(|ranges| {
            ranges.into_iter().fold(0u64, |w, (s, len)| {
                let len = len.min(64 - s);
                w | (low_mask(len) << s)
            })
        }),
        any::<u64>().prop_map(|x| !(x & (x >> 7) & (x >> 13))),
    ]
}

proptest! {
    #[test]
    fn word_helpers_agree_with_a_bit_loop(w in word(), n in 1u32..=64) {
        let (pre, suf, best) = naive_runs(w);
        prop_assert_eq!(word_prefix(w), pre);
        prop_assert_eq!(word_suffix(w), suf);
        prop_assert_eq!(word_longest(w), best);
        prop_assert_eq!(word_first_fit(w, n), naive_first_fit(w, n));
    }
}

#[derive(Debug, Clone)]
enum TreeOp {
    Book { start: u32, len: u32 },
    Free { at: u32 },
    Trim { at: u32, keep_from: u32 },
    Reset,
}

fn tree_op(len: u32) -> impl Strategy<Value = TreeOp> {
    prop_oneof![
        6 => (0..len, 1..=len).prop_map(|(start, len)| TreeOp::Book { start, len }),
        3 => (0..len).prop_map(|at| TreeOp::Free { at }),
        2 => (0..len, 0..len).prop_map(|(at, keep_from)| TreeOp::Trim { at, keep_from }),
        1 => Just(TreeOp::Reset),
    ]
}

/// The stretch of owner `o` around slot `at` in the naive model.
fn stretch(owners: &[u32], at: usize) -> (usize, usize) {
    let o = owners[at];
    let mut s = at;
    while s > 0 && owners[s - 1] == o {
        s -= 1;
    }
    let mut e = at + 1;
    while e < owners.len() && owners[e] == o {
        e += 1;
    }
    (s, e)
}

fn check_queries(t: &FreeRunTree, owners: &[u32], lo: u32, hi: u32, n: u32, run0: u32) {
    let free = |i: i64| i < i64::from(lo) || owners[i as usize] == FREE;
    // An empty range finds nothing (the carried run alone is the caller's business).
    let expected = (i64::from(lo) - i64::from(run0)..=i64::from(hi) - i64::from(n))
        .find(|&x| (x..x + i64::from(n)).all(free))
        .filter(|_| lo < hi);
    let mut run = run0;
    let got = t.first_fit(lo, hi, n, &mut run);
    assert_eq!(got, expected, "first_fit({lo}, {hi}, {n}, run {run0})");
    if expected.is_none() {
        let tail = (lo..hi)
            .rev()
            .take_while(|&i| owners[i as usize] == FREE)
            .count() as u32;
        let want = if tail == hi - lo { run0 + tail } else { tail };
        assert_eq!(run, want, "run carried out of {lo}..{hi}");
    }
    let taken = (lo..hi).find(|&i| owners[i as usize] != FREE);
    assert_eq!(t.first_taken(lo, hi), taken, "first_taken({lo}, {hi})");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn tree_agrees_with_a_naive_ring(
        len in 1u32..400,
        ops in prop::collection::vec(tree_op(400), 1..60),
        queries in prop::collection::vec((0u32..400, 0u32..400, 1u32..200, 0u32..20), 8),
    ) {
        let mut t = FreeRunTree::new(len);
        let mut owners: Vec<u32> = vec![FREE; len as usize];
        let mut next_owner = 0;
        for op in ops {
            match op {
                TreeOp::Book { start, len: n } => {
                    let start = start % len;
                    let end = (start + n).min(len);
                    if owners[start as usize..end as usize].iter().all(|&o| o == FREE) {
                        t.assign(start, end, next_owner);
                        owners[start as usize..end as usize].fill(next_owner);
                        next_owner += 1;
                    }
                }
                TreeOp::Free { at } => {
                    let at = (at % len) as usize;
                    if owners[at] != FREE {
                        let (s, e) = stretch(&owners, at);
                        t.assign(s as u32, e as u32, FREE);
                        owners[s..e].fill(FREE);
                    }
                }
                TreeOp::Trim { at, keep_from } => {
                    let at = (at % len) as usize;
                    if owners[at] != FREE {
                        let (s, e) = stretch(&owners, at);
                        let k = s + 1 + keep_from as usize % (e - s);
                        if k < e {
                            t.assign(s as u32, k as u32, FREE);
                            owners[s..k].fill(FREE);
                        }
                    }
                }
                TreeOp::Reset => {
                    t.reset();
                    owners.fill(FREE);
                }
            }
            for (i, &o) in owners.iter().enumerate() {
                prop_assert_eq!(t.owner_at(i as u32), o, "owner of slot {}", i);
            }
            for &(a, b, n, run) in &queries {
                let (a, b) = (a % (len + 1), b % (len + 1));
                let (lo, hi) = (a.min(b), a.max(b));
                check_queries(&t, &owners, lo, hi, n, run);
            }
        }
    }
}

//! A few scoped threads working through a list of items: what runs at once here (probing the
//! shards for a missed file, moving files home, and the function's counting of its shards).
//! Over NFS each item is a chain of round trips that does not wait on the others, so several
//! at once finish sooner; a bound keeps hundreds of items from taking hundreds of threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// `f` of each item, taken in `order` (indices of `items`) by at most `most` threads, none
/// started once `until` has come. The result of item `i` is at index `i`; `None` for an item
/// not reached. With one thread (or one item) it all runs on the caller's thread.
pub fn map<T: Sync, R: Send>(
    items: &[T],
    order: &[usize],
    most: usize,
    until: Option<Instant>,
    f: impl Fn(&T) -> R + Sync,
) -> Vec<Option<R>> {
    workers(
        items.len(),
        order,
        most,
        until,
        Vec::new,
        |done: &mut Vec<(usize, R)>, i| done.push((i, f(&items[i]))),
        |done| done,
    )
}

/// The scheduling under [`map`], for work that keeps state per thread: each of at most `most`
/// threads makes its state with `start`, hands it each index it takes from `order` (none once
/// `until` has come) through `step`, and turns it into results with `end`, which may settle
/// what its steps left pending. The results of `len` items, each at its index; `None` for one
/// no `end` answered.
pub fn workers<S, R: Send>(
    len: usize,
    order: &[usize],
    most: usize,
    until: Option<Instant>,
    start: impl Fn() -> S + Sync,
    step: impl Fn(&mut S, usize) + Sync,
    end: impl Fn(S) -> Vec<(usize, R)> + Sync,
) -> Vec<Option<R>> {
    let next = AtomicUsize::new(0);
    let work = || {
        let mut state = start();
        loop {
            if until.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            step(&mut state, i);
        }
        end(state)
    };
    let threads = most.clamp(1, order.len().max(1));
    let done: Vec<(usize, R)> = if threads == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..threads).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut out: Vec<Option<R>> = (0..len).map(|_| None).collect();
    for (i, r) in done {
        out[i] = Some(r);
    }
    out
}

/// [`map`] over every item in its order, with no deadline: every result.
pub fn map_all<T: Sync, R: Send>(items: &[T], most: usize, f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let order: Vec<usize> = (0..items.len()).collect();
    map(items, &order, most, None, f)
        .into_iter()
        .map(|r| r.expect("without a deadline every item is reached"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    #[test]
    fn every_result_at_its_index_with_at_most_the_bound_at_once() {
        let running = AtomicUsize::new(0);
        let most_seen = AtomicUsize::new(0);
        let items: Vec<usize> = (0..100).collect();
        let out = map_all(&items, 8, |&i| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            most_seen.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(2));
            running.fetch_sub(1, Ordering::SeqCst);
            i * 2
        });
        assert_eq!(out, items.iter().map(|i| i * 2).collect::<Vec<_>>());
        let seen = most_seen.load(Ordering::SeqCst);
        assert!((2..=8).contains(&seen), "{seen} at once");
    }

    #[test]
    fn nothing_starts_after_the_deadline() {
        let items = [1, 2, 3];
        let out = map(&items, &[2, 0, 1], 4, Some(Instant::now()), |&i| i);
        assert!(out.iter().all(Option::is_none));
        let out = map(&items, &[2, 0], 1, None, |&i| i * 10);
        assert_eq!(out, [Some(10), None, Some(30)]);
    }
}

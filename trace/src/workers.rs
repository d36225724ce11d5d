//! Work on a trace's thread logs spread over the machine's cores: each log
//! is read and decoded on its own, so per-log work (filling in sync
//! points, building a thread's plan) runs side by side.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Worker threads for `items` pieces of work: one per core, no more than
/// the pieces.
fn workers_for(items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    cores.min(items).max(1)
}

/// `f` applied to every item, on up to one thread per core; the results in
/// the items' order. Items are handed out one at a time, so a long one does
/// not hold up the others. With one core (or one item) it runs inline.
pub fn map_parallel<T, R, F>(items: Vec<T>, f: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let workers = workers_for(items.len());
    if workers <= 1 {
        return items.into_iter().map(f).collect();
    }
    let count = items.len();
    let slots: Vec<Mutex<Option<T>>> = items.into_iter().map(|t| Mutex::new(Some(t))).collect();
    let results: Vec<Mutex<Option<R>>> = (0..count).map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..workers {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(slot) = slots.get(i) else {
                        break;
                    };
                    let item = take(slot);
                    if let Some(item) = item {
                        let r = f(item);
                        *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    }
                }
            });
        }
    });
    results
        .into_iter()
        .filter_map(|r| r.into_inner().unwrap_or_else(|p| p.into_inner()))
        .collect()
}

fn take<T>(slot: &Mutex<Option<T>>) -> Option<T> {
    slot.lock().unwrap_or_else(|p| p.into_inner()).take()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_come_back_in_the_items_order() {
        let items: Vec<u64> = (0..100).collect();
        let squares = map_parallel(items, |i| i * i);
        assert_eq!(squares, (0..100).map(|i| i * i).collect::<Vec<_>>());
        assert!(map_parallel(Vec::<u8>::new(), |i| i).is_empty());
    }
}

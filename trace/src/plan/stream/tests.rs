use super::*;
use crate::event::EventKind;
use proptest::prelude::*;

fn point(index: u64, flags: u8, waits: Vec<(u32, u64)>) -> PlanPoint {
    PlanPoint {
        index,
        seq: u64::MAX,
        addr: 0,
        payload: 0,
        kind: EventKind::Write as u8,
        flags,
        waits,
    }
}

/// What a decoded point has of a written one: fields its flags do not
/// store read as 0 (`seq`: `u64::MAX`).
fn as_stored(p: &PlanPoint) -> PlanPoint {
    let keep = |flag: u8, v: u64, absent: u64| if p.flags & flag != 0 { v } else { absent };
    PlanPoint {
        addr: keep(flags::CHECK, u64::from(addr_check(p.addr)), 0),
        payload: keep(flags::PAYLOAD, p.payload, 0),
        seq: keep(flags::SEQUENCED, p.seq, u64::MAX),
        ..p.clone()
    }
}

#[test]
fn a_plan_verifies_and_any_flipped_byte_is_caught() {
    let mut p = point(3, flags::CHECK | flags::PAYLOAD, vec![(1, 5)]);
    p.addr = 0x10;
    p.payload = 7;
    let plan = encode_plan(2, PlanMode::Parallel, 9, 0xabc, &[], &[p]);
    assert!(verify_plan(&plan, 2, 9).is_ok());
    assert!(verify_plan(&plan, 1, 9).is_err());
    assert!(verify_plan(&plan, 2, 8).is_err());
    for i in 0..plan.len() {
        if (12..16).contains(&i) || (32..48).contains(&i) {
            continue; // thread, count and hash: compared with the caller's
        }
        let mut bad = plan.clone();
        bad[i] ^= 0x40;
        assert!(verify_plan(&bad, 2, 9).is_err(), "byte {i} flipped");
    }
}

#[test]
fn waits_beyond_the_packed_table_round_trip() {
    // Threads and indices the table of recent waits cannot hold (it
    // forgets them) decode as written, and so does a wait after them on the
    // same slot.
    let big = (1u64 << 40) + 5;
    let points = vec![
        point(3, 0, vec![(1 << 24, 7), (8, big), (0, big + 1)]),
        point(4, 0, vec![(8, big + 2), (1 << 24, 9), (u32::MAX, 1)]),
        point(big + 9, 0, vec![(8, 2), (0, big + 3)]),
    ];
    let bytes = encode_plan(0, PlanMode::Parallel, big + 10, 0, &[], &points);
    let (_, back) = decode_plan(&bytes).unwrap();
    assert_eq!(back, points);
    assert!(verify_plan(&bytes, 0, big + 10).is_ok());
}

#[test]
fn plan_round_trips_with_many_waits_and_every_flag() {
    let many: Vec<(u32, u64)> = (0..40).map(|t| (t, 1000 - u64::from(t))).collect();
    let mut first = point(3, flags::NOTIFY | flags::CHECK, vec![]);
    first.addr = 0x7fff_0000_1000;
    let mut second = point(9, flags::ALL, many);
    second.kind = 0;
    second.seq = 77;
    second.payload = u64::MAX;
    second.addr = 8;
    let points = vec![first, second, point(10, 0, vec![(1, 4), (2, 0)])];
    let bytes = encode_plan(2, PlanMode::Sequential, 11, 77, &[], &points);
    let (h, back) = decode_plan(&bytes).unwrap();
    assert_eq!(
        (h.thread, h.points, h.waits, h.accesses, h.access_hash),
        (2, 3, 42, 11, 77)
    );
    assert_eq!(back, points.iter().map(as_stored).collect::<Vec<_>>());
    assert!(verify_plan(&bytes, 2, 11).is_ok());
    assert!(verify_plan(&bytes, 2, 10).is_err(), "a point at the end");
    assert!(check_plan(b"nonsense").is_err());
}

#[test]
fn results_come_before_the_points_and_are_checked() {
    let points = vec![point(2, flags::NOTIFY, vec![(1, 3)]), point(6, 0, vec![])];
    let results = [7, u64::MAX, 0, 42];
    let bytes = encode_plan(3, PlanMode::Parallel, 9, 5, &results, &points);
    assert_eq!(
        bytes.len(),
        encode_plan(3, PlanMode::Parallel, 9, 5, &[], &points).len() + 32
    );
    let (header, back) = decode_plan(&bytes).unwrap();
    assert_eq!(header.results, 4);
    assert_eq!(back, points);
    assert_eq!(decode_results(&bytes).unwrap(), results);
    assert!(verify_plan(&bytes, 3, 9).is_ok());
    // A count past the file, or past the thread's events, is refused.
    let mut bad = bytes.clone();
    bad[64..72].copy_from_slice(&1000u64.to_le_bytes());
    assert!(check_plan(&bad).is_err());
    let mut bad = bytes.clone();
    bad[64..72].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(check_plan(&bad).is_err());
    assert!(check_plan(&encode_plan(3, PlanMode::Parallel, 3, 5, &results, &[])).is_err());
    // Without its array a plan is too short.
    assert!(check_plan(&bytes[..PLAN_HEADER_LEN + 4]).is_err());
}

#[test]
fn a_cursor_stops_at_damaged_bytes() {
    let points: Vec<PlanPoint> = (0..4).map(|i| point(i * 2, 0, vec![(0, i)])).collect();
    let bytes = encode_plan(1, PlanMode::Parallel, 8, 0, &[], &points);
    let cut = &bytes[..bytes.len() - 1];
    let mut cursor = PlanCursor::new(cut, 4);
    let read: Vec<u64> = std::iter::from_fn(|| cursor.next_point().map(|p| p.index)).collect();
    assert_eq!(read, [0, 2, 4]);
    assert!(cursor.next_point().is_none());
    assert!(verify_plan(cut, 1, 8).is_err());
}

fn arb_point() -> impl Strategy<Value = (u64, PlanPoint)> {
    (
        0u64..1000,
        0u8..=MAX_PLAN_KIND,
        0u8..16,
        any::<u64>(),
        any::<u64>(),
        any::<u64>(),
        prop::collection::vec((0u32..64, any::<u64>()), 0..20),
    )
        .prop_map(|(gap, kind, f, addr, payload, seq, waits)| {
            let p = PlanPoint {
                index: 0,
                seq,
                addr,
                payload,
                kind,
                flags: f,
                waits,
            };
            (gap, p)
        })
}

proptest! {
    #[test]
    fn any_plan_round_trips(raw in prop::collection::vec(arb_point(), 0..50),
                            results in prop::collection::vec(any::<u64>(), 0..40)) {
        let mut next = 0u64;
        let points: Vec<PlanPoint> = raw
            .into_iter()
            .map(|(gap, mut p)| {
                p.index = next + gap;
                next = p.index + 1;
                p
            })
            .collect();
        // (A thread has at least as many events as results.)
        let accesses = next.max(results.len() as u64);
        let bytes = encode_plan(5, PlanMode::Parallel, accesses, 1, &results, &points);
        prop_assert!(verify_plan(&bytes, 5, accesses).is_ok());
        let (header, back) = decode_plan(&bytes).unwrap();
        prop_assert_eq!(back, points.iter().map(as_stored).collect::<Vec<_>>());
        prop_assert_eq!(header.results, results.len() as u64);
        prop_assert_eq!(decode_results(&bytes).unwrap(), results.clone());
        for (i, &r) in (0u64..).zip(&results) {
            prop_assert_eq!(result_at(&bytes, i), Some(r));
        }
        prop_assert_eq!(result_at(&bytes, results.len() as u64), None);
    }

    #[test]
    fn any_bytes_decode_without_panic(body in prop::collection::vec(any::<u8>(), 0..300),
                                      points in 0u64..200,
                                      results in prop_oneof![Just(0u64), 0u64..64, any::<u64>()]) {
        let mut bytes = encode_plan(0, PlanMode::Parallel, 1 << 20, 0, &[], &[]);
        bytes[16..24].copy_from_slice(&points.to_le_bytes());
        bytes[64..72].copy_from_slice(&results.to_le_bytes());
        bytes.extend_from_slice(&body);
        let sum = PLAN_CHECKSUM.of(&bytes[PLAN_HEADER_LEN..]);
        bytes[56..64].copy_from_slice(&sum.to_le_bytes());
        let _ = verify_plan(&bytes, 0, 1 << 20);
        let _ = decode_plan(&bytes);
        let _ = decode_results(&bytes);
        for i in [0, 1, results.saturating_sub(1), results, u64::MAX] {
            let _ = result_at(&bytes, i);
        }
        let mut cursor = PlanCursor::new(&bytes, points);
        let mut n = 0;
        while let Some(p) = cursor.next_point() {
            n += 1;
            prop_assert!(n <= points);
            let _ = p.waits().count();
        }
    }
}

#[test]
fn every_event_kind_fits_a_plan_point() {
    for &k in EventKind::ALL {
        assert!(k as u8 <= MAX_PLAN_KIND, "{k:?} needs more than six bits");
    }
}

#[test]
fn waits_on_one_thread_are_stored_against_the_last_one() {
    // Thread 3 progresses by a few events between two waits on it, far
    // from this thread's own index: the second wait takes two bytes
    // (thread, small delta), not three or more.
    let first = point(10, 0, vec![(3, 90_000)]);
    let second = point(11, 0, vec![(3, 90_004)]);
    let one = encode_plan(
        0,
        PlanMode::Parallel,
        20,
        0,
        &[],
        std::slice::from_ref(&first),
    );
    let two = encode_plan(0, PlanMode::Parallel, 20, 0, &[], &[first, second.clone()]);
    assert_eq!(
        two.len() - one.len(),
        2 + 2,
        "kind/waits, flags/index, thread, delta"
    );
    let (_, back) = decode_plan(&two).unwrap();
    assert_eq!(back[1].waits, second.waits);
}

//! Object keys written once per dump. Documents such as API records repeat a
//! few keys, and callers that can name a key's text by a stable identity (an
//! address, say) copy its finished text from here instead of escaping it again.
//!
//! The caller guarantees that an identity names the same text for as long as
//! it is cached: until [`KeyCache::put`] reports it replaced, or the cache is
//! dropped (every identity still held is listed by [`KeyCache::held`]). A
//! caller naming keys by address keeps each cached object alive that long.
use std::cell::Cell;
use std::mem::MaybeUninit;

use super::escape::{escape_raw, escape_room, Units};

/// Slots of the cache: sets of [`WAYS`] picked by address.
const SLOTS: usize = 256;
/// Slots per set. Keys whose addresses share a set all stay up to this many:
/// a record's keys are met in the same order each time, so one key more than
/// a set holds evicts the oldest, which is the next one needed, and every key
/// of that set then misses on every record. With two ways, three of a
/// document's two dozen keys land in one set in about one process in three.
const WAYS: usize = 4;
const SETS: usize = SLOTS / WAYS;
/// Longest cached entry: the quoted escape and `": "`.
pub const ENTRY: usize = 54;
/// Entries up to this long are copied as one fixed-size block (see [`KeyCache::get_padded`]).
pub const PADDED: usize = 32;
const _: () = assert!(PADDED <= ENTRY);
/// The writer's own room for one key escape, taken on the stack.
const SCRATCH: usize = 512;
/// Keys written before the cache is set up: small dumps never pay for it.
const WARM_UP: u32 = 32;

#[derive(Clone, Copy)]
struct Entry {
    len: u8,
    text: [u8; ENTRY],
}

/// The identities (0: empty) apart from the entries, so that a lookup reads
/// one set's identities from one cache line and only the entry it finds.
struct Table {
    addrs: [usize; SLOTS],
    entries: [Entry; SLOTS],
}

type Slots = Box<Table>;

thread_local! {
    /// The table of the last cache dropped on this thread. Small documents are dumped one after
    /// another (the block meter measures each JSON block of a conversation on its own): a new
    /// table each time would cost a fresh 16 KB allocation, zeroed, per document.
    static SPARE: Cell<Option<Slots>> = const { Cell::new(None) };
}

/// A set-associative cache of finished key texts (`"key": `, ensure_ascii).
#[derive(Default)]
pub struct KeyCache {
    slots: Option<Slots>,
    /// Keys seen so far (up to [`WARM_UP`]).
    seen: u32,
}

impl Drop for KeyCache {
    fn drop(&mut self) {
        if let Some(slots) = self.slots.take() {
            // During the thread's teardown the spare is gone: the table is then simply freed.
            let _ = SPARE.try_with(|spare| spare.set(Some(slots)));
        }
    }
}

/// The first slot of the set `addr` belongs to.
#[inline(always)]
fn set_of(addr: usize) -> usize {
    // Addresses of heap objects are 16-byte aligned: drop those bits, fold in higher ones.
    ((addr >> 4) ^ (addr >> 10)) % SETS * WAYS
}

impl KeyCache {
    /// The entry (`"key": `) of the key named `addr`, if cached.
    #[inline(always)]
    pub fn get(&self, addr: usize) -> Option<&[u8]> {
        let entry = self.entry(addr)?;
        Some(&entry.text[..usize::from(entry.len)])
    }

    /// [`KeyCache::get`] as the slot's whole text array (at least
    /// [`PADDED`] bytes, of which the first `len` are the entry) and `len`,
    /// for a writer that copies a fixed-size block without a length test.
    #[inline(always)]
    pub fn get_padded(&self, addr: usize) -> Option<(&[u8; ENTRY], usize)> {
        let entry = self.entry(addr)?;
        Some((&entry.text, usize::from(entry.len)))
    }

    /// The slot holding `addr`: the one lookup behind both getters, inlined
    /// into each so the hot path keeps its fixed-size set scan.
    #[inline(always)]
    fn entry(&self, addr: usize) -> Option<&Entry> {
        let table = self.slots.as_ref()?;
        let first = set_of(addr);
        let way = table.addrs[first..][..WAYS]
            .iter()
            .position(|&a| a == addr)?;
        Some(&table.entries[first + way])
    }

    /// Whether a miss should be written through [`KeyCache::put`].
    #[inline(always)]
    pub fn wants(&mut self) -> bool {
        if self.slots.is_some() {
            return true;
        }
        self.seen += 1;
        if self.seen < WARM_UP {
            return false;
        }
        let slots = match SPARE.try_with(Cell::take).ok().flatten() {
            Some(mut spare) => {
                // Emptied by identity: a slot's text is read only under its own address.
                spare.addrs = [0; SLOTS];
                spare
            }
            None => Box::new(Table {
                addrs: [0; SLOTS],
                entries: [Entry {
                    len: 0,
                    text: [0; ENTRY],
                }; SLOTS],
            }),
        };
        self.slots = Some(slots);
        true
    }

    /// Write the entry (`"key": `) of the key named `addr` with characters
    /// `text` through `out`, and keep it when it fits a slot.
    pub fn put(&mut self, addr: usize, text: Units<'_>, out: impl FnOnce(&[u8])) -> Put {
        if escape_room(text) + 4 > SCRATCH {
            return Put::TooLong;
        }
        // Left unzeroed: zeroing the whole scratch for every key cost more than escaping the key.
        let mut scratch = [MaybeUninit::<u8>::uninit(); SCRATCH];
        let base = scratch.as_mut_ptr().cast::<u8>();
        // SAFETY: the scratch holds the quote, the room `escape_raw` asks for
        // (checked above) and the three closing bytes; the first `n + 4` bytes
        // are all written (quote, escape, closing) before they are read.
        let entry = unsafe {
            base.write(b'"');
            let n = escape_raw(base.add(1), text);
            std::ptr::copy_nonoverlapping(b"\": ".as_ptr(), base.add(n + 1), 3);
            std::slice::from_raw_parts(base, n + 4)
        };
        // Written before it is cached: a writer that cannot grow unwinds out of
        // `out`, and the caller takes its hold on a key only once told `Kept`.
        out(entry);
        let mut put = Put::Written;
        if let Some(slots) = self.slots.as_mut() {
            if entry.len() <= ENTRY {
                // The newest key takes the set's first slot; the one there moves
                // down, and the last slot's key (if any) leaves the cache.
                let first = set_of(addr);
                let addrs = &mut slots.addrs[first..][..WAYS];
                let replaced = addrs[WAYS - 1];
                addrs.copy_within(..WAYS - 1, 1);
                addrs[0] = addr;
                let entries = &mut slots.entries[first..][..WAYS];
                entries.copy_within(..WAYS - 1, 1);
                entries[0].len = entry.len() as u8;
                entries[0].text[..entry.len()].copy_from_slice(entry);
                put = Put::Kept {
                    replaced: (replaced != 0).then_some(replaced),
                };
            }
        }
        put
    }

    /// The identities cached now.
    pub fn held(&self) -> impl Iterator<Item = usize> + '_ {
        self.slots
            .iter()
            .flat_map(|slots| slots.addrs.iter().copied())
            .filter(|&a| a != 0)
    }
}

/// What [`KeyCache::put`] did with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Put {
    /// Too long for the cache's scratch: nothing written, the caller writes it.
    TooLong,
    /// Written, not kept (the cache is warming up, or the entry is longer than a slot).
    Written,
    /// Written and kept; `replaced` is the identity it evicted from its slot.
    Kept { replaced: Option<usize> },
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_are_quoted_escapes_with_the_colon() {
        let mut cache = KeyCache::default();
        for _ in 0..WARM_UP - 1 {
            assert!(!cache.wants());
        }
        assert!(cache.wants());
        let mut written = Vec::new();
        assert_eq!(
            cache.put(0x1000, Units::Utf8("café\n"), |e| written
                .extend_from_slice(e)),
            Put::Kept { replaced: None }
        );
        assert_eq!(written, b"\"caf\\u00e9\\n\": ");
        assert_eq!(cache.get(0x1000), Some(&b"\"caf\\u00e9\\n\": "[..]));
        assert_eq!(cache.get(0x2000), None);
        // Longer than a slot: written, not kept.
        let long = "k".repeat(60);
        written.clear();
        assert_eq!(
            cache.put(0x3000, Units::Utf8(&long), |e| written.extend_from_slice(e)),
            Put::Written
        );
        assert_eq!(written, format!("\"{long}\": ").as_bytes());
        assert_eq!(cache.get(0x3000), None);
        // Longer than the scratch: left to the caller.
        assert_eq!(
            cache.put(0x4000, Units::Utf8(&"k".repeat(83)), |_| unreachable!()),
            Put::TooLong
        );
        assert_eq!(cache.held().collect::<Vec<_>>(), vec![0x1000]);
    }

    #[test]
    fn a_table_handed_on_from_a_dropped_cache_starts_empty() {
        let mut first = KeyCache::default();
        while !first.wants() {}
        first.put(0x1000, Units::Utf8("a"), |_| {});
        let table = first.slots.as_deref().map(|t| t as *const _);
        drop(first);
        let mut second = KeyCache::default();
        while !second.wants() {}
        // The same allocation, with nothing of the first cache's keys in it.
        assert_eq!(second.slots.as_deref().map(|t| t as *const _), table);
        assert_eq!(second.held().count(), 0);
        assert_eq!(second.get(0x1000), None);
        let mut written = Vec::new();
        second.put(0x1000, Units::Utf8("b"), |e| written.extend_from_slice(e));
        assert_eq!(written, b"\"b\": ");
        assert_eq!(second.get(0x1000), Some(&b"\"b\": "[..]));
    }

    #[test]
    fn a_set_keeps_its_newest_keys() {
        let mut cache = KeyCache::default();
        while !cache.wants() {}
        let a = 0x10;
        let same_set: Vec<usize> = (1..)
            .map(|k| a + k * 16)
            .filter(|&b| set_of(b) == set_of(a))
            .take(WAYS)
            .collect();
        assert_eq!(
            cache.put(a, Units::Latin1(b"x\xff"), |_| {}),
            Put::Kept { replaced: None }
        );
        assert_eq!(
            cache.put(same_set[0], Units::Ucs2(&[0x6771]), |_| {}),
            Put::Kept { replaced: None }
        );
        for (i, &k) in same_set[1..WAYS - 1].iter().enumerate() {
            let text = format!("k{i}");
            assert_eq!(
                cache.put(k, Units::Utf8(&text), |_| {}),
                Put::Kept { replaced: None }
            );
        }
        // Keys of one set all stay, up to the set's ways.
        assert_eq!(cache.get(a), Some(&b"\"x\\u00ff\": "[..]));
        assert_eq!(cache.get(same_set[0]), Some(&b"\"\\u6771\": "[..]));
        let mut held: Vec<_> = cache.held().collect();
        held.sort_unstable();
        let mut want: Vec<_> = std::iter::once(a)
            .chain(same_set[..WAYS - 1].iter().copied())
            .collect();
        want.sort_unstable();
        assert_eq!(held, want);
        // One more evicts the oldest; the others keep their own texts.
        let last = same_set[WAYS - 1];
        assert_eq!(
            cache.put(last, Units::Utf8("c"), |_| {}),
            Put::Kept { replaced: Some(a) }
        );
        assert_eq!(cache.get(a), None);
        assert_eq!(cache.get(same_set[0]), Some(&b"\"\\u6771\": "[..]));
        assert_eq!(cache.get(last), Some(&b"\"c\": "[..]));
        for (i, &k) in same_set[1..WAYS - 1].iter().enumerate() {
            assert_eq!(cache.get(k), Some(format!("\"k{i}\": ").as_bytes()));
        }
        assert_eq!(cache.held().count(), WAYS);
    }
}

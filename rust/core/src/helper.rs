//! One helper thread, kept parked, that shares short pieces of parallel work.
//!
//! Starting (and joining) a thread costs about 40 us on the project's two-core
//! machine, waking a parked one about 10 us of the caller's time: for work of a few
//! hundred microseconds (reading a fresh 10 MB text) only a kept thread pays. A caller hands the helper the same closure
//! it runs itself; both claim parts of the work from a shared counter, so neither
//! waits for the other while parts remain. When the caller is done it withdraws the
//! helper's share if the helper has not started on it (a helper still waiting for a
//! core never holds the caller up), else waits for it: it is then finishing a part.
//!
//! The helper runs one share at a time; a second caller's share waits in the queue
//! and is usually withdrawn by its own caller first. In a forked child the helper
//! does not exist: the first share there starts a new one.

use std::any::Any;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::mpsc::{self, SendError, Sender};
use std::sync::{Arc, Mutex, OnceLock, TryLockError};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

/// How long the helper waits for work before it ends.
const IDLE: Duration = Duration::from_millis(if cfg!(test) { 100 } else { 2000 });

/// How long a caller spins for its share before it sleeps.
const SPIN: Duration = Duration::from_millis(1);

/// The share is queued, not started.
const PENDING: u8 = 0;
/// The helper is running it.
const RUNNING: u8 = 1;
/// The helper returned from it (or unwound: see [`Ticket::panic`]).
const DONE: u8 = 2;
/// The caller took it back before the helper started it.
const WITHDRAWN: u8 = 3;

/// The state of one share, held by the caller and the helper.
struct Ticket {
    state: AtomicU8,
    /// The helper's panic, resumed in the caller.
    panic: Mutex<Option<Box<dyn Any + Send>>>,
    /// The caller, unparked when the share is done.
    caller: Thread,
}

/// A share of work: the caller's closure with its lifetime erased.
///
/// The closure is only called after the helper moved the ticket from `PENDING` to
/// `RUNNING`, and the caller does not return (nor unwind past the closure's frame)
/// before the ticket is `DONE` or it withdrew the share: the borrow is live.
struct Share {
    work: *const (dyn Fn() + Sync + 'static),
    ticket: Arc<Ticket>,
}

// SAFETY: the closure is `Sync` and stays alive while it can be called (see above).
unsafe impl Send for Share {}

/// The helper's queue, and the process that started it.
struct Helper {
    queue: Sender<Share>,
    owner: u32,
}

static HELPER: Mutex<Option<Helper>> = Mutex::new(None);

/// Whether the machine has a core to spare (looked up once).
pub fn spare_core() -> bool {
    static SPARE: OnceLock<bool> = OnceLock::new();
    *SPARE.get_or_init(|| thread::available_parallelism().is_ok_and(|n| n.get() > 1))
}

/// The helper's queue, starting a helper if this process has none (or when `stale`:
/// the one it had ended); `None` on a single core, when another caller holds the
/// lock this instant, or when no thread can be had.
fn queue(stale: bool) -> Option<Sender<Share>> {
    if !spare_core() {
        return None;
    }
    let mut slot = match HELPER.try_lock() {
        Ok(slot) => slot,
        Err(TryLockError::Poisoned(p)) => p.into_inner(),
        Err(TryLockError::WouldBlock) => return None,
    };
    let pid = std::process::id();
    if let Some(helper) = slot.as_ref().filter(|h| h.owner == pid && !stale) {
        return Some(helper.queue.clone());
    }
    let (queue, shares) = mpsc::channel::<Share>();
    thread::Builder::new()
        .name("strands-offload-helper".into())
        .stack_size(1 << 20)
        .spawn(move || {
            // Idle this long, the helper ends (the next share starts another): a
            // process that forks later sees fewer threads of ours.
            while let Ok(share) = shares.recv_timeout(IDLE) {
                run(share);
            }
        })
        .ok()?;
    *slot = Some(Helper {
        queue: queue.clone(),
        owner: pid,
    });
    Some(queue)
}

/// The helper's side of one share.
fn run(share: Share) {
    let ticket = &share.ticket;
    if ticket
        .state
        .compare_exchange(PENDING, RUNNING, Ordering::AcqRel, Ordering::Acquire)
        .is_err()
    {
        return; // withdrawn
    }
    // SAFETY: the ticket is RUNNING, so the caller waits for DONE before its
    // closure can go away.
    let outcome = catch_unwind(AssertUnwindSafe(|| unsafe { (*share.work)() }));
    if let Err(payload) = outcome {
        *ticket.panic.lock().unwrap_or_else(|p| p.into_inner()) = Some(payload);
    }
    let caller = ticket.caller.clone();
    ticket.state.store(DONE, Ordering::Release);
    caller.unpark();
}

/// Withdraws the share or waits for it, when the caller's part ends (returning or
/// unwinding).
struct Settle(Arc<Ticket>);

impl Drop for Settle {
    fn drop(&mut self) {
        let ticket = &self.0;
        if ticket
            .state
            .compare_exchange(PENDING, WITHDRAWN, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
        {
            return;
        }
        // The helper is in its last part, a few tens of microseconds: spinning spares
        // the caller a sleep and the wake-up (the helper's unpark is then no syscall).
        let spin_until = Instant::now() + SPIN;
        while ticket.state.load(Ordering::Acquire) != DONE {
            if Instant::now() < spin_until {
                std::hint::spin_loop();
            } else {
                thread::park_timeout(SPIN);
            }
        }
        let payload = ticket
            .panic
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take();
        if let Some(payload) = payload {
            if !thread::panicking() {
                resume_unwind(payload);
            }
        }
    }
}

/// Runs `work` on the calling thread and, when a core is spare, on the helper too.
/// `work` must divide itself (claim parts from a shared counter) and return when no
/// part is left; it may run once or twice. A panic of either run goes on in the caller.
pub fn share<F: Fn() + Sync>(work: &F) {
    let ticket = Arc::new(Ticket {
        state: AtomicU8::new(PENDING),
        panic: Mutex::new(None),
        caller: thread::current(),
    });
    let local: &(dyn Fn() + Sync + '_) = work;
    // SAFETY: only the lifetime changes; `Settle` keeps the closure's use inside it.
    let erased: &'static (dyn Fn() + Sync + 'static) = unsafe { std::mem::transmute(local) };
    // Made before the share is sent, so that the caller's own run (even unwinding)
    // ends with the share withdrawn or done.
    let settle = Settle(Arc::clone(&ticket));
    let mut share = Share {
        work: erased,
        ticket,
    };
    for stale in [false, true] {
        let Some(queue) = queue(stale) else { break };
        match queue.send(share) {
            Ok(()) => break,
            // The helper ended, idle: start another once.
            Err(SendError(back)) => share = back,
        }
    }
    work();
    drop(settle);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::time::Duration;

    /// The tests that look at who ran what take the helper one at a time.
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

    /// The helper to the calling test alone; `None` on a single core (no helper).
    fn helper_alone() -> Option<std::sync::MutexGuard<'static, ()>> {
        spare_core().then(|| ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner()))
    }

    #[test]
    fn every_part_is_done_once() {
        for _ in 0..200 {
            let next = AtomicUsize::new(0);
            let done: Vec<AtomicUsize> = (0..64).map(|_| AtomicUsize::new(0)).collect();
            share(&|| loop {
                let k = next.fetch_add(1, Ordering::Relaxed);
                let Some(slot) = done.get(k) else { break };
                slot.fetch_add(1, Ordering::Relaxed);
            });
            assert!(done.iter().all(|d| d.load(Ordering::Relaxed) == 1));
        }
    }

    /// Whether the helper ran a part of a share of eight slow parts.
    fn helper_took_a_part() -> bool {
        let next = AtomicUsize::new(0);
        let helped = AtomicUsize::new(0);
        share(&|| {
            while next.fetch_add(1, Ordering::Relaxed) < 8 {
                if thread::current().name() == Some("strands-offload-helper") {
                    helped.fetch_add(1, Ordering::Relaxed);
                } else {
                    // The caller leaves the parts to the helper until it has taken one.
                    wait_for(|| helped.load(Ordering::Relaxed) > 0);
                }
            }
        });
        helped.load(Ordering::Relaxed) > 0
    }

    /// Waits until `done` holds, for at most 10 s (a slow emulator included).
    fn wait_for(done: impl Fn() -> bool) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !done() && Instant::now() < deadline {
            thread::sleep(Duration::from_millis(1));
        }
    }

    #[test]
    fn the_helper_takes_parts_when_the_caller_is_slow() {
        let Some(_one) = helper_alone() else { return };
        assert!(helper_took_a_part());
    }

    #[test]
    fn an_idle_helper_ends_and_the_next_share_starts_another() {
        let Some(_one) = helper_alone() else { return };
        assert!(helper_took_a_part());
        thread::sleep(IDLE * 3);
        assert!(helper_took_a_part());
    }

    #[test]
    fn a_panic_on_the_helper_goes_on_in_the_caller() {
        let Some(_one) = helper_alone() else { return };
        let caller = thread::current().id();
        let helped = AtomicUsize::new(0);
        let got = crate::alloc::catch_out_of_memory(|| {
            let next = AtomicUsize::new(0);
            share(&|| {
                while next.fetch_add(1, Ordering::Relaxed) < 16 {
                    if thread::current().id() != caller {
                        helped.store(1, Ordering::Relaxed);
                        crate::alloc::out_of_memory(7);
                    }
                    wait_for(|| helped.load(Ordering::Relaxed) > 0);
                }
            });
        });
        assert_eq!(got, Err(crate::alloc::OutOfMemory { bytes: 7 }));
        // The helper lives on for the next share.
        let next = AtomicUsize::new(0);
        share(&|| while next.fetch_add(1, Ordering::Relaxed) < 4 {});
    }

    #[test]
    fn a_busy_helper_does_not_hold_the_caller() {
        let Some(_one) = helper_alone() else { return };
        // One caller's share keeps the helper busy (that caller waits until the helper
        // took it); a share from another thread then queues behind it and is
        // withdrawn, its caller doing all the work alone.
        let release = AtomicUsize::new(0);
        let started = AtomicUsize::new(0);
        thread::scope(|s| {
            s.spawn(|| {
                share(&|| {
                    if thread::current().name() == Some("strands-offload-helper") {
                        started.store(1, Ordering::Release);
                        wait_for(|| release.load(Ordering::Acquire) == 1);
                    } else {
                        wait_for(|| started.load(Ordering::Acquire) == 1);
                    }
                })
            });
            wait_for(|| started.load(Ordering::Acquire) == 1);
            assert_eq!(started.load(Ordering::Acquire), 1, "the helper never ran");
            let runs = Mutex::new(Vec::new());
            share(&|| runs.lock().unwrap().push(thread::current().id()));
            release.store(1, Ordering::Release);
            assert_eq!(runs.into_inner().unwrap(), vec![thread::current().id()]);
        });
    }
}

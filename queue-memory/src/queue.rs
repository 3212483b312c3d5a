//! [`MemoryQueue`]: the engine over the in-memory driver.

use std::fmt;

use queue_core::{Backend, Engine};

use crate::builder::MemoryQueueBuilder;
use crate::driver::MemoryDriver;
use crate::faults::Faults;

/// A job queue whose jobs live in this process's memory. Cheap to clone; clones share the
/// store and the engine.
///
/// Build one with [`MemoryQueue::builder`]; use it through the [`queue_core::Queue`] trait.
#[derive(Clone)]
pub struct MemoryQueue {
    pub(crate) engine: Engine<MemoryDriver>,
}

impl Backend for MemoryQueue {
    type Driver = MemoryDriver;

    fn engine(&self) -> &Engine<MemoryDriver> {
        &self.engine
    }
}

impl fmt::Debug for MemoryQueue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryQueue")
            .field("store", &self.store_name().unwrap_or("(private)"))
            .field("claim", &self.engine.capabilities().claim)
            .finish_non_exhaustive()
    }
}

impl MemoryQueue {
    /// Starts configuring a queue on a new private store; see
    /// [`MemoryQueueBuilder::name`] and [`MemoryQueueBuilder::url`] for a shared one.
    pub fn builder() -> MemoryQueueBuilder {
        MemoryQueueBuilder::new()
    }

    /// The name of the store, `None` for a private one.
    pub fn store_name(&self) -> Option<&str> {
        self.engine.driver().store_name()
    }

    /// The faults injected into this queue value's statements (and its clones'), and counts of
    /// the statements it runs, for tests of what runs above the engine against a database that
    /// misbehaves: latency, an outage (`faults.down()` ... `faults.up()`), transient or
    /// permanent errors, panics. See [`Faults`]. The first call starts the counts; a queue value
    /// that never calls it pays one atomic load per statement.
    pub fn faults(&self) -> Faults {
        self.engine.driver().faults()
    }
}

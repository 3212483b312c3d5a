//! Cross-process wake-ups: one background task per queue value LISTENs on the schema's channel
//! and forwards each notification (whose payload is a queue name) into the [`WakeHub`].

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use queue_core::engine::hosts::Background;
use queue_core::WakeHub;
use sqlx::postgres::PgListener;
use sqlx::{PgPool, SqlStr};
use tokio::sync::watch;

const LOG: &str = "queue::postgres";
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
/// The payload prefix of the probe a new LISTEN sends itself (on its probe channel).
const PROBE: &str = "queue-listen-probe:";
/// How long a new LISTEN waits for its probe before it counts as deaf.
const PROBE_WAIT: Duration = Duration::from_secs(5);
/// How often a probe that could not be sent is sent again, within [`PROBE_WAIT`].
const PROBE_RESEND: Duration = Duration::from_millis(500);

/// The listener task of one queue value: started on the first `wait_for_work`, aborted when the
/// last clone of the queue value is dropped.
#[derive(Debug, Default)]
pub(crate) struct Listener {
    task: Background,
    /// Queues someone has waited on; woken after every (re)connect, because notifications sent
    /// while no LISTEN was active are lost.
    watched: Arc<Mutex<HashSet<String>>>,
    connected: Arc<AtomicBool>,
    /// The LISTEN connection did not hear its own probe (see [`run`]).
    deaf: Arc<AtomicBool>,
}

/// Where the listener sends the probe that proves its LISTEN hears the queue's NOTIFYs: the
/// queue's own pool and its `notify` statement.
#[derive(Clone, Debug)]
pub(crate) struct Probe {
    pub(crate) pool: PgPool,
    /// Behind a pooler in transaction mode (see `pinned`).
    pub(crate) pinned: bool,
    pub(crate) notify: SqlStr,
}

impl Listener {
    /// Starts the task unless it runs already, and remembers `queue` as watched. `moved`
    /// changes when the pool's connections were retired (the server is read-only or another
    /// host took over): the task then leaves its connection and listens on a fresh one.
    pub(crate) fn ensure(
        &self,
        queue: &str,
        pool: &PgPool,
        channel: &str,
        hub: &Arc<WakeHub>,
        moved: watch::Receiver<u64>,
        probe: Probe,
    ) {
        {
            let mut watched = self.watched.lock().unwrap_or_else(|e| e.into_inner());
            if !watched.contains(queue) {
                watched.insert(queue.to_owned());
            }
        }
        self.task.start_once(|| {
            Some(tokio::spawn(run(
                pool.clone(),
                channel.to_owned(),
                hub.clone(),
                self.watched.clone(),
                self.connected.clone(),
                self.deaf.clone(),
                moved,
                probe,
            )))
        });
    }

    /// Whether this process's LISTEN was found deaf (it did not hear its own probe).
    pub(crate) fn is_deaf(&self) -> bool {
        self.deaf.load(Ordering::Relaxed)
    }

    /// Whether a LISTEN connection is up right now and has not been found deaf.
    pub(crate) fn is_connected(&self) -> bool {
        self.connected.load(Ordering::Relaxed) && !self.deaf.load(Ordering::Relaxed)
    }
}

async fn connect(pool: &PgPool, channel: &str) -> Result<PgListener, sqlx::Error> {
    let mut listener = PgListener::connect_with(pool).await?;
    // Reconnecting is this task's job (with backoff and a wake-up of every watched queue).
    listener.eager_reconnect(false);
    listener
        .listen_all([channel, probe_channel(channel).as_str()])
        .await?;
    Ok(listener)
}

/// The channel of the listener's probes: beside the wake-up channel, so that other listeners of
/// that channel never see a probe. Truncated names may be shared by schemas; the probe's payload
/// is unique, so a probe is only ever taken for its own.
fn probe_channel(channel: &str) -> String {
    let keep = channel.len().min(63 - "_probe".len());
    let mut end = keep;
    while !channel.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}_probe", &channel[..end])
}

/// Listens until the task is aborted. While the connection is down, waiters fall back to their
/// poll timeout; the task reconnects with jittered exponential backoff. An outage is logged
/// once when it starts and once when it ends, not at every attempt.
///
/// Every new LISTEN sends itself a probe through the queue's own pool. A LISTEN that does not
/// hear it within [`PROBE_WAIT`] is deaf: behind a pooler in transaction mode (PgBouncer) the
/// LISTEN ran on a server connection that went back to the pooler, and a `listen_url` may name
/// another database than the queue's. That is logged as a warning (once per connection, with
/// what to do), `is_listening` turns false, and waiting falls back to polling: never silent.
#[allow(clippy::too_many_arguments)]
async fn run(
    pool: PgPool,
    channel: String,
    hub: Arc<WakeHub>,
    watched: Arc<Mutex<HashSet<String>>>,
    connected: Arc<AtomicBool>,
    deaf: Arc<AtomicBool>,
    mut moved: watch::Receiver<u64>,
    probe: Probe,
) {
    let mut backoff = MIN_BACKOFF;
    let mut outage = false;
    loop {
        moved.mark_unchanged();
        match connect(&pool, &channel).await {
            Ok(mut listener) => {
                connected.store(true, Ordering::Relaxed);
                backoff = MIN_BACKOFF;
                if std::mem::take(&mut outage) {
                    tracing::info!(target: LOG, channel, "listening again");
                } else {
                    tracing::debug!(target: LOG, channel, "listening");
                }
                // Anything pushed before this LISTEN was active sent its notification to no one:
                // let every waiter look once.
                let queues: Vec<String> = watched
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .iter()
                    .cloned()
                    .collect();
                for q in &queues {
                    hub.notify(q, 1);
                }
                let marker = format!("{PROBE}{}", uuid::Uuid::new_v4());
                let mut sent = send_probe(&probe, &channel, &marker).await;
                let mut heard = false;
                let probe_deadline = tokio::time::sleep(PROBE_WAIT);
                tokio::pin!(probe_deadline);
                let mut resend = tokio::time::interval(PROBE_RESEND);
                resend.tick().await;
                let why = loop {
                    tokio::select! {
                        got = listener.try_recv() => match got {
                            Ok(Some(n)) if n.channel() != channel => {
                                if n.payload() == marker {
                                    heard = true;
                                    deaf.store(false, Ordering::Relaxed);
                                }
                            }
                            Ok(Some(n)) => hub.notify(n.payload(), 1),
                            Ok(None) => break "listener connection lost".to_owned(),
                            Err(error) => break format!("listener failed: {error}"),
                        },
                        // A probe that could not be sent (the pool timed out, the server refused
                        // writes for a moment) is sent again until the deadline.
                        _ = resend.tick(), if !heard && matches!(sent, Probed::Unsent(_)) => {
                            sent = send_probe(&probe, &channel, &marker).await;
                        }
                        () = &mut probe_deadline, if !heard => {
                            heard = true;
                            match &sent {
                                Probed::Unsent(error) => {
                                    // Never sent: whether this LISTEN hears is not known, and
                                    // nothing is concluded from it.
                                    tracing::debug!(target: LOG, channel, %error, "could not send the listener's probe");
                                }
                                Probed::Sent | Probed::CameBack => {
                                    deaf.store(true, Ordering::Relaxed);
                                    tracing::warn!(
                                        target: LOG,
                                        channel,
                                        "the LISTEN connection did not hear a NOTIFY sent through \
                                         the queue's connections within {PROBE_WAIT:?}{}: behind \
                                         a pooler in transaction mode (PgBouncer) LISTEN receives \
                                         nothing, and a listen_url may name another database; \
                                         waiting falls back to polling and this queue value sends \
                                         no more NOTIFYs. Use pooler=transaction or wakeups=poll \
                                         in the URL, or a listen_url that connects to the server \
                                         directly",
                                        if matches!(sent, Probed::CameBack) {
                                            " (the probe came back to the connection that sent \
                                             it: a pooler shares the LISTEN's server connection)"
                                        } else {
                                            ""
                                        }
                                    );
                                }
                            }
                        }
                        // The pool's connections were retired: this one may be on a read-only
                        // or former server, where no push will ever notify.
                        _ = moved.changed() => break String::new(),
                    }
                };
                connected.store(false, Ordering::Relaxed);
                if why.is_empty() {
                    tracing::debug!(target: LOG, channel, "the server changed; listening on a new connection");
                    continue;
                }
                outage = true;
                tracing::warn!(target: LOG, channel, reason = %why, "polling until the listener is back");
            }
            Err(error) => {
                if outage {
                    tracing::debug!(target: LOG, channel, %error, retry_in = ?backoff, "cannot listen");
                } else {
                    outage = true;
                    tracing::warn!(target: LOG, channel, %error, "cannot listen; polling until the listener is back");
                }
            }
        }
        let jitter = backoff.mul_f64(fastrand::f64() * 0.5);
        tokio::time::sleep(backoff + jitter).await;
        backoff = (backoff * 2).min(MAX_BACKOFF);
    }
}

/// How a probe went out.
enum Probed {
    /// Sent and committed: the LISTEN should hear it.
    Sent,
    /// The statement that sent it received the notification itself (sqlx fails it with an
    /// unexpected `NotificationResponse`): the LISTEN ran on a server connection that a pooler
    /// in transaction mode handed to the sender, so it hears nothing meant for it.
    CameBack,
    /// Not sent (the pool timed out, the server refused the write): nothing is known yet.
    Unsent(sqlx::Error),
}

/// Sends the probe `marker` on the probe channel of `channel`, through the queue's own pool.
async fn send_probe(probe: &Probe, channel: &str, marker: &str) -> Probed {
    let sent = crate::pinned::on_pool!(probe, |e| sqlx::query(probe.notify.clone())
        .persistent(!probe.pinned)
        .bind(probe_channel(channel))
        .bind(vec![marker.to_owned()])
        .execute(e));
    match sent {
        Ok(_) => Probed::Sent,
        // sqlx's wording is the only sign of it: the protocol error names the message.
        Err(sqlx::Error::Protocol(m)) if m.contains("NotificationResponse") => Probed::CameBack,
        Err(e) => Probed::Unsent(e),
    }
}

/// The notification channel of a schema. A channel name, like an identifier, has at most 63
/// bytes; a schema name too long for the suffix gets a hash instead, so schemas never share one.
pub(crate) fn channel_name(schema: &str) -> String {
    const SUFFIX: &str = "_queue_jobs";
    if schema.len() + SUFFIX.len() <= 63 {
        return format!("{schema}{SUFFIX}");
    }
    // FNV-1a: stable across builds and platforms, unlike std's hasher.
    let hash = schema.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    format!("{}_{hash:016x}", &schema[..63 - 17])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_channels_fit() {
        assert_eq!(probe_channel("queue_queue_jobs"), "queue_queue_jobs_probe");
        let long = channel_name(&"a".repeat(63));
        assert!(probe_channel(&long).len() <= 63);
    }

    #[test]
    fn channel_names_fit_and_differ() {
        assert_eq!(channel_name("queue"), "queue_queue_jobs");
        let a = channel_name(&"a".repeat(63));
        let b = channel_name(&format!("{}b", "a".repeat(62)));
        assert!(a.len() <= 63 && b.len() <= 63);
        assert_ne!(a, b);
    }
}

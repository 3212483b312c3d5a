//! Every value a statement binds is made here, as the SQL type its statement expects, and
//! [`MsSqlConnection`](crate::MsSqlConnection) takes nothing else: a statement's values are a
//! [`Params`], built only from [`Bind`] values.
//!
//! A NULL keeps the type of its column or comparison: `None` of a [`Bind`] type is that type's
//! NULL ([`Bind::null`]): an `nvarchar`, `varbinary`, `datetime2`, `bigint`, ... NULL, never the
//! untyped TDS NULL (type `0x1F`), which SQL Server accepts but other servers that speak TDS
//! refuse for the whole request. tiberius declares each parameter from its value
//! (`@P1 nvarchar(4000), @P2 varbinary(max), ...`) and writes the same type before the value,
//! for a NULL too (the workspace builds tiberius from `vendor/tiberius`, whose encoder does
//! that for every type; see `vendor/README.md`). The tests read the parameters back from the
//! bytes a session sends.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use queue_core::{JobId, WorkflowId};
use tiberius::{ColumnData, IntoSql};
use uuid::Uuid;

/// The values of one request, in placeholder order (`@P1..@Pn`).
#[derive(Debug, Default)]
pub(crate) struct Params<'a>(Vec<ColumnData<'a>>);

impl<'a> Params<'a> {
    /// No values, with room for `n`.
    pub(crate) fn with_capacity(n: usize) -> Self {
        Params(Vec::with_capacity(n))
    }

    /// Binds `value` to the next placeholder.
    pub(crate) fn push(&mut self, value: impl Bind<'a>) {
        self.0.push(value.bind());
    }

    /// Binds each of `values`, in order, to the next placeholders.
    pub(crate) fn extend<T: Bind<'a>>(&mut self, values: impl IntoIterator<Item = T>) {
        self.0.extend(values.into_iter().map(Bind::bind));
    }

    /// Appends the values of `more` after these.
    pub(crate) fn append(&mut self, more: Params<'a>) {
        self.0.extend(more.0);
    }

    /// How many placeholders are bound.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    /// The values, as tiberius sends them.
    pub(crate) fn into_values(self) -> Vec<ColumnData<'a>> {
        self.0
    }

    /// The values, for checks.
    #[cfg(test)]
    pub(crate) fn values(&self) -> &[ColumnData<'a>] {
        &self.0
    }
}

/// The [`Params`] of `values`, in order: `params![queue, limit, worker]`.
macro_rules! params {
    () => {
        $crate::bind::Params::default()
    };
    ($($value:expr),+ $(,)?) => {{
        let mut p = $crate::bind::Params::with_capacity(<[&str]>::len(&[$(stringify!($value)),+]));
        $(p.push($value);)+
        p
    }};
}
pub(crate) use params;

/// A value bound as one SQL type; `None` of it (`Option<T>`) is that type's NULL.
pub(crate) trait Bind<'a> {
    /// The value, as tiberius sends it.
    fn bind(self) -> ColumnData<'a>;

    /// A NULL of the same SQL type as [`bind`](Self::bind) gives.
    fn null() -> ColumnData<'a>;
}

impl<'a, T: Bind<'a>> Bind<'a> for Option<T> {
    fn bind(self) -> ColumnData<'a> {
        match self {
            Some(value) => value.bind(),
            None => T::null(),
        }
    }

    fn null() -> ColumnData<'a> {
        T::null()
    }
}

/// `nvarchar`: every text column is NVARCHAR (a varchar column would be converted and lose
/// its index seeks).
impl<'a> Bind<'a> for &'a str {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::String(Some(Cow::Borrowed(self)))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::String(None)
    }
}

/// `nvarchar`, owned.
impl<'a> Bind<'a> for String {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::String(Some(Cow::Owned(self)))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::String(None)
    }
}

/// `varbinary`: dedup keys (their UTF-8), row versions, ids.
impl<'a> Bind<'a> for &'a [u8] {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::Binary(Some(Cow::Borrowed(self)))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::Binary(None)
    }
}

/// `varbinary` of 16 bytes: a job id as stored in `BINARY(16)`, big-endian, so that byte order
/// is id order (UUID v7 ids append).
impl<'a> Bind<'a> for JobId {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::Binary(Some(Cow::Owned(self.0.as_bytes().to_vec())))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::Binary(None)
    }
}

/// `varbinary` of 16 bytes: a workflow id, stored as job ids are (`BINARY(16)`, big-endian).
impl<'a> Bind<'a> for WorkflowId {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::Binary(Some(Cow::Owned(self.0.as_bytes().to_vec())))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::Binary(None)
    }
}

/// `uniqueidentifier`: lease tokens (tiberius writes SQL Server's mixed-endian GUID bytes).
impl<'a> Bind<'a> for Uuid {
    fn bind(self) -> ColumnData<'a> {
        self.into_sql()
    }

    fn null() -> ColumnData<'a> {
        ColumnData::Guid(None)
    }
}

/// `datetime2` (7 digits; stored rounded to the column's 6).
impl<'a> Bind<'a> for DateTime<Utc> {
    fn bind(self) -> ColumnData<'a> {
        self.into_sql()
    }

    fn null() -> ColumnData<'a> {
        ColumnData::DateTime2(None)
    }
}

/// `int`: priorities, attempts, limits, DATEADD's seconds and microseconds.
impl<'a> Bind<'a> for i32 {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::I32(Some(self))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::I32(None)
    }
}

/// `bigint`: row counts (`TOP`), versions.
impl<'a> Bind<'a> for i64 {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::I64(Some(self))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::I64(None)
    }
}

/// `bit`.
impl<'a> Bind<'a> for bool {
    fn bind(self) -> ColumnData<'a> {
        ColumnData::Bit(Some(self))
    }

    fn null() -> ColumnData<'a> {
        ColumnData::Bit(None)
    }
}

#[cfg(test)]
mod tests {
    use chrono::TimeZone;

    use super::*;
    use crate::wire;

    #[test]
    fn none_is_the_null_of_its_own_type() {
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let id = JobId(Uuid::now_v7());
        let p = params![
            None::<&str>,
            Some("q"),
            None::<&[u8]>,
            Some(b"k".as_slice()),
            None::<JobId>,
            Some(id),
            None::<DateTime<Utc>>,
            Some(at),
            None::<i32>,
            None::<i64>,
            None::<bool>,
            None::<Uuid>,
            None::<String>,
            None::<WorkflowId>,
            Some(WorkflowId(id.0)),
        ];
        assert_eq!(p.len(), 15);
        let v = p.values();
        assert_eq!(v[0], ColumnData::String(None));
        assert_eq!(v[1], ColumnData::String(Some("q".into())));
        assert_eq!(v[2], ColumnData::Binary(None));
        assert_eq!(v[3], ColumnData::Binary(Some(b"k".as_slice().into())));
        assert_eq!(v[4], ColumnData::Binary(None));
        assert_eq!(
            v[5],
            ColumnData::Binary(Some(id.0.as_bytes().to_vec().into()))
        );
        assert_eq!(v[6], ColumnData::DateTime2(None));
        assert!(matches!(v[7], ColumnData::DateTime2(Some(_))));
        assert_eq!(v[8], ColumnData::I32(None));
        assert_eq!(v[9], ColumnData::I64(None));
        assert_eq!(v[10], ColumnData::Bit(None));
        assert_eq!(v[11], ColumnData::Guid(None));
        assert_eq!(v[12], ColumnData::String(None));
        // A workflow id is bound as a job id is.
        assert_eq!(v[13], ColumnData::Binary(None));
        assert_eq!(v[14], v[5]);
    }

    /// A value and a NULL of every type the statements bind, as a server receives them: each is
    /// sent with the type its parameter is declared as, and each NULL with the same type as the
    /// value beside it (never the untyped NULL, `0x1F`).
    #[tokio::test]
    async fn every_null_goes_out_with_its_type() {
        let at = Utc.timestamp_opt(1_800_000_000, 0).unwrap();
        let values = params![
            Some("q"),
            None::<&str>,
            Some(b"k".as_slice()),
            None::<&[u8]>,
            Some(JobId(Uuid::now_v7())),
            None::<JobId>,
            Some(at),
            None::<DateTime<Utc>>,
            Some(7i32),
            None::<i32>,
            Some(7i64),
            None::<i64>,
            Some(true),
            None::<bool>,
            Some(Uuid::new_v4()),
            None::<Uuid>,
        ];
        let sent = wire::sent(vec![("SELECT 1".into(), values)]).await;
        let sent = &sent[0];
        assert_eq!(sent.len(), 16);
        for (i, p) in sent.iter().enumerate() {
            assert_eq!(p.name, format!("@P{}", i + 1));
            assert_ne!(p.ty, 0x1F, "the untyped NULL: {p:?}");
            assert_eq!(Some((p.ty, p.size)), wire::wire_type(&p.declared), "{p:?}");
            assert_eq!(p.value.is_none(), i % 2 == 1, "{p:?}");
        }
        for pair in sent.chunks(2) {
            assert_eq!(pair[0].ty, pair[1].ty, "{pair:?}");
        }
        // A value's bytes arrive as bound.
        assert_eq!(sent[2].value.as_deref(), Some(b"k".as_slice()));
        assert_eq!(
            sent[8].value.as_deref(),
            Some(7i32.to_le_bytes().as_slice())
        );
    }

    #[test]
    fn params_keep_their_order() {
        let mut p = params![1i32, 2i64];
        p.extend(["a", "b"]);
        p.append(params![true]);
        assert_eq!(
            p.into_values(),
            vec![
                ColumnData::I32(Some(1)),
                ColumnData::I64(Some(2)),
                ColumnData::String(Some("a".into())),
                ColumnData::String(Some("b".into())),
                ColumnData::Bit(Some(true)),
            ]
        );
        assert_eq!(params![].len(), 0);
    }
}

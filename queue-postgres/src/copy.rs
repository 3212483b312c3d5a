//! The binary `COPY` format (`COPY ... FROM STDIN (FORMAT binary)`) of a batch of jobs, which
//! the driver streams for large batches due at once (`job_insert_copy`). Values are written in
//! their binary form, never as SQL text.

use queue_core::engine::micros;
use queue_core::NewJob;

use crate::driver::rows::signed;

/// The rows of `jobs` in PostgreSQL's binary COPY format, for the columns of `job_insert_copy`:
/// id uuid, queue text, payload json (its binary form is the text), priority int4,
/// max_attempts int4, dedup_key text, kind text, meta json, timeout_us int8, concurrency_key
/// text (each of the last five NULL when absent); with `workflow`, for those of
/// `job_insert_copy_workflow`, also state text and workflow_id uuid (NULL for a job pushed
/// alone).
pub(crate) fn copy_rows(jobs: &[NewJob], workflow: bool) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, bytes: &[u8]) {
        out.extend_from_slice(&(bytes.len() as i32).to_be_bytes());
        out.extend_from_slice(bytes);
    }
    fn optional(out: &mut Vec<u8>, bytes: Option<&[u8]>) {
        match bytes {
            Some(b) => field(out, b),
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    let size: usize = jobs
        .iter()
        .map(|j| {
            100 + j.queue().len()
                + j.payload_json().len()
                + j.dedup_key_value().map_or(0, str::len)
                + j.kind_value().map_or(0, str::len)
                + j.meta_json().map_or(0, str::len)
                + j.concurrency_key_value().map_or(0, str::len)
                + if workflow { 36 } else { 0 }
        })
        .sum();
    let mut out = Vec::with_capacity(19 + size + 2);
    out.extend_from_slice(b"PGCOPY\n\xff\r\n\0");
    out.extend_from_slice(&0i32.to_be_bytes()); // flags
    out.extend_from_slice(&0i32.to_be_bytes()); // header extension length
    let fields: i16 = if workflow { 12 } else { 10 };
    for job in jobs {
        out.extend_from_slice(&fields.to_be_bytes());
        field(&mut out, job.id().0.as_bytes());
        field(&mut out, job.queue().as_bytes());
        field(&mut out, job.payload_json().as_bytes());
        field(&mut out, &job.priority_value().to_be_bytes());
        field(&mut out, &signed(job.max_attempts_value()).to_be_bytes());
        optional(&mut out, job.dedup_key_value().map(str::as_bytes));
        optional(&mut out, job.kind_value().map(str::as_bytes));
        optional(&mut out, job.meta_json().map(str::as_bytes));
        let timeout = job.timeout_value().map(|t| micros(t).to_be_bytes());
        optional(&mut out, timeout.as_ref().map(|b| &b[..]));
        optional(&mut out, job.concurrency_key_value().map(str::as_bytes));
        if workflow {
            field(&mut out, job.initial_state().as_str().as_bytes());
            let id = job.workflow_id().map(|w| *w.0.as_bytes());
            optional(&mut out, id.as_ref().map(|b| &b[..]));
        }
    }
    out.extend_from_slice(&(-1i16).to_be_bytes());
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// The `(length, bytes)` fields of the one row of `data` (after the 19-byte header),
    /// `None` for NULL, and whether the trailer follows.
    fn one_row(data: &[u8]) -> (Vec<Option<Vec<u8>>>, bool) {
        let mut at = 19;
        let take = |at: &mut usize, n: usize| {
            let bytes = data[*at..*at + n].to_vec();
            *at += n;
            bytes
        };
        let fields = i16::from_be_bytes(take(&mut at, 2).try_into().unwrap());
        let mut out = Vec::new();
        for _ in 0..fields {
            let len = i32::from_be_bytes(take(&mut at, 4).try_into().unwrap());
            out.push((len >= 0).then(|| take(&mut at, len as usize)));
        }
        let trailer = data[at..] == (-1i16).to_be_bytes();
        (out, trailer)
    }

    #[test]
    fn a_row_is_its_fields_in_binary_form_with_nulls_for_absent_values() {
        let job = NewJob::new("q", &serde_json::json!({"a": 1}))
            .unwrap()
            .priority(-2)
            .max_attempts(7)
            .timeout(Duration::from_millis(1500));
        let data = copy_rows(std::slice::from_ref(&job), false);
        assert_eq!(&data[..11], b"PGCOPY\n\xff\r\n\0");
        assert_eq!(&data[11..19], &[0; 8]);
        let (fields, trailer) = one_row(&data);
        assert!(trailer);
        assert_eq!(fields.len(), 10);
        assert_eq!(fields[0].as_deref(), Some(&job.id().0.as_bytes()[..]));
        assert_eq!(fields[1].as_deref(), Some(&b"q"[..]));
        assert_eq!(fields[2].as_deref(), Some(job.payload_json().as_bytes()));
        assert_eq!(fields[3].as_deref(), Some(&(-2i32).to_be_bytes()[..]));
        assert_eq!(fields[4].as_deref(), Some(&7i32.to_be_bytes()[..]));
        // dedup key, kind, meta: absent.
        assert_eq!(&fields[5..8], &[None, None, None]);
        assert_eq!(fields[8].as_deref(), Some(&1_500_000i64.to_be_bytes()[..]));
        assert_eq!(fields[9], None);
        // Steps of a workflow carry their state and workflow (NULL for a job pushed alone).
        let (fields, trailer) = one_row(&copy_rows(std::slice::from_ref(&job), true));
        assert!(trailer);
        assert_eq!(fields.len(), 12);
        assert_eq!(fields[10].as_deref(), Some(&b"pending"[..]));
        assert_eq!(fields[11], None);
    }
}

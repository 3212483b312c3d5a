//! What a statement's values look like on the wire: a TDS server of a few lines on a local port
//! answers the login and every request with DONE, and keeps each RPC request it receives, whose
//! parameters are then read back (name, declared type, the TYPE_INFO written before the value,
//! and the value), and each batch's text. The requests are sent by the crate's own session code
//! (`open`, [`MsSqlConnection::execute`], the pool and the driver), so the checks see the bytes
//! a server would.

use tiberius::{AuthMethod, Config, EncryptionLevel};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::bind::Params;
use crate::pool::{open, MsSqlConnection};

/// One parameter of an RPC request, as sent.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Sent {
    /// `@P1`, ...
    pub(crate) name: String,
    /// Its type in the request's parameter declaration (`nvarchar(4000)`, `bigint`, ...).
    pub(crate) declared: String,
    /// The TDS type byte of its TYPE_INFO (`0xE7` nvarchar, `0xA5` varbinary, `0x1F` the
    /// untyped NULL, ...).
    pub(crate) ty: u8,
    /// The TYPE_INFO's size: the maximum length in bytes (`0xFFFF` for a `max` type), the
    /// length of a fixed-size type, or the scale of a time type; 0 for the untyped NULL.
    pub(crate) size: u32,
    /// The value's bytes; `None` for NULL.
    pub(crate) value: Option<Vec<u8>>,
}

/// The TDS type byte and TYPE_INFO size that a parameter declared as `declared` is sent with.
pub(crate) fn wire_type(declared: &str) -> Option<(u8, u32)> {
    Some(match declared {
        "nvarchar(4000)" => (0xE7, 8000),
        "nvarchar(max)" => (0xE7, 0xFFFF),
        "varbinary(8000)" => (0xA5, 8000),
        "varbinary(max)" => (0xA5, 0xFFFF),
        "datetime2" => (0x2A, 7),
        "int" => (0x26, 4),
        "bigint" => (0x26, 8),
        "bit" => (0x68, 1),
        "uniqueidentifier" => (0x24, 16),
        _ => return None,
    })
}

/// A request a session sent, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Request {
    /// A batch without bound values (session settings, transaction verbs): its text.
    Batch(String),
    /// An `sp_executesql` request: the statement and its parameters `@P1..@Pn`.
    Rpc(String, Vec<Sent>),
}

/// A server for one client on a local port, and the configuration that reaches it; the task
/// ends with the requests of that client when it disconnects.
pub(crate) async fn server() -> (Config, tokio::task::JoinHandle<Vec<Request>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = tokio::spawn(async move {
        let (stream, _) = listener.accept().await.unwrap();
        serve(stream).await
    });
    let mut config = Config::new();
    config.host("127.0.0.1");
    config.port(port);
    config.authentication(AuthMethod::sql_server("sa", "secret"));
    config.encryption(EncryptionLevel::NotSupported);
    (config, server)
}

/// Sends each statement with its values through a session of this crate, and returns the
/// parameters `@P1..@Pn` of each request as the server received them.
pub(crate) async fn sent(statements: Vec<(String, Params<'_>)>) -> Vec<Vec<Sent>> {
    let (config, server) = server().await;
    let mut conn = MsSqlConnection::new(open(&config).await.unwrap());
    for (sql, params) in statements {
        conn.execute(&sql, params).await.unwrap();
    }
    drop(conn);
    server
        .await
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Request::Rpc(_, params) => Some(params),
            Request::Batch(_) => None,
        })
        .collect()
}

/// Answers one client until it disconnects; returns every batch and RPC request.
async fn serve(mut stream: TcpStream) -> Vec<Request> {
    let mut requests = Vec::new();
    while let Some((ty, payload)) = message(&mut stream).await {
        let reply = match ty {
            // PRELOGIN: encryption not supported (option 1 at offset 6, one byte: 2).
            0x12 => vec![0x01, 0x00, 0x06, 0x00, 0x01, 0xFF, 0x02],
            // LOGIN7, a batch (the session settings) or an RPC: done, one row.
            0x10 | 0x01 | 0x03 => {
                match ty {
                    0x01 => requests.push(Request::Batch(batch_text(&payload))),
                    0x03 => {
                        let (statement, params) = rpc_params(&payload);
                        requests.push(Request::Rpc(statement, params));
                    }
                    _ => {}
                }
                let mut done = vec![0xFD, 0x10, 0x00, 0x00, 0x00];
                done.extend_from_slice(&1u64.to_le_bytes());
                done
            }
            other => panic!("unexpected TDS message type {other:#x}"),
        };
        let len = u16::try_from(reply.len() + 8).unwrap();
        let mut packet = vec![0x04, 0x01];
        packet.extend_from_slice(&len.to_be_bytes());
        packet.extend_from_slice(&[0, 0, 1, 0]);
        packet.extend_from_slice(&reply);
        stream.write_all(&packet).await.unwrap();
    }
    requests
}

/// The next message from the client (its packets joined), or `None` at the end.
async fn message(stream: &mut TcpStream) -> Option<(u8, Vec<u8>)> {
    let mut payload = Vec::new();
    loop {
        let mut header = [0u8; 8];
        stream.read_exact(&mut header).await.ok()?;
        let len = usize::from(u16::from_be_bytes([header[2], header[3]]));
        let mut body = vec![0u8; len - 8];
        stream.read_exact(&mut body).await.ok()?;
        payload.extend_from_slice(&body);
        if header[1] & 0x01 == 0x01 {
            return Some((header[0], payload));
        }
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> &[u8] {
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        out
    }

    fn u8(&mut self) -> u8 {
        self.take(1)[0]
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes(self.take(2).try_into().unwrap())
    }

    fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take(4).try_into().unwrap())
    }

    fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take(8).try_into().unwrap())
    }

    /// A length-prefixed value whose length is one byte (0: NULL).
    fn bytelen(&mut self) -> Option<Vec<u8>> {
        match self.u8() {
            0 => None,
            n => Some(self.take(usize::from(n)).to_vec()),
        }
    }

    /// A value of a variable-length type of maximum length `max` (PLP when `max` is 0xFFFF).
    fn varlen(&mut self, max: u16) -> Option<Vec<u8>> {
        if max != 0xFFFF {
            return match self.u16() {
                0xFFFF => None,
                n => Some(self.take(usize::from(n)).to_vec()),
            };
        }
        if self.u64() == u64::MAX {
            return None;
        }
        let mut out = Vec::new();
        loop {
            let chunk = self.u32() as usize;
            if chunk == 0 {
                return Some(out);
            }
            out.extend_from_slice(self.take(chunk));
        }
    }

    /// TYPE_INFO and value: the type byte, the TYPE_INFO's size, the value.
    fn typed(&mut self) -> (u8, u32, Option<Vec<u8>>) {
        let ty = self.u8();
        match ty {
            0x1F => (ty, 0, None),
            // INTN, BITN, GUIDN, FLTN, MONEYN, DATETIMN: maximum length, then the value.
            0x26 | 0x68 | 0x24 | 0x6D | 0x6E | 0x6F => {
                let size = u32::from(self.u8());
                (ty, size, self.bytelen())
            }
            // TIMEN, DATETIME2N, DATETIMEOFFSETN: scale, then the value.
            0x29..=0x2B => {
                let scale = u32::from(self.u8());
                (ty, scale, self.bytelen())
            }
            // DATEN
            0x28 => (ty, 3, self.bytelen()),
            // NUMERICN, DECIMALN: length, precision, scale, then the value.
            0x6C | 0x6A => {
                let size = u32::from(self.u8());
                self.take(2);
                (ty, size, self.bytelen())
            }
            // NVARCHAR, BIGVARCHAR, BIGCHAR, NCHAR: maximum length and collation.
            0xE7 | 0xA7 | 0xAF | 0xEF => {
                let max = self.u16();
                self.take(5);
                (ty, u32::from(max), self.varlen(max))
            }
            // BIGVARBINARY, BIGBINARY
            0xA5 | 0xAD => {
                let max = self.u16();
                (ty, u32::from(max), self.varlen(max))
            }
            // XML without a schema: always PLP.
            0xF1 => {
                assert_eq!(self.u8(), 0, "an XML schema");
                (ty, 0xFFFF, self.varlen(0xFFFF))
            }
            other => panic!("TDS type {other:#x} is not read here"),
        }
    }
}

fn utf16(bytes: &[u8]) -> String {
    let units: Vec<u16> = bytes
        .chunks(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    String::from_utf16(&units).unwrap()
}

/// The text of a SQL batch: ALL_HEADERS (its length counts itself), then UTF-16.
fn batch_text(payload: &[u8]) -> String {
    let headers = u32::from_le_bytes(payload[..4].try_into().unwrap()) as usize;
    utf16(&payload[headers..])
}

/// The statement of an `sp_executesql` RPC request and its parameters `@P1..@Pn`, with their
/// declared types.
fn rpc_params(payload: &[u8]) -> (String, Vec<Sent>) {
    let mut r = Reader {
        bytes: payload,
        at: 0,
    };
    // ALL_HEADERS (its length counts itself), then the procedure: by id, 10 = sp_executesql.
    let headers = r.u32() as usize;
    r.take(headers - 4);
    assert_eq!((r.u16(), r.u16()), (0xFFFF, 10), "not sp_executesql");
    r.u16();
    let mut raw = Vec::new();
    while r.at < payload.len() {
        let name_len = usize::from(r.u8());
        let name = utf16(r.take(2 * name_len));
        let _status = r.u8();
        let (ty, size, value) = r.typed();
        raw.push((name, ty, size, value));
    }
    // The statement, the declaration (`@P1 nvarchar(4000),@P2 bigint`), then the values.
    let statement = raw
        .first()
        .and_then(|(_, _, _, v)| v.as_deref())
        .map(utf16)
        .unwrap_or_default();
    let declaration = raw
        .get(1)
        .and_then(|(_, _, _, v)| v.as_deref())
        .map(utf16)
        .unwrap_or_default();
    let declared: Vec<String> = declaration
        .split(",@")
        .filter(|d| !d.is_empty())
        .map(|d| d.split_once(' ').map_or("", |(_, t)| t).to_owned())
        .collect();
    let params = raw
        .into_iter()
        .skip(2)
        .zip(declared)
        .map(|((name, ty, size, value), declared)| Sent {
            name,
            declared,
            ty,
            size,
            value,
        })
        .collect();
    (statement, params)
}

//! What a connection string says: `mssql://` and `sqlserver://` URLs, the JDBC-like
//! `sqlserver://host:port;key=value` form, and ADO.NET connection strings
//! (`Server=tcp:host,1433;Database=...`), turned into a tiberius [`Config`]; and
//! [`redact`], which takes the password out of any of them for errors and logs.

use std::fmt;

use queue_core::validate::redact_url;
use queue_core::{Error, Result};
use tiberius::{AuthMethod, Config, EncryptionLevel};

/// The default TCP port of SQL Server.
pub const DEFAULT_PORT: u16 = 1433;

/// Whether `s` is an ADO.NET connection string (`Server=...;...`) rather than a URL: no scheme,
/// and a `Server`, `Data Source`, `Address`, `Addr` or `Network Address` key.
pub fn is_connection_string(s: &str) -> bool {
    !s.contains("://")
        && s.split(';').any(|pair| {
            pair.split_once('=').is_some_and(|(key, _)| {
                matches!(
                    key.trim().to_ascii_lowercase().as_str(),
                    "server" | "data source" | "address" | "addr" | "network address"
                )
            })
        })
}

/// `s` with every password taken out: the user info of a URL, and the value of every
/// `password` / `pwd` key of a connection string or query (quoted values included), each
/// replaced by `***`. For every message and log line that shows a connection string.
pub fn redact(s: &str) -> String {
    // A URL's options are separated by `&` after a `?`; a connection string's pairs by `;`.
    let url = s.contains("://") && !s.contains(';');
    let seps: &[char] = if url { &['?', '&'] } else { &[';'] };
    let s = if s.contains("://") {
        redact_url(s)
    } else {
        s.to_owned()
    };
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut pair_start = !url;
    while i < s.len() {
        let rest = &s[i..];
        if pair_start {
            // A key runs to the next '=' unless a separator comes first.
            let eq = rest.find('=').filter(|&k| !rest[..k].contains(seps));
            if let Some(eq) = eq {
                let key = rest[..eq].trim().to_ascii_lowercase();
                if matches!(key.as_str(), "password" | "pwd") {
                    out.push_str(&rest[..=eq]);
                    out.push_str("***");
                    i += eq + 1 + value_len(&rest[eq + 1..], seps);
                    pair_start = false;
                    continue;
                }
            }
        }
        let c = rest.chars().next().unwrap_or(' ');
        out.push(c);
        pair_start = seps.contains(&c);
        i += c.len_utf8();
    }
    out
}

/// The length of a value at the start of `s`: up to the next separator, or to the end of a
/// quoted (`'...'`, `"..."`, doubled quotes inside) or braced (`{...}`) value.
fn value_len(s: &str, seps: &[char]) -> usize {
    let lead = s.len() - s.trim_start().len();
    let t = &s[lead..];
    let quoted = match t.chars().next() {
        Some(q @ ('\'' | '"')) => {
            let mut end = None;
            let mut chars = t.char_indices().skip(1).peekable();
            while let Some((k, c)) = chars.next() {
                if c == q {
                    if chars.peek().map(|&(_, n)| n) == Some(q) {
                        chars.next();
                        continue;
                    }
                    end = Some(k + 1);
                    break;
                }
            }
            Some(end.unwrap_or(t.len()))
        }
        Some('{') => Some(t.find('}').map_or(t.len(), |k| k + 1)),
        _ => None,
    };
    match quoted {
        Some(n) => lead + n,
        None => s.find(seps).unwrap_or(s.len()),
    }
}

/// How the connection is encrypted (URL key `encrypt`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encrypt {
    /// TLS for the whole session, or no connection (`true`, `required`; the default).
    Required,
    /// TLS when the server offers it (`on`, `optional`).
    On,
    /// TLS for the login only (`false`, `off`).
    Off,
    /// No TLS at all, not even for the login (`danger_plaintext`).
    NotSupported,
}

impl Encrypt {
    fn level(self) -> EncryptionLevel {
        match self {
            Encrypt::Required => EncryptionLevel::Required,
            Encrypt::On => EncryptionLevel::On,
            Encrypt::Off => EncryptionLevel::Off,
            Encrypt::NotSupported => EncryptionLevel::NotSupported,
        }
    }
}

/// A `mssql://` or `sqlserver://` URL, taken apart.
#[derive(Clone, PartialEq, Eq)]
pub struct UrlParts {
    /// Host name or address (IPv6 without brackets).
    pub host: String,
    /// TCP port, when given.
    pub port: Option<u16>,
    /// Named instance (`host\INSTANCE`), found through SQL Browser.
    pub instance: Option<String>,
    /// Database (the URL's path), else the login's default.
    pub database: Option<String>,
    /// SQL Server login.
    pub user: Option<String>,
    /// Its password (percent-decoded).
    pub password: Option<String>,
    /// `encrypt`.
    pub encrypt: Encrypt,
    /// `trust_server_certificate`: accept any server certificate (development only).
    pub trust_server_certificate: bool,
    /// `trust_server_certificate_ca`: a CA file (PEM or DER) to trust in addition.
    pub trust_server_certificate_ca: Option<String>,
    /// `application_name`.
    pub application_name: Option<String>,
}

impl fmt::Debug for UrlParts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UrlParts")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("instance", &self.instance)
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("encrypt", &self.encrypt)
            .field("trust_server_certificate", &self.trust_server_certificate)
            .field(
                "trust_server_certificate_ca",
                &self.trust_server_certificate_ca,
            )
            .field("application_name", &self.application_name)
            .finish()
    }
}

/// `url` for an error message: the password taken out, and every option's value too (a
/// mistyped `password` key must not carry its value into the message).
fn shown(url: &str) -> String {
    let redacted = redact(url);
    match redacted.split_once('?') {
        Some((head, query)) => {
            let keys: Vec<&str> = query
                .split('&')
                .map(|pair| pair.split_once('=').map_or(pair, |(k, _)| k))
                .collect();
            format!("{head}?{}", keys.join("=...&") + "=...")
        }
        None => redacted,
    }
}

fn bad_url(url: &str, why: impl fmt::Display) -> Error {
    Error::invalid("url", format!("{why} (in {})", shown(url)))
}

fn decode(part: &str, what: &str, url: &str) -> Result<String> {
    let bytes = part.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = part
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad_url(url, format!("the {what} has a bad %-escape")))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| bad_url(url, format!("the {what} is not UTF-8")))
}

fn flag(value: &str, key: &str, url: &str) -> Result<bool> {
    match value.to_ascii_lowercase().as_str() {
        "true" | "yes" | "1" => Ok(true),
        "false" | "no" | "0" => Ok(false),
        _ => Err(bad_url(url, format!("{key} must be true or false"))),
    }
}

impl UrlParts {
    /// Parses `mssql://[user[:password]@]host[\instance][:port][/database][?key=value&...]`
    /// (also `sqlserver://`). Keys: `encrypt` (`true`/`required`, `on`, `false`/`off`,
    /// `danger_plaintext`), `trust_server_certificate`, `trust_server_certificate_ca`,
    /// `application_name`; an unknown key is refused rather than ignored.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] on `url`, naming what is wrong, without the password.
    pub fn parse(url: &str) -> Result<UrlParts> {
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| bad_url(url, "must start with mssql:// or sqlserver://"))?;
        if !matches!(scheme.to_ascii_lowercase().as_str(), "mssql" | "sqlserver") {
            return Err(bad_url(url, "must start with mssql:// or sqlserver://"));
        }
        let (main, query) = match rest.split_once('?') {
            Some((m, q)) => (m, Some(q)),
            None => (rest, None),
        };
        let (authority, path) = match main.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (main, None),
        };
        let (userinfo, hostport) = match authority.rsplit_once('@') {
            Some((u, h)) => (Some(u), h),
            None => (None, authority),
        };
        let (user, password) = match userinfo {
            None => (None, None),
            Some(u) => match u.split_once(':') {
                Some((name, pw)) => (
                    Some(decode(name, "user", url)?),
                    Some(decode(pw, "password", url)?),
                ),
                None => (Some(decode(u, "user", url)?), None),
            },
        };
        let (host, port) = split_host_port(hostport, url)?;
        let host = decode(&host, "host", url)?;
        let (host, instance) = match host.split_once('\\') {
            Some((h, i)) if !i.is_empty() => (h.to_owned(), Some(i.to_owned())),
            Some(_) => return Err(bad_url(url, "the instance name after \\ is empty")),
            None => (host, None),
        };
        if host.is_empty() {
            return Err(bad_url(url, "names no host"));
        }
        let database = match path.map(|p| p.trim_end_matches('/')) {
            None | Some("") => None,
            Some(p) if p.contains('/') => {
                return Err(bad_url(url, "the path must be one database name"))
            }
            Some(p) => Some(decode(p, "database", url)?),
        };
        let mut parts = UrlParts {
            host,
            port,
            instance,
            database,
            user: user.filter(|u| !u.is_empty()),
            password,
            encrypt: Encrypt::Required,
            trust_server_certificate: false,
            trust_server_certificate_ca: None,
            application_name: None,
        };
        for pair in query
            .unwrap_or_default()
            .split('&')
            .filter(|p| !p.is_empty())
        {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let value = decode(value, "query", url)?;
            match key.to_ascii_lowercase().replace('-', "_").as_str() {
                "encrypt" => {
                    parts.encrypt = match value.to_ascii_lowercase().as_str() {
                        "true" | "yes" | "required" | "mandatory" => Encrypt::Required,
                        "on" | "optional" => Encrypt::On,
                        "false" | "no" | "off" => Encrypt::Off,
                        "danger_plaintext" => Encrypt::NotSupported,
                        _ => {
                            return Err(bad_url(
                                url,
                                "encrypt must be true, on, false or danger_plaintext",
                            ))
                        }
                    }
                }
                "trust_server_certificate" | "trustservercertificate" => {
                    parts.trust_server_certificate = flag(&value, "trust_server_certificate", url)?
                }
                "trust_server_certificate_ca" | "trustservercertificateca" => {
                    parts.trust_server_certificate_ca = Some(value)
                }
                "application_name" | "applicationname" => parts.application_name = Some(value),
                other => {
                    let shown: String = other
                        .chars()
                        .filter(|c| c.is_ascii_alphanumeric() || *c == '_')
                        .take(40)
                        .collect();
                    return Err(bad_url(
                        url,
                        format!(
                            "has the unknown option {shown:?} (known: encrypt, \
                             trust_server_certificate, trust_server_certificate_ca, \
                             application_name)"
                        ),
                    ));
                }
            }
        }
        if parts.trust_server_certificate && parts.trust_server_certificate_ca.is_some() {
            return Err(bad_url(
                url,
                "trust_server_certificate and trust_server_certificate_ca exclude each other",
            ));
        }
        Ok(parts)
    }

    /// The tiberius configuration.
    pub fn config(&self) -> Config {
        let mut c = Config::new();
        c.host(&self.host);
        if let Some(port) = self.port {
            c.port(port);
        } else if self.instance.is_none() {
            c.port(DEFAULT_PORT);
        }
        if let Some(instance) = &self.instance {
            c.instance_name(instance);
        }
        if let Some(db) = &self.database {
            c.database(db);
        }
        if let Some(user) = &self.user {
            c.authentication(AuthMethod::sql_server(
                user,
                self.password.as_deref().unwrap_or_default(),
            ));
        }
        c.encryption(self.encrypt.level());
        if self.trust_server_certificate {
            c.trust_cert();
        }
        if let Some(ca) = &self.trust_server_certificate_ca {
            c.trust_cert_ca(ca);
        }
        c.application_name(self.application_name.as_deref().unwrap_or("queue"));
        c
    }
}

fn split_host_port(hostport: &str, url: &str) -> Result<(String, Option<u16>)> {
    let port = |p: &str| {
        p.parse::<u16>()
            .ok()
            .filter(|&p| p != 0)
            .ok_or_else(|| bad_url(url, "the port must be a number from 1 to 65535"))
    };
    if let Some(v6) = hostport.strip_prefix('[') {
        let (host, after) = v6
            .split_once(']')
            .ok_or_else(|| bad_url(url, "an IPv6 address lacks its closing ]"))?;
        return match after.strip_prefix(':') {
            Some(p) => Ok((host.to_owned(), Some(port(p)?))),
            None if after.is_empty() => Ok((host.to_owned(), None)),
            None => Err(bad_url(url, "unexpected text after the IPv6 address")),
        };
    }
    match hostport.rsplit_once(':') {
        Some((host, p)) => Ok((host.to_owned(), Some(port(p)?))),
        None => Ok((hostport.to_owned(), None)),
    }
}

/// A connection string, understood: the tiberius configuration, the address to name in
/// errors, and whether it names a database.
#[derive(Clone)]
pub(crate) struct Target {
    pub(crate) config: Config,
    /// `host:port`, or `host\instance`.
    pub(crate) address: String,
    /// Whether the string names a named instance (needs SQL Browser).
    pub(crate) instance: bool,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Target")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

impl Target {
    /// Any form [`crate::MsSqlQueue::builder`] accepts.
    pub(crate) fn parse(s: &str) -> Result<Target> {
        let s = s.trim();
        if s.is_empty() {
            return Err(Error::invalid("url", "must not be empty"));
        }
        if is_connection_string(s) {
            let config = Config::from_ado_string(s).map_err(|_| {
                Error::invalid(
                    "url",
                    format!(
                        "is not a valid ADO.NET connection string (quote values holding ; or = \
                         with '...', and give the server as tcp:host,port): {}",
                        redact(s)
                    ),
                )
            })?;
            let instance = ado_names_instance(s);
            return Ok(Target {
                address: config.get_addr(),
                config,
                instance,
            });
        }
        let (_, rest) = s.split_once("://").unwrap_or(("", s));
        let authority = rest.split(['?', '/']).next().unwrap_or_default();
        if authority.contains(';') || rest.split('?').next().unwrap_or_default().contains(';') {
            // sqlserver://host:1433;database=db;user=sa;password=... (JDBC's form).
            let config =
                Config::from_jdbc_string(&format!("jdbc:sqlserver://{rest}")).map_err(|_| {
                    Error::invalid(
                        "url",
                        format!(
                            "is not a valid sqlserver://host:port;key=value string (wrap values \
                             holding ; or = in {{...}}): {}",
                            redact(s)
                        ),
                    )
                })?;
            let instance = authority
                .split(';')
                .next()
                .unwrap_or_default()
                .contains('\\');
            return Ok(Target {
                address: config.get_addr(),
                config,
                instance,
            });
        }
        let parts = UrlParts::parse(s)?;
        let address = match (&parts.instance, parts.port) {
            (Some(i), None) => format!("{}\\{i}", parts.host),
            _ => format!("{}:{}", parts.host, parts.port.unwrap_or(DEFAULT_PORT)),
        };
        Ok(Target {
            config: parts.config(),
            address,
            instance: parts.instance.is_some(),
        })
    }
}

/// Whether an ADO.NET string's server names an instance (`host\INSTANCE`).
fn ado_names_instance(s: &str) -> bool {
    s.split(';').any(|pair| {
        pair.split_once('=').is_some_and(|(k, v)| {
            matches!(
                k.trim().to_ascii_lowercase().as_str(),
                "server" | "data source" | "address" | "addr" | "network address"
            ) && v.contains('\\')
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_and_rule(e: Error) -> (String, String) {
        match e {
            Error::InvalidInput { field, rule } => (field, rule),
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn urls_are_taken_apart() {
        let p = UrlParts::parse(
            "mssql://sa:p%40ss%3Aw0rd@db.example.com:14330/jobs?encrypt=true&trust_server_certificate=true",
        )
        .unwrap();
        assert_eq!(p.host, "db.example.com");
        assert_eq!(p.port, Some(14330));
        assert_eq!(p.database.as_deref(), Some("jobs"));
        assert_eq!(p.user.as_deref(), Some("sa"));
        assert_eq!(p.password.as_deref(), Some("p@ss:w0rd"));
        assert_eq!(p.encrypt, Encrypt::Required);
        assert!(p.trust_server_certificate);
        assert!(!format!("{p:?}").contains("w0rd"), "{p:?}");

        let p = UrlParts::parse("sqlserver://localhost").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("localhost", None));
        assert_eq!((p.user, p.password, p.database), (None, None, None));
        assert_eq!(
            p.encrypt,
            Encrypt::Required,
            "encrypted unless told otherwise"
        );
        assert!(!p.trust_server_certificate);

        let p =
            UrlParts::parse("MSSQL://u@[::1]:1433/db/?encrypt=off&application_name=svc").unwrap();
        assert_eq!((p.host.as_str(), p.port), ("::1", Some(1433)));
        assert_eq!(p.database.as_deref(), Some("db"));
        assert_eq!(p.encrypt, Encrypt::Off);
        assert_eq!(p.application_name.as_deref(), Some("svc"));

        let p =
            UrlParts::parse("mssql://sa:pw@host%5CSQLEXPRESS/db?encrypt=danger_plaintext").unwrap();
        assert_eq!(p.host, "host");
        assert_eq!(p.instance.as_deref(), Some("SQLEXPRESS"));
        assert_eq!(p.encrypt, Encrypt::NotSupported);
    }

    #[test]
    fn bad_urls_name_the_problem_without_the_password() {
        for (url, needle) in [
            ("mssql://sa:hunter2@host:0/db", "port"),
            ("mssql://sa:hunter2@host:abc/db", "port"),
            ("mssql://sa:hunter2@/db", "no host"),
            ("mssql://sa:hunter2@host/a/b", "one database"),
            ("mssql://sa:hunter2@host/db?encrypt=maybe", "encrypt"),
            (
                "mssql://sa:hunter2@host/db?trust_server_certificate=si",
                "true or false",
            ),
            (
                "mssql://sa:hunter2@host/db?pasword=hunter2",
                "unknown option",
            ),
            (
                "mssql://sa:hunter2@host/db?password=hunter2",
                "unknown option",
            ),
            ("mssql://sa:hunter2@[::1/db", "closing ]"),
            ("mssql://sa:hunter2%zz@host/db", "%-escape"),
            ("postgres://sa:hunter2@host/db", "mssql://"),
        ] {
            let (field, rule) = field_and_rule(UrlParts::parse(url).unwrap_err());
            assert_eq!(field, "url");
            assert!(rule.contains(needle), "{url}: {rule}");
            assert!(!rule.contains("hunter2"), "{url}: {rule}");
        }
    }

    #[test]
    fn targets_from_every_form() {
        let t = Target::parse("mssql://sa:pw@10.0.0.5/db").unwrap();
        assert_eq!(t.address, "10.0.0.5:1433");
        assert_eq!(t.config.get_addr(), "10.0.0.5:1433");
        assert!(!t.instance);

        let t = Target::parse(
            "Server=tcp:sql.example.com,1444;Database=jobs;User Id=sa;Password='p;w=1';TrustServerCertificate=true",
        )
        .unwrap();
        assert_eq!(t.address, "sql.example.com:1444");
        assert!(!format!("{t:?} {:?}", t.config).contains("p;w=1"));

        let t = Target::parse("sqlserver://sql.example.com:1555;database=jobs;user=sa;password=pw")
            .unwrap();
        assert_eq!(t.address, "sql.example.com:1555");

        let t = Target::parse("mssql://sa:pw@host\\INST/db").unwrap();
        assert!(t.instance);
        assert_eq!(t.address, "host\\INST");

        let (field, rule) = field_and_rule(
            Target::parse("Server=tcp:h,1433;Password='unterminated;hunter2").unwrap_err(),
        );
        assert_eq!(field, "url");
        assert!(!rule.contains("hunter2"), "{rule}");
        assert!(Target::parse("  ").is_err());
    }

    #[test]
    fn connection_strings_are_told_from_urls() {
        assert!(is_connection_string("Server=tcp:h,1433;Database=d"));
        assert!(is_connection_string("data source=h;initial catalog=d"));
        assert!(!is_connection_string("mssql://h/db"));
        assert!(!is_connection_string("sqlserver://h:1433;database=d"));
        assert!(!is_connection_string("jobs.db"));
        assert!(!is_connection_string("Database=d;User Id=sa"));
    }

    #[test]
    fn passwords_are_redacted_everywhere() {
        for (input, secret) in [
            ("mssql://sa:hunter2@host:1433/db", "hunter2"),
            (
                "sqlserver://host:1433;database=d;user=sa;password=hunter2;encrypt=true",
                "hunter2",
            ),
            ("Server=h;User Id=sa;Password=hunter2;Database=d", "hunter2"),
            ("Server=h;PWD = hunter2", "hunter2"),
            ("Server=h;Password='hun;ter2';Database=d", "ter2"),
            ("Server=h;Password=\"a\"\"b;hunter2\";Database=d", "hunter2"),
            ("Server=h;password={x;hunter2}", "hunter2"),
            ("mssql://host/db?user=sa&password=hunter2", "hunter2"),
        ] {
            let shown = redact(input);
            assert!(!shown.contains(secret), "{input} -> {shown}");
            assert!(shown.contains("***"), "{input} -> {shown}");
        }
        assert_eq!(
            redact("Server=h;Password='a;b';Database=d"),
            "Server=h;Password=***;Database=d"
        );
        assert_eq!(redact("mssql://host/db"), "mssql://host/db");
        assert_eq!(
            shown("mssql://sa:pw@h/db?pasword=pw&encrypt=off"),
            "mssql://sa:***@h/db?pasword=...&encrypt=..."
        );
        assert_eq!(redact("Server=h;Database=pwd"), "Server=h;Database=pwd");
    }
}

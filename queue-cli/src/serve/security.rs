//! The dashboard's security model, applied to every request by `guard`:
//!
//! - Host: when bound to loopback, only requests whose `Host` is a loopback name are answered,
//!   so a web page cannot reach the dashboard through a DNS name it rebinds to 127.0.0.1.
//! - Token: when one is set, every page needs it, given once at `/login` (which sets an
//!   HttpOnly, SameSite=Strict session cookie) or with each request as `Authorization: Bearer`.
//! - CSRF: every POST must come from the dashboard's own pages: its `Origin` and
//!   `Sec-Fetch-Site` headers, when the browser sends them, must name the dashboard itself, and
//!   its form must carry the CSRF token that the dashboard set as a SameSite=Strict cookie.
//!   Requests authenticated by an `Authorization` header (which a browser never adds on its own
//!   to a cross-site request) need no form token.
//! - Read-only: every POST but login and logout is refused.
//! - Headers: a Content-Security-Policy that allows only the dashboard's own script and style
//!   files (no inline script, no other origin), no framing, no sniffing, no referrer sent to
//!   other sites.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{FromRequest, Request, State};
use axum::http::header::{self, HeaderMap, HeaderName, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Form;
use serde::de::DeserializeOwned;

use super::app::Dashboard;
use super::views;

/// The policy every response carries.
pub(crate) const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
     style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; \
     frame-ancestors 'none'; base-uri 'none'";

/// How long a login lasts.
const SESSION_TTL: Duration = Duration::from_secs(12 * 3600);

/// Most sessions kept at once; the oldest is dropped beyond it.
const MAX_SESSIONS: usize = 1024;

/// Which `Host` headers are answered.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HostPolicy {
    /// Only loopback names (`127.0.0.1`, `localhost`, `[::1]`, with any port): the default when
    /// the dashboard listens on a loopback address.
    Loopback,
    /// Any host (the dashboard listens on another address and a token is required).
    Any,
}

/// How a request proved who it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Auth {
    /// No token is configured: everyone who can reach the dashboard may use it.
    Open,
    /// `Authorization: Bearer` with the right token.
    Bearer,
    /// A session cookie from `/login`.
    Session,
}

/// The CSRF token of the request's browser, which its forms must carry back.
#[derive(Clone, Debug)]
pub(crate) struct Csrf(pub(crate) String);

/// 244 random bits from the operating system, as 64 hex digits.
pub(crate) fn random_token() -> String {
    format!(
        "{}{}",
        uuid::Uuid::new_v4().simple(),
        uuid::Uuid::new_v4().simple()
    )
}

/// Compares two secrets in time that depends only on their lengths.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The value of cookie `name`, if the request has it.
pub(crate) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// The logins in force, by session id.
#[derive(Debug, Default)]
pub(crate) struct Sessions {
    by_id: Mutex<HashMap<String, Instant>>,
}

impl Sessions {
    /// Opens a session and returns its id.
    pub(crate) fn open(&self) -> String {
        let id = random_token();
        let now = Instant::now();
        let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        map.retain(|_, opened| now.duration_since(*opened) < SESSION_TTL);
        if map.len() >= MAX_SESSIONS {
            if let Some(oldest) = map.iter().min_by_key(|(_, t)| **t).map(|(k, _)| k.clone()) {
                map.remove(&oldest);
            }
        }
        map.insert(id.clone(), now);
        id
    }

    /// Whether `id` is a session in force.
    pub(crate) fn is_open(&self, id: &str) -> bool {
        let map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        map.iter()
            .any(|(k, opened)| same_secret(k, id) && opened.elapsed() < SESSION_TTL)
    }

    /// Ends the session `id`.
    pub(crate) fn close(&self, id: &str) {
        let mut map = self.by_id.lock().unwrap_or_else(|e| e.into_inner());
        map.remove(id);
    }
}

/// Whether `headers` name a host this dashboard answers to.
fn host_allowed(headers: &HeaderMap, policy: &HostPolicy) -> bool {
    match policy {
        HostPolicy::Any => true,
        HostPolicy::Loopback => {
            let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
                return false;
            };
            let name = if let Some(rest) = host.strip_prefix('[') {
                rest.split(']').next().unwrap_or_default()
            } else {
                host.rsplit_once(':').map_or(host, |(name, _)| name)
            };
            let name = name.to_ascii_lowercase();
            name == "localhost"
                || name == "::1"
                || name
                    .parse::<std::net::Ipv4Addr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
    }
}

/// Whether a POST comes from somewhere other than the dashboard's own pages, judging by the
/// headers browsers add: `Sec-Fetch-Site` where the browser sends it (every current one does),
/// else `Origin`, which must name the host the request was sent to. A request with neither
/// (curl, scripts) is not a browser's cross-site request.
fn cross_site(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return !matches!(site.to_str(), Ok("same-origin" | "none"));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        let origin_host = origin
            .to_str()
            .ok()
            .and_then(|o| o.split_once("://"))
            .map(|(_, rest)| rest.trim_end_matches('/'));
        return match (origin_host, host) {
            (Some(o), Some(h)) => !o.eq_ignore_ascii_case(h),
            _ => true,
        };
    }
    false
}

/// How the request authenticates, `Ok(None)` when it presents nothing, `Err` when it presents a
/// wrong token.
fn authenticate(app: &Dashboard, headers: &HeaderMap) -> Result<Option<Auth>, ()> {
    let Some(token) = app.config.auth_token.as_deref() else {
        return Ok(Some(Auth::Open));
    };
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let presented = value
            .to_str()
            .ok()
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::trim);
        return match presented {
            Some(p) if same_secret(p, token) => Ok(Some(Auth::Bearer)),
            _ => Err(()),
        };
    }
    if let Some(id) = cookie(headers, &app.session_cookie()) {
        if app.sessions.is_open(id) {
            return Ok(Some(Auth::Session));
        }
    }
    Ok(None)
}

/// A `Set-Cookie` value for a cookie only this dashboard's pages send back.
pub(crate) fn set_cookie(name: &str, value: &str, max_age: Option<u64>) -> HeaderValue {
    let age = max_age
        .map(|s| format!("; Max-Age={s}"))
        .unwrap_or_default();
    HeaderValue::from_str(&format!(
        "{name}={value}; Path=/; HttpOnly; SameSite=Strict{age}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("invalid=1; Max-Age=0"))
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        text,
    )
        .into_response()
}

/// Applies the security model to every request; see the module documentation.
pub(crate) async fn guard(State(app): State<Arc<Dashboard>>, req: Request, next: Next) -> Response {
    let mut response = check_then_run(&app, req, next).await;
    let headers = response.headers_mut();
    let fixed: [(HeaderName, &'static str); 6] = [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // Not `no-referrer`: under it browsers send `Origin: null` with the dashboard's own
        // forms. `same-origin` still sends nothing to other sites.
        (header::REFERRER_POLICY, "same-origin"),
        (
            HeaderName::from_static("cross-origin-opener-policy"),
            "same-origin",
        ),
        (
            HeaderName::from_static("cross-origin-resource-policy"),
            "same-origin",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

async fn check_then_run(app: &Arc<Dashboard>, mut req: Request, next: Next) -> Response {
    if !host_allowed(req.headers(), &app.config.hosts) {
        return plain(
            StatusCode::FORBIDDEN,
            "this dashboard answers only to loopback host names (127.0.0.1, localhost, [::1])\n",
        );
    }
    let path = req.uri().path().to_owned();
    let csrf_name = app.csrf_cookie();
    let (csrf, new_csrf) = match cookie(req.headers(), &csrf_name) {
        Some(v) if v.len() == 64 && v.bytes().all(|b| b.is_ascii_hexdigit()) => {
            (v.to_owned(), false)
        }
        _ => (random_token(), true),
    };
    req.extensions_mut().insert(Csrf(csrf.clone()));

    let public = path.starts_with("/static/") || path == "/login";
    let auth = match authenticate(app, req.headers()) {
        Ok(auth) => auth,
        Err(()) => {
            return unauthorized(app, &req, &csrf, new_csrf, "The token is wrong.");
        }
    };
    match auth {
        Some(auth) => {
            req.extensions_mut().insert(auth);
        }
        None if public => {}
        None => return unauthorized(app, &req, &csrf, new_csrf, ""),
    }

    if req.method() == Method::POST {
        if cross_site(req.headers()) {
            return plain(
                StatusCode::FORBIDDEN,
                "refused: this form was not sent from the dashboard's own pages\n",
            );
        }
        if app.config.read_only && path != "/login" && path != "/logout" {
            return plain(
                StatusCode::FORBIDDEN,
                "refused: the dashboard is read-only (started with --read-only)\n",
            );
        }
    }

    let mut response = next.run(req).await;
    if new_csrf {
        response
            .headers_mut()
            .append(header::SET_COOKIE, set_cookie(&csrf_name, &csrf, None));
    }
    response
}

/// 401: the login form for a page, a short text for anything else.
fn unauthorized(
    app: &Dashboard,
    req: &Request,
    csrf: &str,
    new_csrf: bool,
    problem: &str,
) -> Response {
    let wants_page = req.method() == Method::GET
        && !req.uri().path().starts_with("/fragment/")
        && req.headers().get(header::AUTHORIZATION).is_none();
    let mut response = if wants_page {
        let next = req
            .uri()
            .path_and_query()
            .map(|p| p.as_str().to_owned())
            .unwrap_or_else(|| "/".to_owned());
        views::login_page(app, csrf, &next, problem, StatusCode::UNAUTHORIZED)
    } else {
        plain(
            StatusCode::UNAUTHORIZED,
            "unauthorized: log in at /login or send Authorization: Bearer <token>\n",
        )
    };
    let headers = response.headers_mut();
    headers.insert(
        header::WWW_AUTHENTICATE,
        HeaderValue::from_static("Bearer realm=\"dbqueue\""),
    );
    if new_csrf {
        headers.append(
            header::SET_COOKIE,
            set_cookie(&app.csrf_cookie(), csrf, None),
        );
    }
    response
}

/// A form whose fields include the CSRF token.
pub(crate) trait CsrfForm {
    /// The token the form carried.
    fn csrf(&self) -> &str;
}

/// A POSTed form, accepted only with the right CSRF token (or from a request authenticated by
/// an `Authorization` header).
pub(crate) struct Posted<T>(pub(crate) T);

impl<S, T> FromRequest<S> for Posted<T>
where
    S: Send + Sync,
    T: DeserializeOwned + CsrfForm + Send,
{
    type Rejection = Response;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        let expected = req.extensions().get::<Csrf>().cloned();
        let by_header = req.extensions().get::<Auth>() == Some(&Auth::Bearer);
        let Form(form) = Form::<T>::from_request(req, state)
            .await
            .map_err(|e| (StatusCode::BAD_REQUEST, format!("bad form: {e}\n")).into_response())?;
        let ok =
            by_header || expected.is_some_and(|Csrf(expected)| same_secret(form.csrf(), &expected));
        if ok {
            Ok(Posted(form))
        } else {
            Err(plain(
                StatusCode::FORBIDDEN,
                "refused: the form's CSRF token is missing or stale; reload the page and try again\n",
            ))
        }
    }
}

/// The origin `next` is resolved against. Only the path and query of the result are ever sent
/// back, so the name stands for whichever host the browser reached the dashboard on; `.invalid`
/// is a name no site can have (RFC 2606).
const LOGIN_BASE: &str = "http://dashboard.invalid/";

/// Where to go after logging in: a page of this dashboard, never another site.
///
/// `next` is read as a browser reads a link on the dashboard: parsed as a URL reference by the
/// WHATWG rules (which drop tabs and newlines, and read `\` as `/`) and resolved against the
/// dashboard's origin. It is kept only when the result is on that origin, and then only its
/// path and query, as the parser serialises them (percent-encoded, so the value is always a valid
/// header value). A path that the parser normalised to begin with `//` (`/.//host`) is refused
/// too, since a browser would read that `Location` as another host. Anything else gives `/`.
pub(crate) fn local_path(next: &str) -> String {
    let Ok(base) = url::Url::parse(LOGIN_BASE) else {
        return "/".to_owned();
    };
    let Ok(target) = base.join(next) else {
        return "/".to_owned();
    };
    if target.origin() != base.origin() {
        return "/".to_owned();
    }
    let path = target.path();
    // Exactly one `/`, then anything but another slash: a path-absolute reference, which no
    // browser reads as a host.
    let one_slash = path.starts_with('/') && !matches!(path.as_bytes().get(1), Some(b'/' | b'\\'));
    if !one_slash {
        return "/".to_owned();
    }
    match target.query() {
        Some(query) => format!("{path}?{query}"),
        None => path.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn loopback_hosts_only() {
        let ok =
            |host: &'static str| host_allowed(&headers(&[("host", host)]), &HostPolicy::Loopback);
        assert!(ok("127.0.0.1:8787"));
        assert!(ok("localhost:8787"));
        assert!(ok("LOCALHOST"));
        assert!(ok("[::1]:8787"));
        assert!(ok("127.0.0.2"));
        assert!(!ok("evil.example:8787"));
        assert!(!ok("127.0.0.1.evil.example"));
        assert!(!ok("[::2]:80"));
        assert!(!host_allowed(&HeaderMap::new(), &HostPolicy::Loopback));
        assert!(host_allowed(
            &headers(&[("host", "db.internal")]),
            &HostPolicy::Any
        ));
    }

    #[test]
    fn cross_site_posts_are_recognised() {
        let same = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://127.0.0.1:8787"),
        ]);
        assert!(!cross_site(&same));
        let other_port = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "http://127.0.0.1:9999"),
        ]);
        assert!(cross_site(&other_port));
        let opaque = headers(&[("host", "127.0.0.1:8787"), ("origin", "null")]);
        assert!(cross_site(&opaque));
        let fetch_site = headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "same-site")]);
        assert!(cross_site(&fetch_site));
        let browser_form = headers(&[
            ("host", "127.0.0.1:8787"),
            ("origin", "null"),
            ("sec-fetch-site", "same-origin"),
        ]);
        assert!(
            !cross_site(&browser_form),
            "Sec-Fetch-Site decides where a browser sends it"
        );
        let typed = headers(&[("host", "127.0.0.1:8787"), ("sec-fetch-site", "none")]);
        assert!(!cross_site(&typed));
        assert!(
            !cross_site(&headers(&[("host", "127.0.0.1:8787")])),
            "curl sends neither"
        );
    }

    #[test]
    fn cookies_are_found_by_exact_name() {
        let h = headers(&[("cookie", "a_x=1; a=2"), ("cookie", "b=3")]);
        assert_eq!(cookie(&h, "a"), Some("2"));
        assert_eq!(cookie(&h, "b"), Some("3"));
        assert_eq!(cookie(&h, "c"), None);
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "abcd"));
        let t = random_token();
        assert_eq!(t.len(), 64);
        assert_ne!(t, random_token());
    }

    #[test]
    fn sessions_open_and_close() {
        let s = Sessions::default();
        let id = s.open();
        assert!(s.is_open(&id));
        assert!(!s.is_open("nope"));
        s.close(&id);
        assert!(!s.is_open(&id));
    }

    /// `next` as the login page's query string carries it, decoded as the handler gets it.
    fn from_query(encoded: &str) -> String {
        #[derive(serde::Deserialize)]
        struct Next {
            next: String,
        }
        let Next { next } = serde_urlencoded::from_str(&format!("next={encoded}")).unwrap();
        local_path(&next)
    }

    #[test]
    fn a_login_returns_to_pages_of_the_dashboard() {
        assert_eq!(local_path("/jobs?state=dead"), "/jobs?state=dead");
        assert_eq!(
            local_path("/jobs?queue=a&state=dead"),
            "/jobs?queue=a&state=dead"
        );
        assert_eq!(from_query("%2Fjobs%3Fstate%3Ddead"), "/jobs?state=dead");
        assert_eq!(local_path("/"), "/");
        assert_eq!(local_path(""), "/");
        assert_eq!(local_path("   "), "/");
        // Relative to the dashboard's root, as the login page's own links are.
        assert_eq!(local_path("jobs?state=dead"), "/jobs?state=dead");
        // A fragment is not sent to the server: dropped.
        assert_eq!(local_path("/jobs?state=dead#top"), "/jobs?state=dead");
        // Dot segments resolved, as the browser would.
        assert_eq!(local_path("/jobs/../search?q=a"), "/search?q=a");
    }

    #[test]
    fn control_characters_cannot_make_a_host_of_the_path() {
        for next in [
            "/\t/evil.example",
            "/\n/evil.example",
            "/\r/evil.example",
            "/\r\n/evil.example",
            "\t//evil.example",
            "/\t\t/evil.example",
            "/\t/\tevil.example",
        ] {
            assert_eq!(local_path(next), "/", "{next:?}");
        }
        for encoded in [
            "/%09/evil.example",
            "/%0A/evil.example",
            "/%0D/evil.example",
        ] {
            assert_eq!(from_query(encoded), "/", "{encoded}");
        }
    }

    #[test]
    fn other_hosts_and_schemes_are_refused() {
        for next in [
            "//evil.example",
            "//evil.example/",
            "/\\evil.example",
            "\\\\evil.example",
            "\\/evil.example",
            "/\\/evil.example",
            "https://evil.example/",
            "http://evil.example/jobs",
            "https:evil.example",
            "http:/\\evil.example",
            "javascript:alert(1)",
            "JavaScript:alert(document.cookie)",
            "data:text/html,<script>alert(1)</script>",
            "/.//evil.example",
            "/./\\evil.example",
            "/%2e//evil.example",
            "/jobs/..//evil.example",
        ] {
            assert_eq!(local_path(next), "/", "{next:?}");
        }
        // The parser removes the `.` segment and leaves the path `//evil.example`, which as a
        // `Location` would name a host: that is why the path's second character is checked.
        let base = url::Url::parse(LOGIN_BASE).unwrap();
        assert_eq!(
            base.join("/.//evil.example").unwrap().path(),
            "//evil.example"
        );
        // `%2F%2F` decoded from the query string is `//`.
        assert_eq!(from_query("%2F%2Fevil.example"), "/");
        assert_eq!(from_query("%5C%5Cevil.example"), "/");
        // One backslash is one slash: a path of this dashboard.
        assert_eq!(from_query("%5Cevil.example"), "/evil.example");
    }

    #[test]
    fn encoded_slashes_stay_in_the_path() {
        // Left encoded, `%2F` is part of a path segment; no browser reads it as a separator.
        assert_eq!(local_path("/%2F%2Fevil.example"), "/%2F%2Fevil.example");
        assert_eq!(local_path("%2F%2Fevil.example"), "/%2F%2Fevil.example");
        assert_eq!(local_path("/%5Cevil.example"), "/%5Cevil.example");
    }

    #[test]
    fn the_location_is_what_was_checked() {
        // The value sent is the parser's serialisation: what a browser reads back is the same
        // path, and it is always a valid header value.
        assert_eq!(local_path("/jobs/ a"), "/jobs/%20a");
        assert_eq!(local_path("/jobs?q=a b"), "/jobs?q=a%20b");
        assert_eq!(local_path("/a\\b"), "/a/b");
        assert_eq!(local_path("/caf\u{e9}"), "/caf%C3%A9");
        assert_eq!(local_path("/\u{0}x"), "/%00x");
        for next in [
            "/\t/evil.example",
            "/\n/evil.example",
            "/jobs/\u{7f}",
            "/\u{0}x",
            "/caf\u{e9}",
        ] {
            let location = local_path(next);
            assert!(
                HeaderValue::from_str(&location).is_ok(),
                "{next:?} gave {location:?}"
            );
            let bytes = location.as_bytes();
            assert_eq!(bytes[0], b'/', "{next:?} gave {location:?}");
            assert!(
                !matches!(bytes.get(1), Some(b'/' | b'\\')),
                "{next:?} gave {location:?}"
            );
        }
    }
}

//! The ECS task a router runs in, for its report ([`crate::report::Report::task`]): the
//! `TaskARN` of `$ECS_CONTAINER_METADATA_URI_V4/task`.
//!
//! The endpoint is the ECS agent on a link-local address, plain HTTP, so one HTTP/1.1 GET over
//! a `TcpStream` does, with a short timeout: the router crate gains no HTTP client. Any failure
//! is "no task" (the report says `null`), never an error of the router.

use std::io::{self, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

/// The variable ECS sets in every container (platform 1.4 and later on Fargate).
pub const URI_VAR: &str = "ECS_CONTAINER_METADATA_URI_V4";

/// Connecting, and each read and write, give up after this long.
pub const TIMEOUT: Duration = Duration::from_secs(2);

/// The most of an answer read: a task's metadata is a few kilobytes per container.
const MAX_ANSWER: u64 = 1 << 20;

/// A `TaskARN` longer than this is not one (an ARN is at most about 100 characters).
const MAX_ARN: usize = 512;

/// The `TaskARN` of the task at `$ECS_CONTAINER_METADATA_URI_V4`, when it is set and answers.
pub fn task_arn_from_env() -> Option<String> {
    let uri = std::env::var(URI_VAR).ok()?;
    task_arn(&uri).ok()
}

/// The `TaskARN` of `<uri>/task` (`uri`: `http://host[:port]/path`).
pub fn task_arn(uri: &str) -> io::Result<String> {
    let body = get(&format!("{}/task", uri.trim_end_matches('/')))?;
    #[derive(serde::Deserialize)]
    struct Task {
        #[serde(rename = "TaskARN")]
        task_arn: String,
    }
    let task: Task = serde_json::from_slice(&body).map_err(io::Error::other)?;
    if task.task_arn.is_empty() || task.task_arn.len() > MAX_ARN {
        return Err(io::Error::other("TaskARN empty or too long"));
    }
    Ok(task.task_arn)
}

/// The body of a 200 answer to `GET url` (`http://` only).
fn get(url: &str) -> io::Result<Vec<u8>> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidInput, format!("{url}: {why}"));
    let rest = url
        .strip_prefix("http://")
        .ok_or_else(|| bad("not http://"))?;
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    if authority.is_empty() || authority.contains(['@', ' ']) || path.contains([' ', '\r', '\n']) {
        return Err(bad("no host, or a character a request line cannot hold"));
    }
    let addr_text = if authority.contains(':') {
        authority.to_owned()
    } else {
        format!("{authority}:80")
    };
    let addr = addr_text
        .to_socket_addrs()?
        .next()
        .ok_or_else(|| bad("no address"))?;
    let mut stream = TcpStream::connect_timeout(&addr, TIMEOUT)?;
    stream.set_read_timeout(Some(TIMEOUT))?;
    stream.set_write_timeout(Some(TIMEOUT))?;
    // One write: the request in one segment.
    let request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: application/json\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let mut answer = Vec::new();
    stream.take(MAX_ANSWER).read_to_end(&mut answer)?;
    body_of(&answer)
}

/// The body of a whole HTTP/1.1 answer: status 200, `Content-Length`, chunked, or to the end.
fn body_of(answer: &[u8]) -> io::Result<Vec<u8>> {
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, why.to_owned());
    let end = find(answer, b"\r\n\r\n").ok_or_else(|| bad("no end of headers"))?;
    let head = std::str::from_utf8(&answer[..end]).map_err(|_| bad("headers not UTF-8"))?;
    let body = &answer[end + 4..];
    let mut lines = head.split("\r\n");
    let status = lines.next().unwrap_or_default();
    if status.split(' ').nth(1) != Some("200") {
        return Err(bad("status is not 200"));
    }
    let mut chunked = false;
    let mut length = None;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.eq_ignore_ascii_case("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().map_err(|_| bad("Content-Length"))?);
        }
    }
    if chunked {
        return dechunk(body);
    }
    match length {
        Some(n) if n <= body.len() => Ok(body[..n].to_vec()),
        Some(_) => Err(bad("body shorter than Content-Length")),
        None => Ok(body.to_vec()),
    }
}

/// A chunked body's bytes (extensions and trailers ignored).
fn dechunk(mut rest: &[u8]) -> io::Result<Vec<u8>> {
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "bad chunked body");
    let mut out = Vec::new();
    loop {
        let eol = find(rest, b"\r\n").ok_or_else(bad)?;
        let size_text = std::str::from_utf8(&rest[..eol]).map_err(|_| bad())?;
        let size_text = size_text.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_text, 16).map_err(|_| bad())?;
        rest = &rest[eol + 2..];
        if size == 0 {
            return Ok(out);
        }
        if rest.len() < size + 2 || &rest[size..size + 2] != b"\r\n" {
            return Err(bad());
        }
        out.extend_from_slice(&rest[..size]);
        rest = &rest[size + 2..];
    }
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    /// Serves one connection with `answer`; returns the endpoint's URI and the request read.
    fn serve_once(answer: &'static [u8]) -> (String, std::thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let server = std::thread::spawn(move || {
            let (mut conn, _) = listener.accept().unwrap();
            let mut request = Vec::new();
            let mut buf = [0u8; 1024];
            while find(&request, b"\r\n\r\n").is_none() {
                let n = conn.read(&mut buf).unwrap();
                assert_ne!(n, 0, "the request ended before its headers did");
                request.extend_from_slice(&buf[..n]);
            }
            conn.write_all(answer).unwrap();
            String::from_utf8(request).unwrap()
        });
        (format!("http://127.0.0.1:{port}/v4/abc-123"), server)
    }

    const ARN: &str = "arn:aws:ecs:us-east-1:111122223333:task/c/0123456789abcdef";

    #[test]
    fn reads_the_task_arn_with_a_content_length() {
        let (uri, server) = serve_once(
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 86\r\n\r\n\
              {\"Cluster\":\"c\",\"TaskARN\":\"arn:aws:ecs:us-east-1:111122223333:task/c/0123456789abcdef\"}",
        );
        assert_eq!(task_arn(&uri).unwrap(), ARN);
        let request = server.join().unwrap();
        assert!(
            request.starts_with("GET /v4/abc-123/task HTTP/1.1\r\n"),
            "{request}"
        );
        assert!(request.contains("\r\nHost: 127.0.0.1:"), "{request}");
    }

    #[test]
    fn reads_a_chunked_answer() {
        let (uri, server) = serve_once(
            b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\
              e\r\n{\"Cluster\":\"c\"\r\n\
              48;ext=1\r\n,\"TaskARN\":\"arn:aws:ecs:us-east-1:111122223333:task/c/0123456789abcdef\"}\r\n\
              0\r\n\r\n",
        );
        assert_eq!(task_arn(&uri).unwrap(), ARN);
        server.join().unwrap();
    }

    #[test]
    fn an_error_status_or_no_arn_is_no_task() {
        let (uri, server) = serve_once(b"HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\n{}");
        assert!(task_arn(&uri).is_err());
        server.join().unwrap();
        let (uri, server) = serve_once(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}");
        assert!(task_arn(&uri).is_err());
        server.join().unwrap();
        assert!(task_arn("https://127.0.0.1/v4").is_err());
    }
}

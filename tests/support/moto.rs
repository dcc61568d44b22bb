//! `moto_server` as a child process on 127.0.0.1: one per test, killed on drop. Or, when
//! `MOTO_ENDPOINT` is set (`http://HOST:PORT`), one already running there, reset for this test:
//! inside the NFS tier's VM, moto runs on the host (under TCG it takes ~80 s to start).

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long moto may take to answer after it starts (it needs ~0.7 s alone; tests run in
/// parallel; in the NFS tier's VM, which runs ~10x slower, about 10 s).
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `moto_server`. Dropping it kills the process (one this test started).
pub struct Moto {
    child: Option<Child>,
    host: String,
    port: u16,
}

impl Moto {
    /// Starts `moto_server -H 127.0.0.1 -p <free port>` and waits until it answers HTTP.
    pub fn start() -> Moto {
        if let Some(endpoint) = std::env::var("MOTO_ENDPOINT")
            .ok()
            .filter(|e| !e.is_empty())
        {
            return Moto::running_at(&endpoint);
        }
        let mut last_error = String::new();
        for _ in 0..3 {
            let port = free_port();
            let child = match Command::new("moto_server")
                .args(["-H", "127.0.0.1", "-p", &port.to_string()])
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
            {
                Ok(child) => child,
                Err(e) if e.kind() == ErrorKind::NotFound => panic!(
                    "moto_server is not on PATH; these tests need the AWS emulator: pip install \"moto[server]\""
                ),
                Err(e) => panic!("cannot start moto_server: {e}"),
            };
            let mut moto = Moto {
                child: Some(child),
                host: "127.0.0.1".into(),
                port,
            };
            match moto.wait_until_ready() {
                Ok(()) => return moto,
                Err(e) => last_error = e, // port taken by someone else in between: try another
            }
        }
        panic!("moto_server did not start: {last_error}");
    }

    /// The moto at `endpoint` (`http://HOST:PORT`), emptied of what earlier tests made.
    fn running_at(endpoint: &str) -> Moto {
        let (host, port) = endpoint
            .strip_prefix("http://")
            .and_then(|a| a.trim_end_matches('/').rsplit_once(':'))
            .and_then(|(h, p)| Some((h.to_string(), p.parse().ok()?)))
            .unwrap_or_else(|| panic!("MOTO_ENDPOINT={endpoint:?} is not http://HOST:PORT"));
        let mut moto = Moto {
            child: None,
            host,
            port,
        };
        moto.wait_until_ready()
            .unwrap_or_else(|e| panic!("MOTO_ENDPOINT={endpoint}: {e}"));
        let reset = request(&moto.host, port, "POST /moto-api/reset");
        assert!(
            reset
                .as_deref()
                .is_ok_and(|r| r.starts_with("HTTP/1.1 200") || r.starts_with("HTTP/1.0 200")),
            "MOTO_ENDPOINT={endpoint}: POST /moto-api/reset answered {reset:?}"
        );
        moto
    }

    /// `http://HOST:PORT`, for `AWS_ENDPOINT_URL` or an SDK config.
    pub fn endpoint(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < START_TIMEOUT {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(Child::try_wait) {
                return Err(format!("moto_server exited with {status}"));
            }
            if http_answers(&self.host, self.port) {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err(format!(
            "no answer on port {} within {START_TIMEOUT:?}",
            self.port
        ))
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A port that was free a moment ago on 127.0.0.1.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port on 127.0.0.1")
}

/// True when something on the port answers a plain HTTP request with a status line.
fn http_answers(host: &str, port: u16) -> bool {
    request(host, port, "GET /moto-api/").is_ok_and(|r| r.starts_with("HTTP/"))
}

/// The first bytes of the answer to `METHOD PATH` with no body.
fn request(host: &str, port: u16, line: &str) -> std::io::Result<String> {
    use std::io::{Read, Write};
    let mut stream = TcpStream::connect((host, port))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    let request = format!(
        "{line} HTTP/1.1\r\nHost: {host}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes())?;
    let mut head = [0u8; 64];
    let n = stream.read(&mut head)?;
    Ok(String::from_utf8_lossy(&head[..n]).into_owned())
}

//! `moto_server` as a child process on 127.0.0.1: one per test, killed on drop.

use std::io::ErrorKind;
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long moto may take to answer after it starts (it needs ~0.7 s alone; tests run in parallel).
const START_TIMEOUT: Duration = Duration::from_secs(30);

/// A running `moto_server`. Dropping it kills the process.
pub struct Moto {
    child: Child,
    port: u16,
}

impl Moto {
    /// Starts `moto_server -H 127.0.0.1 -p <free port>` and waits until it answers HTTP.
    pub fn start() -> Moto {
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
            let mut moto = Moto { child, port };
            match moto.wait_until_ready() {
                Ok(()) => return moto,
                Err(e) => last_error = e, // port taken by someone else in between: try another
            }
        }
        panic!("moto_server did not start: {last_error}");
    }

    /// `http://127.0.0.1:PORT`, for `AWS_ENDPOINT_URL` or an SDK config.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    fn wait_until_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        while started.elapsed() < START_TIMEOUT {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("moto_server exited with {status}"));
            }
            if http_answers(self.port) {
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
        let _ = self.child.kill();
        let _ = self.child.wait();
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
fn http_answers(port: u16) -> bool {
    use std::io::{Read, Write};
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request = "GET /moto-api/ HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut head = [0u8; 12];
    matches!(stream.read(&mut head), Ok(n) if n >= 5 && head.starts_with(b"HTTP/"))
}

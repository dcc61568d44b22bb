//! An ECS task metadata endpoint for every task at once: `GET /<task ARN>/task` answers that
//! ARN, as the endpoint ECS gives each container answers its own task's. A reporting router
//! given `<endpoint>/<ARN>` (`Reporting::metadata_uri`) names that task in its report.

use std::io::{Read, Write};
use std::net::TcpListener;
use std::thread;

/// Starts the endpoint on a thread of its own: its base address.
pub fn endpoint() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the metadata endpoint");
    let address = listener.local_addr().unwrap();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut request = [0u8; 4096];
            let n = stream.read(&mut request).unwrap_or(0);
            let text = String::from_utf8_lossy(&request[..n]);
            let path = text.split(' ').nth(1).unwrap_or("/");
            let arn = path
                .trim_start_matches('/')
                .trim_end_matches("/task")
                .to_string();
            let body = serde_json::json!({ "TaskARN": arn }).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://{address}")
}

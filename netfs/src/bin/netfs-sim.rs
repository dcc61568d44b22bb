//! netfs-sim: serves a local directory through FUSE as a network file system would cost.
//!
//!   netfs-sim --backing DIR --mount DIR [--rtt-ms 1] [--names-per-readdir 544]
//!             [--name-ttl-ms 0] [--dir-ttl-ms 1000] [--attr-ttl-ms 1000] [--threads 64]
//!             [--control SOCKET]
//!
//! Runs until SIGINT or SIGTERM, then unmounts. The counters: a line `stats` on the control
//! socket answers one JSON object of counts by kind, `reset` sets them to zero (answer `ok`),
//! `stats-reset` does both at once; SIGUSR1 prints them on stderr. Once mounted it prints
//! `mounted <dir>` on stdout.

use netfs::{NetFs, Options, Stats};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn usage() -> ! {
    eprintln!(
        "usage: netfs-sim --backing DIR --mount DIR [--rtt-ms F] [--names-per-readdir N] \
         [--name-ttl-ms F] [--dir-ttl-ms F] [--attr-ttl-ms F] [--threads N] [--control SOCKET]"
    );
    std::process::exit(2)
}

fn millis(v: &str) -> Duration {
    match v.parse::<f64>() {
        Ok(ms) if ms >= 0.0 && ms.is_finite() => Duration::from_secs_f64(ms / 1000.0),
        _ => usage(),
    }
}

fn main() {
    let mut opts = Options::default();
    let (mut backing, mut mount, mut control) = (None, None, None);
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage());
        match flag.as_str() {
            "--backing" => backing = Some(PathBuf::from(value)),
            "--mount" => mount = Some(PathBuf::from(value)),
            "--control" => control = Some(PathBuf::from(value)),
            "--rtt-ms" => opts.round_trip = millis(&value),
            "--name-ttl-ms" => opts.name_ttl = millis(&value),
            "--dir-ttl-ms" => opts.dir_ttl = millis(&value),
            "--attr-ttl-ms" => opts.attr_ttl = millis(&value),
            "--names-per-readdir" => {
                opts.names_per_readdir = value.parse().unwrap_or_else(|_| usage())
            }
            "--threads" => opts.threads = value.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    let (Some(backing), Some(mount)) = (backing, mount) else {
        usage()
    };

    // Signals are taken by sigwait in this thread: block them before any thread starts.
    // SAFETY: plain signal-mask calls on a set we own.
    let set = unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGINT, libc::SIGTERM, libc::SIGUSR1, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    };

    let mut fs = match NetFs::try_mount(&backing, &mount, opts.clone()) {
        Ok(fs) => fs,
        Err(e) => {
            eprintln!("netfs-sim: {e}");
            std::process::exit(1)
        }
    };
    eprintln!(
        "netfs-sim: {} served at {} (round trip {:?}, {} names per READDIR, name ttl {:?}, dir ttl {:?}, attr ttl {:?}, {} threads)",
        backing.display(),
        fs.mountpoint().display(),
        opts.round_trip,
        opts.names_per_readdir,
        opts.name_ttl,
        opts.dir_ttl,
        opts.attr_ttl,
        opts.threads
    );
    if let Some(path) = &control {
        let _ = std::fs::remove_file(path);
        let listener = UnixListener::bind(path).unwrap_or_else(|e| {
            eprintln!("netfs-sim: control socket {}: {e}", path.display());
            std::process::exit(1)
        });
        let stats = fs.stats().clone();
        std::thread::spawn(move || serve_control(listener, stats));
    }
    println!("mounted {}", fs.mountpoint().display());
    let _ = std::io::stdout().flush();

    loop {
        let mut sig: libc::c_int = 0;
        // SAFETY: waits on the set blocked above.
        unsafe { libc::sigwait(&set, &mut sig) };
        if sig == libc::SIGUSR1 {
            eprintln!("{}", fs.counts().to_json());
            continue;
        }
        break;
    }
    if let Some(path) = &control {
        let _ = std::fs::remove_file(path);
    }
    if let Err(e) = fs.unmount() {
        eprintln!("netfs-sim: {e}");
        std::process::exit(1)
    }
}

fn serve_control(listener: UnixListener, stats: Arc<Stats>) {
    for conn in listener.incoming().flatten() {
        let stats = stats.clone();
        std::thread::spawn(move || {
            let mut out = match conn.try_clone() {
                Ok(c) => c,
                Err(_) => return,
            };
            for line in BufReader::new(conn).lines() {
                let Ok(line) = line else { return };
                let answer = match line.trim() {
                    "stats" => stats.snapshot().to_json(),
                    "reset" => {
                        stats.reset();
                        "ok".to_owned()
                    }
                    "stats-reset" => {
                        let s = stats.snapshot().to_json();
                        stats.reset();
                        s
                    }
                    other => format!("{{\"error\":\"unknown command {other:?}\"}}"),
                };
                if writeln!(out, "{answer}").is_err() {
                    return;
                }
            }
        });
    }
}

//! `jobs serve`: the real binary serving the dashboard, fetched over plain HTTP/1.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use jobs::{JobStatus, Operations};
use serde_json::Value;

use super::{assert_fails, run, Kind, Store};

/// How long the server may take to listen, to answer or to exit.
const DEADLINE: Duration = Duration::from_secs(20);

/// A running `jobs serve`, killed on drop if still running.
struct Served {
    child: Child,
    /// `127.0.0.1:PORT`, from the line it printed.
    addr: String,
}

impl Served {
    /// Starts `jobs --url url serve --bind 127.0.0.1:0 extra…` and waits for its line.
    fn start(url: &str, extra: &[&str]) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_jobs"))
            .env_remove("JOBS_URL")
            .args(["--url", url, "serve", "--bind", "127.0.0.1:0"])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run jobs serve");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let mut served = Served {
            child,
            addr: String::new(),
        };
        let line = rx
            .recv_timeout(DEADLINE)
            .unwrap_or_else(|_| panic!("jobs serve printed nothing within {DEADLINE:?}"));
        served.addr = line
            .strip_prefix("serving the dashboard on http://")
            .and_then(|rest| rest.strip_suffix("/\n"))
            .unwrap_or_else(|| panic!("not the serving line: {line:?}"))
            .to_string();
        served
    }

    /// `GET path`: the status and the body.
    fn get(&self, path: &str) -> (u16, String) {
        self.request(&format!("GET {path} HTTP/1.1\r\n"), "")
    }

    /// `POST path` with no body and `x-csrf-token: token`.
    fn post(&self, path: &str, token: &str) -> (u16, String) {
        let head =
            format!("POST {path} HTTP/1.1\r\ncontent-length: 0\r\nx-csrf-token: {token}\r\n");
        self.request(&head, "")
    }

    /// The dashboard's CSRF token, from `api/csrf`.
    fn token(&self) -> String {
        let (status, body) = self.get("/api/csrf");
        assert_eq!(status, 200, "{body}");
        json(&body)["token"].as_str().expect("a token").to_string()
    }

    /// Sends `head` (request line and headers) and `body` on a new connection that the
    /// server closes after answering; the status and the body.
    fn request(&self, head: &str, body: &str) -> (u16, String) {
        let mut stream = TcpStream::connect(&self.addr).expect("connect to jobs serve");
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let request = format!(
            "{head}host: {}\r\nconnection: close\r\n\r\n{body}",
            self.addr
        );
        stream.write_all(request.as_bytes()).unwrap();
        let mut response = String::new();
        stream
            .read_to_string(&mut response)
            .expect("a whole response");
        let (headers, body) = response
            .split_once("\r\n\r\n")
            .unwrap_or_else(|| panic!("no end of headers: {response:?}"));
        assert!(
            !headers.to_ascii_lowercase().contains("transfer-encoding"),
            "a body of a known length: {headers}"
        );
        let status = headers
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or_else(|| panic!("no status: {headers}"));
        (status, body.to_string())
    }

    /// Opens the event stream `api/events` and reads the start of its answer: a connection
    /// that stays open until the server ends it.
    fn listen(&self) -> TcpStream {
        let mut stream = TcpStream::connect(&self.addr).expect("connect to jobs serve");
        stream.set_read_timeout(Some(DEADLINE)).unwrap();
        let request = format!("GET /api/events HTTP/1.1\r\nhost: {}\r\n\r\n", self.addr);
        stream.write_all(request.as_bytes()).unwrap();
        let mut start = [0; 12];
        stream
            .read_exact(&mut start)
            .expect("the stream's status line");
        assert_eq!(&start, b"HTTP/1.1 200");
        stream
    }

    /// Sends SIGTERM and waits for a clean exit.
    fn terminate(mut self) {
        let signalled = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(signalled.success());
        let until = Instant::now() + DEADLINE;
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "SIGTERM ends it cleanly: {status}");
                return;
            }
            assert!(
                Instant::now() < until,
                "jobs serve still running {DEADLINE:?} after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn json(body: &str) -> Value {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
}

/// The overview and `api/queues` over HTTP; a read-only server refuses a retry with 403 and
/// changes nothing; the full one retries; SIGTERM stops both.
fn serve_the_dashboard(s: Store) {
    s.mail("a@example.com");
    let dead = s.kill_next("email");

    let full = Served::start(&s.url, &[]);
    let (status, page) = full.get("/");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains(r#"data-page="overview""#), "{page}");
    assert!(page.contains(r#"<tr data-queue="email""#), "{page}");
    let (status, queues) = full.get("/api/queues");
    assert_eq!(status, 200, "{queues}");
    let queues = json(&queues);
    assert_eq!(queues[0]["name"], "email", "{queues}");
    assert_eq!(queues[0]["counts"]["dead"], 1, "{queues}");

    let read_only = Served::start(&s.url, &["--read-only"]);
    let (status, page) = read_only.get("/");
    assert_eq!(status, 200, "{page}");
    assert!(!page.contains("<button"), "no actions: {page}");
    let retry = format!("/api/jobs/{dead}/retry");
    let (status, body) = read_only.post(&retry, &read_only.token());
    assert_eq!(status, 403, "{body}");
    assert_eq!(
        s.status(dead),
        JobStatus::Dead,
        "the refused retry changed nothing"
    );
    // An open event stream does not hold the shutdown back for long.
    let stream = read_only.listen();
    read_only.terminate();
    drop(stream);

    let (status, body) = full.post(&retry, &full.token());
    assert_eq!(status, 200, "{body}");
    assert_eq!(s.status(dead), JobStatus::Pending);
    let counts = s.block(s.backend.queues()).unwrap()[0].counts;
    assert_eq!((counts.pending, counts.dead), (1, 0));
    full.terminate();
}

on_both!(serve_the_dashboard, serve_pg, serve_redis);

#[test]
fn serve_refuses_a_bad_address_and_a_port_in_use() {
    assert_fails(
        &run("memory://", &["serve", "--bind", "localhost"]),
        2,
        "invalid value 'localhost' for '--bind <IP:PORT>'",
    );
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    assert_fails(
        &run("memory://", &["serve", "--bind", &addr]),
        3,
        &format!("cannot listen on {addr}: "),
    );
}

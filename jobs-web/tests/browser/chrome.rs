//! Headless Chromium through a chromedriver of the test's own, on a free loopback port, and the
//! waits, reads and screenshots the scenarios use. Both processes die with the [`Browser`],
//! however the test ends.

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fantoccini::elements::Element;
use fantoccini::{Client, ClientBuilder, Locator};
use hyper_util::client::legacy::connect::HttpConnector;
use serde_json::{json, Value};

/// How long any wait lasts before the test fails.
pub(crate) const DEADLINE: Duration = Duration::from_secs(20);
/// How long a whole scenario may take before the test fails.
pub(crate) const SCENARIO: Duration = Duration::from_secs(180);
/// The browser window's size: a laptop's screen.
const WIDTH: u32 = 1366;
const HEIGHT: u32 = 900;
/// How often a wait looks again.
const POLL: Duration = Duration::from_millis(100);

fn chromium() -> String {
    std::env::var("JOBS_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into())
}

fn chromedriver() -> String {
    std::env::var("JOBS_TEST_CHROMEDRIVER").unwrap_or_else(|_| "/usr/bin/chromedriver".into())
}

/// A chromedriver process, in a process group of its own with the browser it starts; the
/// whole group is killed on drop.
struct Driver {
    child: Child,
    port: u16,
    /// The browser's profile, removed on drop.
    profile: PathBuf,
}

impl Driver {
    async fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let profile =
            std::env::temp_dir().join(format!("jobs-web-browser-{}", uuid::Uuid::new_v4()));
        let child = {
            use std::os::unix::process::CommandExt;
            Command::new(chromedriver())
                .arg(format!("--port={port}"))
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .process_group(0)
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {}: {e}", chromedriver()))
        };
        let driver = Driver {
            child,
            port,
            profile,
        };
        let until = Instant::now() + DEADLINE;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                Instant::now() < until,
                "chromedriver did not listen on port {port} within {DEADLINE:?}"
            );
            tokio::time::sleep(POLL).await;
        }
        driver
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill")
            .args(["-KILL", "--", &group])
            .stderr(Stdio::null())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A headless Chromium session, with the dashboard's origin to open paths on and a name to
/// file its screenshots under.
pub(crate) struct Browser {
    client: Client,
    origin: String,
    shots: String,
    // Dropped last: kills chromedriver and the browser.
    _driver: Driver,
}

impl Browser {
    /// A new browser on a new chromedriver, opening paths on `origin` (`http://127.0.0.1:PORT`)
    /// and saving screenshots as `target/screenshots/{shots}-{page}.png`.
    pub(crate) async fn start(origin: &str, shots: &str) -> Self {
        let driver = Driver::start().await;
        let capabilities = json!({
            "browserName": "chrome",
            // Leave any alert open, so that a test can see that none was.
            "unhandledPromptBehavior": "ignore",
            "timeouts": { "pageLoad": DEADLINE.as_millis(), "script": DEADLINE.as_millis() },
            "goog:chromeOptions": {
                "binary": chromium(),
                "args": [
                    "--headless=new",
                    "--no-sandbox",
                    "--disable-gpu",
                    format!("--window-size={WIDTH},{HEIGHT}"),
                    "--disable-dev-shm-usage",
                    format!("--user-data-dir={}", driver.profile.display()),
                ],
            },
        });
        let Value::Object(capabilities) = capabilities else {
            unreachable!("an object")
        };
        let client = tokio::time::timeout(
            DEADLINE,
            ClientBuilder::new(HttpConnector::new())
                .capabilities(capabilities)
                .connect(&format!("http://127.0.0.1:{}", driver.port)),
        )
        .await
        .unwrap_or_else(|_| panic!("no browser session within {DEADLINE:?}"))
        .expect("a browser session");
        Browser {
            client,
            origin: origin.trim_end_matches('/').to_string(),
            shots: shots.to_string(),
            _driver: driver,
        }
    }

    /// Opens `path` (absolute, with the prefix) on the dashboard's origin.
    pub(crate) async fn open(&self, path: &str) {
        let url = format!("{}{path}", self.origin);
        self.client
            .goto(&url)
            .await
            .unwrap_or_else(|e| panic!("open {url}: {e}"));
    }

    /// The path (and query) of the page shown.
    pub(crate) async fn path(&self) -> String {
        let url = self.client.current_url().await.expect("the current URL");
        match url.query() {
            Some(query) => format!("{}?{query}", url.path()),
            None => url.path().to_string(),
        }
    }

    /// Waits until the page shown is `page` (its `main#page[data-page]`).
    pub(crate) async fn wait_page(&self, page: &str) {
        self.find(&format!(r#"main#page[data-page="{page}"]"#))
            .await;
    }

    /// Waits until the path and query of the page shown contain `part`.
    pub(crate) async fn wait_path(&self, part: &str) {
        let until = Instant::now() + DEADLINE;
        loop {
            let path = self.path().await;
            if path.contains(part) {
                return;
            }
            assert!(
                Instant::now() < until,
                "at {path}, not at a path with {part:?}, after {DEADLINE:?}"
            );
            tokio::time::sleep(POLL).await;
        }
    }

    /// The element `css` selects, waiting for it.
    pub(crate) async fn find(&self, css: &str) -> Element {
        let found = self
            .client
            .wait()
            .at_most(DEADLINE)
            .every(POLL)
            .for_element(Locator::Css(css))
            .await;
        match found {
            Ok(element) => element,
            Err(e) => panic!(
                "no `{css}` on {} within {DEADLINE:?}: {e}",
                self.describe().await
            ),
        }
    }

    /// Every element `css` selects now (no wait).
    pub(crate) async fn all(&self, css: &str) -> Vec<Element> {
        self.client
            .find_all(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("find `{css}`: {e}"))
    }

    /// The text of the element `css` selects, trimmed.
    pub(crate) async fn text(&self, css: &str) -> String {
        let element = self.find(css).await;
        element.text().await.expect("its text").trim().to_string()
    }

    /// Clicks the element `css` selects.
    pub(crate) async fn click(&self, css: &str) {
        let element = self.find(css).await;
        element
            .click()
            .await
            .unwrap_or_else(|e| panic!("click `{css}`: {e}"));
    }

    /// Replaces the value of the input `css` selects with `value`.
    pub(crate) async fn fill(&self, css: &str, value: &str) {
        let input = self.find(css).await;
        input.clear().await.expect("clear the input");
        input.send_keys(value).await.expect("type in the input");
    }

    /// Waits until the text of `css` is `expected`, without reloading.
    pub(crate) async fn wait_text(&self, css: &str, expected: &str) {
        let until = Instant::now() + DEADLINE;
        let mut seen = String::new();
        while Instant::now() < until {
            if let Ok(element) = self.client.find(Locator::Css(css)).await {
                seen = element.text().await.unwrap_or_default().trim().to_string();
                if seen == expected {
                    return;
                }
            }
            tokio::time::sleep(POLL).await;
        }
        panic!(
            "`{css}` says {seen:?}, not {expected:?}, after {DEADLINE:?} on {}",
            self.describe().await
        );
    }

    /// Reloads the page until `css` selects `n` elements.
    pub(crate) async fn reload_until_count(&self, css: &str, n: usize) {
        let until = Instant::now() + DEADLINE;
        loop {
            let found = self.all(css).await.len();
            if found == n {
                return;
            }
            assert!(
                Instant::now() < until,
                "{found} `{css}`, not {n}, after {DEADLINE:?} on {}",
                self.describe().await
            );
            tokio::time::sleep(POLL * 3).await;
            self.client.refresh().await.expect("reload");
        }
    }

    /// Runs `script` (a function body) in the page with `args`; its return value.
    pub(crate) async fn script(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Runs the async `script` in the page, which calls `arguments[arguments.length - 1]`
    /// with its result.
    pub(crate) async fn script_async(&self, script: &str, args: Vec<Value>) -> Value {
        self.client
            .execute_async(script, args)
            .await
            .unwrap_or_else(|e| panic!("script failed: {e}\n{script}"))
    }

    /// Panics if an alert (or another prompt) is open.
    pub(crate) async fn assert_no_alert(&self) {
        if let Ok(text) = self.client.get_alert_text().await {
            panic!(
                "an alert opened saying {text:?} on {}",
                self.describe().await
            );
        }
    }

    /// Saves the whole page (the window made as tall as the page for the shot) as
    /// `target/screenshots/{shots}-{name}.png`.
    pub(crate) async fn screenshot(&self, name: &str) {
        let sizes = self
            .script(
                "return [document.documentElement.scrollHeight, window.outerHeight - window.innerHeight];",
                vec![],
            )
            .await;
        let height = |i: usize| sizes[i].as_u64().and_then(|h| u32::try_from(h).ok());
        let tall = match (height(0), height(1)) {
            (Some(page), Some(chrome)) => (page + chrome).max(HEIGHT),
            _ => HEIGHT,
        };
        self.client
            .set_window_size(WIDTH, tall)
            .await
            .expect("resize the window");
        let png = self.client.screenshot().await.expect("a screenshot");
        self.client
            .set_window_size(WIDTH, HEIGHT)
            .await
            .expect("resize the window back");
        let dir = screenshots_dir();
        std::fs::create_dir_all(&dir).expect("the screenshots' directory");
        let file = dir.join(format!("{}-{name}.png", self.shots));
        std::fs::write(&file, png).unwrap_or_else(|e| panic!("write {}: {e}", file.display()));
    }

    /// Ends the session: the browser quits (the driver dies on drop).
    pub(crate) async fn close(self) {
        let Browser {
            client, _driver, ..
        } = self;
        let _ = tokio::time::timeout(DEADLINE, client.close()).await;
    }

    /// Where the browser is, for failure messages.
    async fn describe(&self) -> String {
        let url = self
            .client
            .current_url()
            .await
            .map_or_else(|e| format!("(no URL: {e})"), |u| u.to_string());
        let main = match self.client.find(Locator::Css("main")).await {
            Ok(main) => main.text().await.unwrap_or_default(),
            Err(_) => String::new(),
        };
        format!("{url}, showing:\n{main}")
    }
}

/// `target/screenshots` of the workspace (or of `CARGO_TARGET_DIR`).
pub(crate) fn screenshots_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"));
    target.join("screenshots")
}

//! What the tests of `mmsched serve --models` share: the server on a free port in a
//! directory of its own, and test media made by tools other than mmsched (a sign rendered
//! by ffmpeg, a sentence spoken by espeak-ng).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// A running `mmsched serve --models`, killed when dropped.
pub struct Server {
    pub child: Child,
    pub url: String,
    /// The server's working directory, where a run without `--report` writes its report
    /// (`mmsched-report/serve`): not the source tree.
    _cwd: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `mmsched serve --models` with `extra` flags on a free port, and reads its URL
/// from the JSON startup line.
pub fn serve(extra: &[&str]) -> Server {
    let cwd = tempfile::tempdir().expect("tempdir");
    let mut child = Command::new(env!("CARGO_BIN_EXE_mmsched"))
        .current_dir(cwd.path())
        .args(["serve", "--models", "--addr", "127.0.0.1:0", "--json"])
        .args(extra)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("the binary starts");
    let stdout = child.stdout.take().expect("stdout");
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .expect("a startup line");
    let v: serde_json::Value = serde_json::from_str(&line)
        .unwrap_or_else(|e| panic!("startup line is not JSON ({e}): {line:?}"));
    let url = v["url"].as_str().expect("url").to_string();
    Server {
        child,
        url,
        _cwd: cwd,
    }
}

/// `text` spoken by espeak-ng into `dir/speech.wav`.
pub fn speak(dir: &Path, text: &str) -> PathBuf {
    let wav = dir.join("speech.wav");
    let ok = Command::new("espeak-ng")
        .args(["-s", "150", "-w"])
        .arg(&wav)
        .arg(text)
        .status()
        .expect("espeak-ng runs (scripts/setup.sh installs it)");
    assert!(ok.success());
    wav
}

/// The font ffmpeg's drawtext renders with (Debian package `fonts-dejavu-core`).
const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Renders `text` on a white 640×360 PNG with ffmpeg's drawtext (not mmsched's renderer).
pub fn render_sign(path: &Path, text: &str) {
    render(
        path,
        &format!(
            "drawtext=fontfile={FONT}:text='{text}':fontsize=72:fontcolor=black:x=(w-tw)/2:y=(h-th)/2"
        ),
    );
}

/// Renders `lines` (no `:` in them: the filter syntax splits on it) top to bottom at 20 px
/// on a white 640×360 PNG, then applies `after` (ffmpeg filters, e.g. `,hflip,vflip` to
/// turn the page half round). (Not every test binary that includes this file uses it.)
#[allow(dead_code)]
pub fn render_page(path: &Path, lines: &[&str], after: &str) {
    let text: Vec<String> = lines
        .iter()
        .enumerate()
        .map(|(i, l)| {
            format!(
                "drawtext=fontfile={FONT}:text='{l}':fontsize=20:fontcolor=black:x=40:y={}",
                30 + 30 * i
            )
        })
        .collect();
    render(path, &format!("{}{after}", text.join(",")));
}

/// One white 640×360 frame through ffmpeg's `filters`, written to `path`.
fn render(path: &Path, filters: &str) {
    let ok = Command::new("ffmpeg")
        .args([
            "-hide_banner",
            "-loglevel",
            "error",
            "-y",
            "-f",
            "lavfi",
            "-i",
        ])
        .arg("color=c=white:s=640x360")
        .arg("-vf")
        .arg(filters)
        .args(["-frames:v", "1"])
        .arg(path)
        .status()
        .expect("ffmpeg runs (scripts/setup.sh installs it)");
    assert!(ok.success());
}

/// The Python of the virtual environment `venv` in the model cache, which
/// `scripts/setup.sh` fills with `what`.
pub fn venv_python(venv: &str, what: &str) -> PathBuf {
    let python = mmsched_models::cache_dir().join(venv).join("bin/python");
    assert!(
        python.is_file(),
        "{} is missing: run scripts/setup.sh (it installs {what} there)",
        python.display()
    );
    python
}

/// A client's standard output: one `key value` line per check.
pub struct Lines(pub String);

impl Lines {
    /// The value of the line `key` (fails the test if there is none).
    pub fn get(&self, key: &str) -> String {
        self.0
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{key} ")))
            .unwrap_or_else(|| panic!("no {key} line in {}", self.0))
            .to_string()
    }
}

/// Runs `python` with `args`, failing the test if it fails; its output's lines.
pub fn run_client(python: &Path, args: &[&str]) -> Lines {
    let out = Command::new(python)
        .args(args)
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "client failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprintln!("{stdout}");
    Lines(stdout)
}

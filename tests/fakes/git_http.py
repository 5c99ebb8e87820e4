"""Git's smart HTTP protocol on loopback, as a forge serves it: `git http-backend` behind HTTP Basic auth.

`GitHTTP(root, user, token)` serves the bare repositories under `root` at `{url}/NAME.git` and answers
401 to any request without `Authorization: Basic base64(user:token)`; `authorized` / `refused` count the
requests, so a test sees that git really sent the credential.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType

BACKEND = Path(subprocess.run(["git", "--exec-path"], capture_output=True, text=True).stdout.strip() or "/")
BACKEND = BACKEND / "git-http-backend"


def available() -> bool:
    return shutil.which("git") is not None and BACKEND.is_file()


class GitHTTP:
    def __init__(self, root: Path, user: str, token: str) -> None:
        self.root = root
        self.authorized = 0
        self.refused = 0
        wanted = "Basic " + base64.b64encode(f"{user}:{token}".encode()).decode()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                return None

            def _cgi(self) -> None:
                if self.headers.get("Authorization") != wanted:
                    fake.refused += 1
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                fake.authorized += 1
                path, _, query = self.path.partition("?")
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                env = {
                    "GIT_PROJECT_ROOT": str(fake.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "PATH_INFO": path,
                    "QUERY_STRING": query,
                    "REQUEST_METHOD": self.command,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
                    "REMOTE_USER": user,
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                }
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                out = subprocess.run([str(BACKEND)], input=body, env=env, capture_output=True).stdout
                head, _, payload = out.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    key, _, value = line.partition(": ")
                    if key.lower() == "status":
                        status = int(value.split()[0])
                    elif key:
                        headers.append((key, value))
                self.send_response(status)
                for key, value in headers:
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            do_GET = do_POST = _cgi

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> GitHTTP:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._server.shutdown()
        self._server.server_close()

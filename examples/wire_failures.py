"""What a request that fails on the way is raised as: one ``RequestError`` whose class says
whether it may have been applied, whatever the endpoint sends back. A few misbehaving
loopback endpoints (an HTML page from a proxy, a cut answer, a refused connection) are
asked once each through dynaorm's own wire, after a normal save and read on the backend.

Run: ``python examples/wire_failures.py [--endpoint-url URL]``
"""

from __future__ import annotations

import socket
import threading

from _support import run, show

from dynaorm import (
    AnswerLostError,
    BadAnswerError,
    Client,
    Entity,
    RequestError,
    RequestNotSentError,
    Table,
)

notes = Table("dynaorm-example-wire")


class Note(Entity):
    class Meta:
        table = notes
        pk = "NOTE#{note_id}"
        sk = "NOTE"

    note_id: str
    text: str = ""


def endpoint(answer: bytes) -> str:
    """A loopback endpoint that reads each request whole, sends ``answer`` and closes."""
    listener = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            conn, _ = listener.accept()
            with conn:
                data = b""
                while b"\r\n\r\n" not in data:
                    data += conn.recv(65536)
                head, _, body = data.partition(b"\r\n\r\n")
                length = next(int(line.split(b":")[1]) for line in head.split(b"\r\n")
                              if line.lower().startswith(b"content-length:"))
                while len(body) < length:
                    body += conn.recv(65536)
                conn.sendall(answer)

    threading.Thread(target=serve, daemon=True).start()
    return f"http://127.0.0.1:{listener.getsockname()[1]}"


def refused() -> str:
    """An endpoint where nothing listens."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    return f"http://127.0.0.1:{port}"


HTML = b"<html>Welcome to the corporate proxy</html>"
ENDPOINTS = {
    "a 200 HTML page from a proxy": lambda: endpoint(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n%s"
        % (len(HTML), HTML)),
    "an answer cut in the middle": lambda: endpoint(
        b"HTTP/1.1 200 OK\r\nContent-Length: 40\r\n\r\n{\"Item\": {"),
    "a 503 page from a load balancer": lambda: endpoint(
        b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n"),
    "nothing listening": refused,
}


def main() -> None:
    with run(notes, "a request that fails on the way: one RequestError that says what "
             "is known") as db:
        s = db.session()
        s.save(Note(note_id="n1", text="hello"))
        s.commit()
        show("db.session().get(Note, note_id='n1').text",
             [db.session().get(Note, note_id="n1").text])  # type: ignore[union-attr]

    # (dynaorm's own wire, on a client of each endpoint; one attempt, no retry)
    for title, make in ENDPOINTS.items():
        with Client(make(), "us-east-1", max_attempts=1) as client:
            try:
                client.send("GetItem", {"TableName": notes.name,
                                        "Key": {"pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}}})
            except RequestError as error:
                kinds = (RequestNotSentError, AnswerLostError, BadAnswerError)
                kind = next((k.__name__ for k in kinds if isinstance(error, k)),
                            "RequestError")
                show(f"{title}: error class, code, maybe_applied",
                     [(kind, error.code, error.maybe_applied)])


if __name__ == "__main__":
    main()
